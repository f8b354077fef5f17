"""Schema 1 is gone: no build writes it, a setting or flag asking for it is one line saying what to
do, and a schema 1 set found by a reader (search, validate, publish, report, a rebuild) is one line
saying to rebuild, with nothing of it read, changed or deleted. All with the fake embedder."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, build, load_config
from knowledge_build.checks.report import _index_info
from knowledge_build.cli import main
from knowledge_build.errors import ConfigError, SchemaOneRetired
from knowledge_build.index.artifacts import build_id_of, dumps, sha256
from knowledge_build.store.publishable import Publishable

from .conftest import FakeEmbedder

RETIRED = "is schema 1, which knowledge-build no longer reads. Run 'knowledge-build build'"


def _env(site_dir: Path) -> dict:
    return {"KB_CACHE_DIR": str(site_dir.parent / "cache")}


@pytest.fixture
def old_set(site_dir) -> Path:
    """<site output>/knowledge/v1 as an earlier version wrote it: its files (chunks as one JSON array, the
    vectors, lexical.json) listed in a schema 1 manifest with a consistent build id, and latest.json naming it.
    Made from a schema 2 build of the same site, since no module writes schema 1 any more."""
    new = build(load_config(site=site_dir, env=_env(site_dir)), embedder=FakeEmbedder()).output
    knowledge = new.parent
    old = knowledge / "v1"
    old.mkdir()
    lines = (new / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()
    files = {"knowledge_chunks.json": dumps([json.loads(line) for line in lines]),
             "vectors.faiss": (new / "vectors.faiss").read_bytes(),
             "lexical.json": b'{"analyzer":"x","fields":{}}\n'}
    manifest = json.loads((new / "manifest.json").read_text(encoding="utf-8"))
    manifest.pop("dense")
    manifest["schema_version"] = 1
    manifest["lexical"] = {"analyzer": manifest["lexical"]["analyzer"]}
    manifest["files"] = {name: {"sha256": sha256(data), "size": len(data)} for name, data in files.items()}
    manifest["build_id"] = build_id_of(manifest)
    files["manifest.json"] = dumps(manifest)
    for name, data in files.items():
        (old / name).write_bytes(data)
    shutil.rmtree(new)
    (knowledge / "latest.json").write_bytes(dumps({"schema_version": 1, "build_id": manifest["build_id"],
                                                   "path": "v1/", "manifest": "v1/manifest.json"}))
    return old


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_search_of_a_schema_1_set_is_one_line_saying_to_rebuild_and_the_set_is_left_as_it_is(old_set):
    before = _snapshot(old_set.parent)
    result = CliRunner().invoke(main, ["search", "--index", str(old_set), "二次方程式"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert result.output.splitlines() == [
        f"Error: artifact set '{old_set}' is schema 1, which knowledge-build no longer reads. Run 'knowledge-build "
        "build' to write a schema 2 set in <site output>/knowledge/v2 (the vector cache keeps it quick); the old set "
        "is left as it is: delete it once nothing reads it."]
    assert _snapshot(old_set.parent) == before


def test_a_latest_json_naming_a_schema_1_set_is_refused_until_a_build_writes_v2_beside_it(old_set, site_dir):
    with pytest.raises(SchemaOneRetired, match=RETIRED):
        KnowledgeIndex.open(old_set.parent, embedder=FakeEmbedder())
    with pytest.raises(SchemaOneRetired, match=RETIRED):
        KnowledgeIndex.open(old_set.parent / "latest.json", embedder=FakeEmbedder())
    before = _snapshot(old_set)
    result = build(load_config(site=site_dir, env=_env(site_dir)), embedder=FakeEmbedder())
    assert result.output == old_set.parent / "v2" and result.artifacts.manifest["schema_version"] == 2
    assert json.loads((old_set.parent / "latest.json").read_text(encoding="utf-8"))["path"] == "v2/"
    assert _snapshot(old_set) == before  # the old set is the user's to delete
    assert KnowledgeIndex.open(old_set.parent, embedder=FakeEmbedder()).search("二次方程式")


def test_validate_publish_and_report_refuse_a_schema_1_set_with_the_same_line(old_set, site_dir):
    result = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--index", str(old_set)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert RETIRED in result.output
    with pytest.raises(SchemaOneRetired, match=RETIRED):
        Publishable.open(old_set)
    assert RETIRED in _index_info(old_set)["problem"]


def test_a_reader_of_a_site_with_only_a_schema_1_set_is_told_to_build(old_set, site_dir):
    (old_set.parent / "latest.json").unlink()
    result = CliRunner().invoke(main, ["search", "--site", str(site_dir), "二次方程式"])
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
    assert f"no artifact set at '{old_set.parent / 'v2'}'" in result.output
    assert "Build one with 'knowledge-build build --site SITE'" in result.output


@pytest.mark.parametrize("how", ["flag", "environment", "file"])
def test_asking_for_schema_1_is_one_line_saying_it_is_gone_and_what_to_do(site_dir, how, monkeypatch):
    env = _env(site_dir)
    args = ["build", "--site", str(site_dir)]
    if how == "flag":
        args += ["--schema", "1"]
    elif how == "environment":
        env["KB_ARTIFACT_SCHEMA"] = "1"
    else:
        (site_dir / "knowledge.yml").write_text("artifact_schema: 1\n", encoding="utf-8")
        monkeypatch.chdir(site_dir)  # knowledge.yml is read from the current directory
    result = CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    assert result.exit_code != 0
    lines = result.output.splitlines()
    assert len(lines) == 1 and "artifact_schema 1 is gone" in lines[0], result.output
    assert "Remove the setting (2 is the default) and run 'knowledge-build build'" in lines[0]
    assert not (site_dir / "_site" / "knowledge").exists()
    with pytest.raises(ConfigError, match="artifact_schema 1 is gone"):
        load_config(site=site_dir, env={**_env(site_dir), "KB_ARTIFACT_SCHEMA": "1"})
