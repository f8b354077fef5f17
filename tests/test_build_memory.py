"""Bounded build memory: extraction lets each page go once its chunks exist, and the caches hand out
tokens and vectors in batches, with the same chunks, tokens and vectors as reading everything at once."""

import gc
import weakref
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from knowledge_build import load_config, pipeline
from knowledge_build.chunking.chunks import (
    ChunkSet,
    _chunk,
    _page_meta,
    labels_of,
    part_chunk,
    wanted_parts,
)
from knowledge_build.embed import runner
from knowledge_build.embed.cache import VectorCache
from knowledge_build.text.token_cache import TokenCache, analyze_batches, analyze_cached

from .conftest import FakeEmbedder

SITE = Path(__file__).parent.parent / "site"


def _whole_site_chunks(site, pages, sections) -> ChunkSet:
    """The chunk rules applied with every page in hand (how make_chunks read the site before it
    streamed): the oracle the page-at-a-time extraction must equal."""
    result = ChunkSet()
    labels = labels_of(Counter(t for page in pages for e in page.elements for t in e.bold_terms))
    for page in pages:
        parts = wanted_parts(page.parts, sections)
        meta = _page_meta(site, page, result.diagnostics)
        result.chunks += [_chunk(site, page, e, meta, labels) for e in page.elements]
        result.chunks += [part_chunk(site, page, part, meta) for part in parts]
    result.chunks.sort(key=lambda c: c.id)
    return result


def _assert_streaming_equals_whole_site(config):
    kept = pipeline.extract(config)
    streamed = pipeline.extract(config, keep_pages=False)
    oracle = _whole_site_chunks(kept.site, kept.pages, config.sections)
    assert streamed.pages == [] and kept.pages
    assert [c.to_dict() for c in streamed.chunks] == [c.to_dict() for c in oracle.chunks]
    assert [c.to_dict() for c in kept.chunks] == [c.to_dict() for c in oracle.chunks]
    page_diagnostics = [d for p in kept.pages for d in p.diagnostics]
    assert streamed.diagnostics == kept.site.diagnostics + page_diagnostics + oracle.diagnostics
    return streamed


@pytest.mark.parametrize("sections", ["off", "unanchored", "all"])
def test_extraction_without_pages_gives_the_project_site_the_same_chunks_and_diagnostics(sections):
    streamed = _assert_streaming_equals_whole_site(load_config(site=SITE, sections=sections, env={}))
    assert len(streamed.chunks) > 20


def _write(root: Path, rel: str, body: str, title: str = "教材") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {title}\nlevel: 謎\n---\n{body}", encoding="utf-8")


