"""Schema 2 artifact sets: layout, determinism, IVF, checks on open, no-change rebuilds (schema 1 is refused: test_schema_one.py)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build.cli import main
from knowledge_build.errors import ArtifactError, ArtifactUnreadable, ChecksumMismatch, SchemaVersionMismatch
from knowledge_build.index import verify_v2
from knowledge_build.index.layout import V2_CONTENT_FILES as CONTENT_FILES
from tests.conftest import FakeEmbedder

QUERIES = ("二次方程式を公式で解きたい", "たすきがけ", "判別式", "一次関数の傾き", "平方根")


def _config(site, tmp_path, name="out", **settings):
    return kb.load_config(site=site, output=tmp_path / name / "v2", cache_dir=tmp_path / f"cache-{name}", env={},
                          **settings)


def _build(site, tmp_path, name="out", **settings):
    return kb.build(_config(site, tmp_path, name, **settings), embedder=FakeEmbedder())


def _ids(index, query, k=5):
    return [r.id for r in index.search(query, k=k)]


def test_a_build_writes_schema_2_beside_latest_json_which_names_it(site_dir):
    result = kb.build(kb.load_config(site=site_dir, env={}), embedder=FakeEmbedder())
    assert result.output == (site_dir / "_site" / "knowledge" / "v2").resolve()
    names = sorted(p.name for p in result.output.iterdir())
    # The set's own files, and the search box's bundle (browser/bundle.py), each listed in the manifest.
    assert [n for n in names if not n.startswith("knowledge-search")] == sorted(("manifest.json", *CONTENT_FILES))
    assert sorted(result.artifacts.manifest["files"]) == [n for n in names if n != "manifest.json"]
    latest = json.loads((result.output.parent / "latest.json").read_text())
    assert latest == {"schema_version": 2, "build_id": result.artifacts.build_id, "path": "v2/",
                      "manifest": "v2/manifest.json"}
    lines = (result.output / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == sorted(c.id for c in result.chunks)


@pytest.mark.parametrize("dense_index", ["exact", "ivf"])
def test_the_same_input_gives_byte_identical_v2_files(site_dir, tmp_path, dense_index):
    first = _build(site_dir, tmp_path, "a", dense_index=dense_index).output
    second = _build(site_dir, tmp_path, "b", dense_index=dense_index).output
    for name in ("manifest.json", *CONTENT_FILES):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_an_ivf_set_answers_as_the_exact_set_on_a_small_site(site_dir, tmp_path):
    """With 171 chunks there are 4 lists and every list is probed, so the answers are exact."""
    exact = kb.KnowledgeIndex.open(_build(site_dir, tmp_path, "exact").output, embedder=FakeEmbedder())
    ivf = kb.KnowledgeIndex.open(_build(site_dir, tmp_path, "ivf", dense_index="ivf").output,
                                 embedder=FakeEmbedder())
    assert ivf.manifest["dense"] == {"index": "ivf", "dtype": "float16", "lists": 4, "probes": 4}
    assert exact.manifest["dense"]["index"] == "exact"
    for query in QUERIES:
        assert _ids(ivf, query) == _ids(exact, query), query
    assert _ids(ivf, "二次方程式", 3) == _ids(exact, "二次方程式", 3)
    assert [r.id for r in ivf.search("解き方", type="method")] == [r.id for r in exact.search("解き方", type="method")]


def test_search_follows_latest_json_to_the_v2_set(site_dir, fake_open):
    kb.build(kb.load_config(site=site_dir, env={}), embedder=FakeEmbedder())
    result = CliRunner().invoke(main, ["search", "たすきがけ", "--index", str(site_dir / "_site" / "knowledge"),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["results"][0]["id"] == "因数分解#method-tasukigake"


@pytest.fixture
def built(site_dir, tmp_path, build_copies):
    """A build of `site_dir` (made once per run, copied here: see conftest.BuildCopies)."""
    return build_copies("v2", lambda site: _config(site, tmp_path=site.parent), FakeEmbedder, tmp_path).output


def _flip(path, offset=-5):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_truncated_file_is_refused_on_every_open(built):
    path = built / "lexical_rows.npy"
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ChecksumMismatch, match="lexical_rows.npy"):
        kb.KnowledgeIndex.open(built, embedder=FakeEmbedder(), verify=False)


def test_a_changed_byte_is_refused_on_open_of_a_small_set_and_by_validate_of_a_large_one(built, site_dir, monkeypatch):
    _flip(built / "knowledge_chunks.jsonl", 20)
    with pytest.raises(ChecksumMismatch, match="sha256"):
        kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())
    monkeypatch.setattr(verify_v2, "FULL_CHECK_BYTES", 0)  # as if the set were large: sizes and headers only
    kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())
    with pytest.raises(ChecksumMismatch, match="sha256"):
        kb.KnowledgeIndex.open(built, embedder=FakeEmbedder(), verify=True)
    result = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--index", str(built)])
    assert result.exit_code == 1 and "sha256" in result.output


@pytest.mark.parametrize("name, payload, expected", [
    ("rows.npy", lambda a: np.zeros(len(a), dtype=np.int64), "rows.npy"),
    ("lexical_tf.npy", lambda a: a.astype(np.float32), "lexical_tf.npy"),
    ("lexical_lengths.npy", lambda a: a[:, :-1], "lexical_lengths.npy"),
])
def test_an_array_of_another_type_or_shape_is_refused_before_it_is_read(built, name, payload, expected):
    array = np.load(built / name, allow_pickle=False)
    np.save(built / name, payload(array), allow_pickle=False)
    _restamp(built, name)
    with pytest.raises(ArtifactUnreadable, match=expected):
        kb.KnowledgeIndex.open(built, embedder=FakeEmbedder(), verify=False)


def _restamp(directory, name):
    """Record a replaced file's size and sha256 in the manifest (and the build id), as a tampering
    build would, so that only the content checks can refuse it."""
    from knowledge_build.index.artifacts import build_id_of, dumps, sha256

    manifest = json.loads((directory / "manifest.json").read_text())
    data = (directory / name).read_bytes()
    manifest["files"][name] = {"sha256": sha256(data), "size": len(data)}
    manifest["build_id"] = build_id_of(manifest)
    (directory / "manifest.json").write_bytes(dumps(manifest))


def test_a_posting_past_the_last_chunk_is_refused_by_a_full_check_and_answered_with_one_error(built, monkeypatch):
    rows = np.load(built / "lexical_rows.npy", allow_pickle=False)
    rows[:] = 10 ** 6
    np.save(built / "lexical_rows.npy", rows, allow_pickle=False)
    _restamp(built, "lexical_rows.npy")
    with pytest.raises(ArtifactUnreadable, match="outside"):
        kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())
    monkeypatch.setattr(verify_v2, "FULL_CHECK_BYTES", 0)
    index = kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())
    with pytest.raises(ArtifactUnreadable, match="validate"):
        index.search("二次方程式", mode="lexical")


def test_a_damaged_chunk_line_is_one_error_naming_validate(built, monkeypatch):
    monkeypatch.setattr(verify_v2, "FULL_CHECK_BYTES", 0)
    path = built / "knowledge_chunks.jsonl"
    data = path.read_bytes()
    path.write_bytes(b"#" + data[1:])
    index = kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())
    with pytest.raises(ArtifactUnreadable, match="line 1 is damaged"):
        index.chunks[0]


def test_a_schema_this_version_cannot_read_names_the_versions_it_reads(built):
    from knowledge_build.index.artifacts import dumps

    manifest = json.loads((built / "manifest.json").read_text())
    manifest["schema_version"] = 3
    (built / "manifest.json").write_bytes(dumps(manifest))
    with pytest.raises(SchemaVersionMismatch, match="reads schema_version 2"):
        kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())


def test_a_no_change_rebuild_keeps_the_set_embeds_nothing_and_reports_the_diagnostics_again(site_dir, tmp_path):
    config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={})
    embedder = FakeEmbedder()
    first = kb.build(config, embedder=embedder)
    calls = embedder.calls
    second = kb.build(config, embedder=embedder)
    assert second.artifacts.build_id == first.artifacts.build_id and embedder.calls == calls
    assert second.embed_stats.embedded == 0 and len(second.chunks) == len(first.chunks)
    assert [d.format() for d in second.diagnostics] == [d.format() for d in first.diagnostics]
    assert any(d.rule == "sections-need-render" for d in second.diagnostics)  # site/index.html uses Liquid
    assert second.chunks[0].id == first.chunks[0].id


def test_a_rebuild_after_a_change_or_with_a_damaged_set_builds_in_full(site_dir, tmp_path):
    config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={})
    first = kb.build(config, embedder=FakeEmbedder())
    page = site_dir / "junior" / "一次関数.html"
    page.write_text(page.read_text(encoding="utf-8").replace("傾き", "かたむき"), encoding="utf-8")
    changed = kb.build(config, embedder=FakeEmbedder())
    assert changed.artifacts.build_id != first.artifacts.build_id
    rows = changed.output / "lexical_rows.npy"
    rows.write_bytes(rows.read_bytes()[:-4])
    repaired = kb.build(config, embedder=FakeEmbedder())
    assert repaired.artifacts.build_id == changed.artifacts.build_id
    kb.KnowledgeIndex.open(repaired.output, embedder=FakeEmbedder(), verify=True)


IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _cli_build(site, cache_dir):
    return CliRunner().invoke(main, ["build", "--site", str(site), "--cache-dir", str(cache_dir)])


def _fake_cli_embedder(monkeypatch):
    monkeypatch.setattr("knowledge_build.pipeline.get_embedder", lambda *a, **k: FakeEmbedder())


def test_a_folder_locked_after_a_build_fails_the_rebuild_as_it_fails_a_fresh_build(site_dir, tmp_path, monkeypatch):
    _fake_cli_embedder(monkeypatch)
    images = (site_dir / "images").resolve()  # no page in it: the pages' bytes stay the same
    images.mkdir()
    (images / "graph.svg").write_text("<svg/>", encoding="utf-8")
    assert _cli_build(site_dir, tmp_path / "cache").exit_code == 0
    real_scandir = os.scandir

    def deny(path="."):  # what chmod 000 on the folder does for a user who is not root
        if Path(path) == images:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", deny)
    rebuild, fresh = _cli_build(site_dir, tmp_path / "cache"), _cli_build(site_dir, tmp_path / "fresh-cache")
    assert (rebuild.exit_code, rebuild.output) == (fresh.exit_code, fresh.output)
    assert rebuild.exit_code == 1 and "came from the cache" not in rebuild.output
    assert (f"{images}:1:1: error: [directory-unreadable] the directory cannot be read (Permission denied); pages "
            f"in it are not indexed. Fix: make it readable (chmod a+rx '{images}')") in rebuild.output


@pytest.mark.skipif(IS_ROOT, reason="root lists chmod-000 folders; the monkeypatched test above covers it")
def test_a_folder_really_locked_after_a_build_fails_the_rebuild(site_dir, tmp_path, monkeypatch):
    _fake_cli_embedder(monkeypatch)
    images = site_dir / "images"
    images.mkdir()
    assert _cli_build(site_dir, tmp_path / "cache").exit_code == 0
    images.chmod(0)
    try:
        rebuild = _cli_build(site_dir, tmp_path / "cache")
    finally:
        images.chmod(0o755)
    assert rebuild.exit_code == 1 and "error: [directory-unreadable]" in rebuild.output


def test_a_link_broken_after_a_build_is_reported_by_the_rebuild_and_by_the_no_change_one_after(site_dir, tmp_path,
                                                                                               monkeypatch):
    config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={})
    kb.build(config, embedder=FakeEmbedder())
    (site_dir / "gone.html").symlink_to(site_dir / "missing.html")
    fresh = kb.build(replace(config, cache_dir=tmp_path / "fresh-cache"), embedder=FakeEmbedder())
    assert any(d.rule == "page-skipped" and d.severity == "warning" for d in fresh.diagnostics)
    rebuild = kb.build(config, embedder=FakeEmbedder())
    monkeypatch.setattr("knowledge_build.pipeline.extract", None)  # the next build must read no page
    kept = kb.build(config, embedder=FakeEmbedder())
    for result in (rebuild, kept):
        assert [d.format() for d in result.diagnostics] == [d.format() for d in fresh.diagnostics]


def test_a_bad_schema_or_dense_index_setting_is_one_line(site_dir):
    for flags, expected in (({"artifact_schema": 3}, r"artifact_schema must be 2 \(the only schema\), got 3"),
                            ({"dense_index": "hnsw"}, "dense_index must be one of auto, exact, ivf")):
        with pytest.raises(kb.KnowledgeBuildError, match=expected):
            kb.load_config(site=site_dir, env={}, **flags)


def test_a_set_copied_elsewhere_opens_there(built, tmp_path):
    target = tmp_path / "elsewhere" / "v2"
    shutil.copytree(built, target)
    index = kb.KnowledgeIndex.open(target, embedder=FakeEmbedder(), verify=True)
    assert _ids(index, "たすきがけ", 1) == ["因数分解#method-tasukigake"]
    with pytest.raises(ArtifactError):
        kb.KnowledgeIndex.open(tmp_path / "nowhere", embedder=FakeEmbedder())


def test_every_chunk_of_a_v2_set_is_found_by_its_id_before_and_after_the_id_table_is_built(built):
    index = kb.KnowledgeIndex.open(built, embedder=FakeEmbedder())
    ids = [json.loads(line)["id"] for line in (built / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    for _ in range(2):  # 171 lookups by bisection, then (past 256) from the table
        assert [index.row_of(chunk_id) for chunk_id in ids] == list(range(len(ids)))
    assert index.chunks._table is not None and index.row_of("無い#rule-x") is None
    assert index.get(ids[7]).id == ids[7]


def test_the_manifest_check_agrees_with_jsonschema_on_valid_and_broken_manifests(built):
    """The loader checks manifests without importing jsonschema; both must accept and refuse alike."""
    import copy
    from importlib import resources

    import jsonschema

    from knowledge_build.index.files import schema_problem

    manifest = json.loads((built / "manifest.json").read_text())
    schema = json.loads(resources.files("knowledge_build.schemas").joinpath("manifest.v2.schema.json").read_text())
    changes = [lambda m: None, lambda m: m.pop("dense"), lambda m: m["dense"].update(index="ivf"),
               lambda m: m["dense"].update(dtype="float32"), lambda m: m["lexical"].update(fields=[]),
               lambda m: m["lexical"].update(tokens=-1), lambda m: m["lexical"].update(tokens=True),
               lambda m: m["embedder"].update(dim="384"), lambda m: m["embedder"].update(extra=1),
               lambda m: m["files"].update({"a/b": {"sha256": "0" * 64, "size": 1}}),
               lambda m: m["files"]["rows.npy"].update(sha256="xyz"), lambda m: m["counts"]["by_type"].update(rule=0),
               lambda m: m.update(site=[]), lambda m: m["site"].update(categories={"a": 1}),
               lambda m: m["tool"].update(name="other"), lambda m: m.update(metric="dot")]
    for change in changes:
        edited = copy.deepcopy(manifest)
        change(edited)
        ours = schema_problem(edited, "manifest.v2.schema.json")
        theirs = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(edited)), None)
        assert (ours is None) == (theirs is None), (ours, theirs)


def test_ivf_lists_are_kept_in_the_cache_and_damaged_ones_are_trained_again(site_dir, tmp_path):
    config = kb.load_config(site=site_dir, output=tmp_path / "a" / "v2", cache_dir=tmp_path / "cache",
                            dense_index="ivf", env={})
    first = kb.build(config, embedder=FakeEmbedder()).output
    kept = list((tmp_path / "cache" / "ivf").glob("*.faiss"))
    assert len(kept) == 1
    kept[0].write_bytes(kept[0].read_bytes()[:-100] + b"\0" * 100)
    again = kb.build(replace(config, output=tmp_path / "b" / "v2"), embedder=FakeEmbedder()).output
    assert (again / "vectors.faiss").read_bytes() == (first / "vectors.faiss").read_bytes()


def test_build_cli_takes_the_schema_and_the_dense_index(site_dir, tmp_path, monkeypatch):
    import knowledge_build.embed as embed

    monkeypatch.setattr(embed, "get_embedder", lambda *a, **k: FakeEmbedder())
    monkeypatch.setattr("knowledge_build.pipeline.get_embedder", lambda *a, **k: FakeEmbedder())
    for flags, folder, kind in ((["--schema", "2"], "v2", "exact"), (["--dense-index", "ivf"], "v2", "ivf")):
        result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--cache-dir", str(tmp_path / "c"),
                                           "--format", "json", *flags])
        assert result.exit_code == 0, result.output
        output = json.loads(result.output)["output"]
        assert output.endswith(f"knowledge/{folder}")
        manifest = json.loads((site_dir / "_site" / "knowledge" / folder / "manifest.json").read_text())
        assert manifest.get("dense", {}).get("index") == kind


def test_an_ivf_set_searched_through_its_lists_with_a_kind_selector_answers_as_exact(site_dir, tmp_path, monkeypatch):
    """Groups above EXACT_GROUP_ROWS go through the inverted lists with a bitmap selector (at 100,000
    chunks, boxes and sections); with every list probed, that is exact."""
    from knowledge_build.search import dense

    monkeypatch.setattr(dense, "EXACT_GROUP_ROWS", 0)
    exact = kb.KnowledgeIndex.open(_build(site_dir, tmp_path, "exact").output, embedder=FakeEmbedder())
    ivf = kb.KnowledgeIndex.open(_build(site_dir, tmp_path, "ivf", dense_index="ivf").output, embedder=FakeEmbedder())
    for query in QUERIES:
        assert _ids(ivf, query) == _ids(exact, query), query
        assert [r.id for r in ivf.search(query, type="rule")] == [r.id for r in exact.search(query, type="rule")]


def test_a_result_lists_at_most_20_other_locations_of_its_concept():
    from knowledge_build.index.rows import MAX_LOCATIONS, Columns
    from knowledge_build.model import Chunk

    def chunk(page, title):
        return Chunk(id=f"{page}#sec-1", material=page, anchor="sec-1", url=f"/{page}.html#sec-1", title=title,
                     content="", excerpt="", learns=(), learns_source="heuristic", type="section", category="",
                     level="", prerequisites=(), content_hash=page)

    chunks = [chunk(f"p{i:03d}", "練習問題") for i in range(30)] + [chunk("q", "判別式"), chunk("r", "判別式")]
    columns = Columns.from_chunks(chunks)
    assert columns.same_concept(0) == list(range(1, MAX_LOCATIONS + 1))
    assert columns.same_concept(30) == [31] and MAX_LOCATIONS == 20


def test_a_rebuild_with_another_sections_setting_or_embedder_is_a_full_build(site_dir, tmp_path):
    config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={})
    first = kb.build(config, embedder=FakeEmbedder())
    off = kb.build(replace(config, sections="off"), embedder=FakeEmbedder())
    assert len(off.chunks) < len(first.chunks) and off.artifacts.build_id != first.artifacts.build_id
    wider = kb.build(replace(config, sections="off"), embedder=FakeEmbedder(dim=32))
    assert wider.artifacts.manifest["embedder"]["dim"] == 32 and wider.embed_stats.embedded == len(wider.chunks)


def test_auto_takes_inverted_lists_above_exact_max_rows_set_in_the_environment(site_dir, tmp_path):
    config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={"KB_EXACT_MAX_ROWS": "100"})
    assert config.dense_index == "auto" and config.exact_max_rows == 100
    assert kb.build(config, embedder=FakeEmbedder()).artifacts.manifest["dense"]["index"] == "ivf"  # 171 > 100
    config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={"KB_EXACT_MAX_ROWS": "1000"})
    assert kb.build(config, embedder=FakeEmbedder()).artifacts.manifest["dense"]["index"] == "exact"
