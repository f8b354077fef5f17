"""The artifact set (schema 2, the only one written): golden chunks file, byte-identical rebuilds,
schemas, and refusal of tampered sets. More of schema 2 (memory-mapped opens, IVF, no-change
rebuilds): test_artifacts_v2.py; the refusal of a schema 1 set: test_schema_one.py."""

import json
from importlib import resources

import faiss
import jsonschema
import numpy as np
import pytest

from knowledge_build import (
    ChecksumMismatch,
    DimensionMismatch,
    EmbedderMismatch,
    KnowledgeIndex,
    build,
    get_embedder,
    load_config,
)
from knowledge_build.errors import ArtifactUnreadable
from knowledge_build.index import layout
from knowledge_build.index.verify import verify_set

from .conftest import FakeEmbedder


@pytest.fixture
def built(site_dir, build_copies):
    """A build of `site_dir` (made once per run, copied here: see conftest.BuildCopies)."""
    def configure(site):
        return load_config(site=site, env={"KB_CACHE_DIR": str(site.parent / "cache")})

    return build_copies("artifacts", configure, FakeEmbedder, site_dir.parent)


def _chunk_lines(output) -> list[dict]:
    return [json.loads(line) for line in (output / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()]


def test_knowledge_chunks_match_the_golden_file(built, file_regression):
    # The golden file is the chunks as one indented array (what schema 1 wrote): the lines hold the same fields.
    text = json.dumps(_chunk_lines(built.output), ensure_ascii=False, sort_keys=True, indent=1) + "\n"
    file_regression.check(text, basename="site_knowledge_chunks", extension=".json")


def test_artifacts_land_in_the_site_output_knowledge_v2(built, site_dir):
    assert built.output == site_dir / "_site" / "knowledge" / "v2"
    names = {p.name for p in built.output.iterdir()}
    assert layout.V2_FILES <= names
    assert all(layout.BUNDLE_FILE.fullmatch(name) for name in names - layout.V2_FILES)


def test_second_build_is_byte_identical(built, site_dir):
    first = {p.name: p.read_bytes() for p in built.output.iterdir()}
    again = build(load_config(site=site_dir, env={"KB_CACHE_DIR": str(site_dir.parent / "other-cache")}),
                  embedder=FakeEmbedder())
    assert {p.name: p.read_bytes() for p in again.output.iterdir()} == first


def test_files_match_the_json_schemas_shipped_in_the_package(built):
    schemas = resources.files("knowledge_build.schemas")
    for document, schema_file in ((json.loads((built.output / "manifest.json").read_text(encoding="utf-8")),
                                   "manifest.v2.schema.json"),
                                  (_chunk_lines(built.output), "knowledge_chunks.schema.json")):
        jsonschema.validate(document, json.loads(schemas.joinpath(schema_file).read_text(encoding="utf-8")))


def test_chunks_are_sorted_by_id_and_faiss_row_i_is_chunk_i(built, fake_embedder):
    chunks = _chunk_lines(built.output)
    assert [c["id"] for c in chunks] == sorted(c["id"] for c in chunks)
    index = faiss.read_index(str(built.output / "vectors.faiss"))
    row = next(i for i, c in enumerate(chunks) if c["anchor"] == "rule-quadratic-formula")
    chunk = built.chunks[row]
    assert chunk.id == chunks[row]["id"]
    np.testing.assert_allclose(index.reconstruct(row), fake_embedder._vector(chunk.embed_text), atol=1e-3)  # fp16


def test_manifest_records_embedder_counts_and_checksums(built):
    manifest = json.loads((built.output / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["schema_version"] == 2
    assert manifest["embedder"] == {"provider": "fake", "model": "char-bigram-hash/1", "dim": 64,
                                    "query_prefix": "query: ", "passage_prefix": "passage: "}
    assert manifest["counts"]["chunks"] == len(built.chunks)
    assert set(layout.V2_CONTENT_FILES) <= set(manifest["files"])
    assert all(layout.BUNDLE_FILE.fullmatch(name) for name in set(manifest["files"]) - set(layout.V2_CONTENT_FILES))
    site = manifest["site"]
    assert {k: site.pop(k) for k in ("name", "description")} == {
        "name": "数学ノート", "description": "中学・高校数学の要点を「知識ボックス」単位で整理した学習ノート"}
    assert site.pop("pages") == {"found": 11, "indexed": 10}  # the home page is a list of links
    assert site == {"url": "https://example.github.io", "baseurl": "/math-note", "generator": "jekyll",
                    "categories": {"numbers": "数と式", "equations": "方程式", "functions": "関数",
                                   "geometry": "図形と計量"}}


def test_a_changed_byte_is_refused_with_a_rebuild_hint(built):
    path = built.output / "knowledge_chunks.jsonl"
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatch, match="knowledge_chunks.jsonl.*sha256 differs.*knowledge-build build"):
        verify_set(built.output, FakeEmbedder())


def test_a_truncated_file_is_refused(built):
    path = built.output / "vectors.faiss"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ChecksumMismatch, match="vectors.faiss.*size"):
        KnowledgeIndex.open(built.output, embedder=FakeEmbedder())


def _rewrite_manifest(output, change):
    """Edit the manifest and record the build id the edit gives, as a tampering build would, so that
    only the checks behind the build id can refuse it."""
    from knowledge_build.index.artifacts import build_id_of

    manifest = json.loads((output / "manifest.json").read_text(encoding="utf-8"))
    change(manifest)
    manifest["build_id"] = build_id_of(manifest)
    (output / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_wrong_dimension_is_refused(built):
    _rewrite_manifest(built.output, lambda m: m["embedder"].update(dim=384))
    with pytest.raises(DimensionMismatch, match="vectors.faiss has dimension 64, the manifest says 384"):
        KnowledgeIndex.open(built.output, embedder=FakeEmbedder(dim=384))


def test_a_wrong_count_is_refused(built):
    _rewrite_manifest(built.output, lambda m: m["counts"].update(chunks=3))
    with pytest.raises(ArtifactUnreadable, match=r"rows.npy.*shape \(171,\), the manifest's counts need chunk rows "
                                                 r"of shape \(3,\)"):
        KnowledgeIndex.open(built.output, embedder=FakeEmbedder())


def test_another_embedder_is_refused_with_what_to_rebuild(built):
    with pytest.raises(EmbedderMismatch, match="built with embedder fake:char-bigram-hash/1:64.*"
                                               "local:multilingual-e5-small-q4:384.*knowledge-build build"):
        KnowledgeIndex.open(built.output, embedder=get_embedder("local"))


def test_a_failed_build_leaves_the_previous_set_untouched(built, site_dir):
    before = {p.name: p.read_bytes() for p in built.output.iterdir()}

    class Exploding(FakeEmbedder):
        def embed_documents(self, texts):
            raise RuntimeError("model crashed")

    page = site_dir / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace("移項</strong>", "移項の規則</strong>"), encoding="utf-8")
    with pytest.raises(RuntimeError, match="model crashed"):
        build(load_config(site=site_dir, env={"KB_CACHE_DIR": str(site_dir.parent / "cache")}), embedder=Exploding())
    assert {p.name: p.read_bytes() for p in built.output.iterdir()} == before
    assert sorted(p.name for p in built.output.parent.iterdir()) == ["latest.json", "v2"]


def test_latest_json_names_the_current_build_and_schema(built):
    latest = json.loads((built.output.parent / "latest.json").read_text(encoding="utf-8"))
    assert latest == {"schema_version": 2, "build_id": built.artifacts.build_id, "path": "v2/",
                      "manifest": "v2/manifest.json"}