def test_pages_of_one_file_name_in_other_folders_each_keep_their_chunks(tmp_path):
    (tmp_path / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    _write(tmp_path, "a/x.html", "<h2>節の見出し</h2><p>節の本文です。</p>")
    _write(tmp_path, "b/x.html", '<div class="rule-box" id="rule-one"><strong>規則</strong><p>本文。</p></div>')
    _write(tmp_path, "c/x.html", "<h2>別の見出し</h2><p>別の本文です。</p>")
    streamed = _assert_streaming_equals_whole_site(load_config(site=tmp_path, env={}))
    assert {(c.material, c.source_path) for c in streamed.chunks} == {
        ("a/x", "a/x.html"), ("b/x", "b/x.html"), ("c/x", "c/x.html")}
    levels = [Path(d.path).parent.name for d in streamed.diagnostics if d.rule == "unknown-level"]
    assert levels == ["a", "b", "c"]


def test_bold_words_of_boxes_on_later_pages_make_a_label_for_an_earlier_box(tmp_path):
    (tmp_path / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    for n, name in enumerate(["p1", "p2", "p3"]):
        _write(tmp_path, f"{name}.html", f'<div class="rule-box" id="rule-r{n}"><strong>規則{n}</strong>'
                                         f"<p><strong>解き方</strong>と<strong>用語{n}</strong></p></div>")
    streamed = _assert_streaming_equals_whole_site(load_config(site=tmp_path, sections="off", env={}))
    first = next(c for c in streamed.chunks if c.material == "p1")
    assert first.learns == ("用語0",)  # 解き方 is in three boxes: a label, though two come after this one


def test_the_build_lets_each_page_go_once_its_chunks_exist(site_dir, monkeypatch):
    alive = []
    most = [0]
    real = pipeline.scan_page

    def scan_and_count(*args, **kwargs):
        living = sum(ref() is not None for ref in alive)
        if living > 1:  # only then can a collection change the count (it frees, never keeps); a full one is slow
            gc.collect()
            living = sum(ref() is not None for ref in alive)
        most[0] = max(most[0], living)
        page = real(*args, **kwargs)
        alive.append(weakref.ref(page))
        return page

    monkeypatch.setattr(pipeline, "scan_page", scan_and_count)
    config = load_config(site=site_dir, env={})
    result = pipeline.build(config, embedder=FakeEmbedder())
    assert len(alive) > 10 and most[0] <= 1 and result.chunks
    alive.clear()
    kept = pipeline.extract(config)  # the control: pages an Extraction keeps stay alive
    assert most[0] == len(alive) - 1 == len(kept.pages) - 1


def _letters(text: str) -> dict[str, list[str]]:
    return {"lemma": list(text), "kana2": [text[i:i + 2] for i in range(len(text) - 1)]}


def test_analyze_batches_yields_each_batch_before_taking_the_next_texts(tmp_path):
    taken = []

    def texts():
        for text in ["あい", "うえ", "おか", "あい", "きく"]:
            taken.append(text)
            yield text

    batches = analyze_batches(texts(), _letters, "a/1", ("lemma", "kana2"), None, batch_size=2)
    first = next(batches)
    assert taken == ["あい", "うえ"] and first == [_letters("あい"), _letters("うえ")]
    rest = list(batches)
    assert [len(b) for b in rest] == [2, 1]
    assert first + rest[0] + rest[1] == [_letters(t) for t in taken]


def test_batched_tokens_are_cached_and_equal_to_analysing_all_at_once(tmp_path):
    analysed = []

    def counting(text):
        analysed.append(text)
        return _letters(text)

    texts = [f"文{i % 7}の本文" for i in range(20)]
    with TokenCache(tmp_path / "tokens.sqlite") as cache:
        batched = [t for b in analyze_batches(iter(texts), counting, "a/1", ("lemma", "kana2"), cache, 3) for t in b]
        assert sorted(analysed) == sorted(set(texts))  # a text met again in a later batch comes from the cache
        analysed.clear()
        assert analyze_cached(texts, counting, "a/1", ("lemma", "kana2"), cache) == batched
    assert analysed == [] and batched == [_letters(t) for t in texts]


def test_embed_rows_fills_a_memory_map_from_cache_and_model_window_by_window(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "WINDOW", 3)  # several windows of texts and of cached vectors
    texts = [f"テキスト{i % 5}" for i in range(11)]  # five texts, each on two or three rows
    hashes = [f"h{i % 5}" for i in range(11)]
    expected = FakeEmbedder().embed_documents(texts)
    embedder = FakeEmbedder()
    with VectorCache(tmp_path / "vectors.sqlite") as cache:
        cache.put_many(runner.embedder_key(runner.describe(embedder)), {"h1": expected[1]})
        out = np.lib.format.open_memmap(tmp_path / "v.npy", "w+", np.float32, (11, embedder.dim))
        made = []
        stats = runner.embed_rows(embedder, hashes, lambda row: made.append(row) or texts[row], out, cache)
        assert (stats.total, stats.cached, stats.embedded) == (5, 1, 4)
        assert embedder.documents_embedded == 4  # one call per distinct text the cache lacked
        assert 1 not in made
        out.flush()
        np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), expected)
        again = np.zeros((11, embedder.dim), np.float32)
        assert runner.embed_rows(embedder, hashes, texts.__getitem__, again, cache).cached == 5
    np.testing.assert_array_equal(again, expected)
    assert embedder.documents_embedded == 4


def test_embed_with_cache_still_gives_a_vector_per_hash(tmp_path):
    embedder = FakeEmbedder()
    with VectorCache(tmp_path / "vectors.sqlite") as cache:
        vectors, stats = runner.embed_with_cache(embedder, {"a": "一つ目", "b": "二つ目"}, cache)
    assert stats.embedded == 2 and set(vectors) == {"a", "b"}
    np.testing.assert_array_equal(vectors["b"], embedder.embed_documents(["二つ目"])[0])
