"""Writing a set: only an empty directory or an earlier set is replaced, a failure at any step
leaves the previous set whole, stale staging directories go, latest.json follows the set,
NaN vectors never reach a set or a JSON answer."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, build, fsutil, load_config
from knowledge_build.checks.validate import validate_site
from knowledge_build.cli import main
from knowledge_build.errors import (
    ArtifactUnreadable,
    ArtifactWriteFailed,
    NonFiniteVectors,
    OutputNotArtifactSet,
    StaleLatest,
)
from knowledge_build.index import artifacts as artifacts_module
from knowledge_build.index import layout
from knowledge_build.index.verify import check_latest, verify_set

from .conftest import SITE, FakeEmbedder

SET_FILES = {2: sorted(layout.V2_FILES)}


@pytest.fixture
def schema():
    return 2  # the only schema a build writes (schema 1 is refused: test_schema_one.py)


def _config(site_dir, schema=2, **flags):
    return load_config(site=site_dir, env={"KB_CACHE_DIR": str(site_dir.parent / "cache")}, artifact_schema=schema,
                       **flags)


@pytest.fixture
def built(site_dir, schema, build_copies):
    """A build of `site_dir` (made once per run per schema, copied here: see conftest.BuildCopies)."""
    return build_copies(f"output-v{schema}", lambda site: _config(site, schema), FakeEmbedder, site_dir.parent)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _edit_a_box(site_dir: Path) -> None:
    page = site_dir / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace("移項</strong>", "移項の規則</strong>"), encoding="utf-8")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# --- only an empty directory or an earlier set is replaced ---------------------------------------------

def test_build_refuses_an_output_directory_holding_other_files_before_embedding(site_dir, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("大事なメモ", encoding="utf-8")
    embedder = FakeEmbedder()
    with pytest.raises(OutputNotArtifactSet, match=f"refusing to write the artifact set to '{out}': it holds "
                                                   "'notes.txt'.*Choose an empty or new directory"):
        build(_config(site_dir, output=out), embedder=embedder)
    assert embedder.calls == 0
    assert _snapshot(out) == {"notes.txt": "大事なメモ".encode()}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".mine")) == []


def test_an_earlier_set_with_a_file_added_by_hand_is_not_replaced(built, site_dir):
    (built.output / "README.md").write_text("my notes", encoding="utf-8")
    before = _snapshot(built.output)
    _edit_a_box(site_dir)
    with pytest.raises(OutputNotArtifactSet, match="'README.md'"):
        build(_config(site_dir), embedder=FakeEmbedder())
    assert _snapshot(built.output) == before


def test_output_dot_in_knowledge_yml_is_refused_and_deletes_nothing(site_dir, tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    shutil.move(str(site_dir), project / "site")
    (project / "knowledge.yml").write_text("site: site\noutput: .\n", encoding="utf-8")
    before = _snapshot(project)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["build"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.output.startswith(f"Error: refusing to write the artifact set to '{project}': it holds ")
    assert _snapshot(project) == before


def test_a_file_as_output_is_refused(site_dir, tmp_path):
    target = tmp_path / "index.json"
    target.write_text("{}", encoding="utf-8")
    with pytest.raises(OutputNotArtifactSet, match="it is a file, not a directory"):
        build(_config(site_dir, output=target), embedder=FakeEmbedder())
    assert target.read_text(encoding="utf-8") == "{}"


def test_an_empty_existing_directory_is_filled(site_dir, tmp_path, schema):
    out = tmp_path / "empty"
    out.mkdir()
    result = build(_config(site_dir, schema, output=out), embedder=FakeEmbedder())
    assert result.output == out and result.artifacts.manifest["schema_version"] == schema
    # Schema 2 also holds the search box's bundle (knowledge-search.*, browser/bundle.py).
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("knowledge-search")) == SET_FILES[schema]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".empty")] == []


def test_a_rebuild_replaces_an_earlier_set_through_a_symlink_and_keeps_the_link(site_dir, tmp_path):
    real = tmp_path / "real-v1"
    build(_config(site_dir, output=real), embedder=FakeEmbedder())
    link = tmp_path / "v1"
    link.symlink_to(real)
    _edit_a_box(site_dir)
    result = build(_config(site_dir, output=link), embedder=FakeEmbedder())
    assert link.is_symlink() and result.output == real
    assert verify_set(link, FakeEmbedder()).build_id == result.artifacts.build_id


@pytest.mark.slow
def test_jekyll_plugin_output_dir_outside_the_destination_is_refused(tmp_path):
    if shutil.which("jekyll") is None:
        pytest.fail("jekyll is not installed; `make test` installs Debian's jekyll package")
    root = tmp_path / "site"
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    config = root / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("output_dir: knowledge/v2", "output_dir: .."),
                      encoding="utf-8")
    before = _snapshot(root)
    env = {**os.environ, "KNOWLEDGE_BUILD_COMMAND": f"{sys.executable} -m knowledge_build.cli",
           "KB_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(["jekyll", "build"], cwd=root, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode != 0
    assert f"refusing to write the artifact set to '{root}'" in result.stdout + result.stderr
    after = {k: v for k, v in _snapshot(root).items() if not k.startswith(("_site/", ".jekyll-cache/"))}
    assert after == before


# --- a failure at any step leaves the previous set whole ------------------------------------------------

def test_a_write_that_fails_midway_leaves_the_previous_set_and_no_staging(built, site_dir, monkeypatch, schema):
    knowledge = built.output.parent
    before = _snapshot(knowledge)

    def disk_full(directory, files):
        (directory / sorted(files)[0]).write_bytes(b"[")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(artifacts_module, "write_files", disk_full)
    _edit_a_box(site_dir)
    with pytest.raises(ArtifactWriteFailed, match="No space left on device.*previous set, if any, is untouched"):
        build(_config(site_dir, schema), embedder=FakeEmbedder())
    assert _snapshot(knowledge) == before
    assert sorted(p.name for p in knowledge.iterdir()) == ["latest.json", f"v{schema}"]


def test_a_failed_second_rename_without_renameat2_puts_the_previous_set_back(built, site_dir, monkeypatch, schema):
    before = _snapshot(built.output)
    real_rename = os.rename
    monkeypatch.setattr(fsutil, "rename_exchange", lambda a, b: False)

    def rename(src, dst):
        if Path(src).name.startswith(f".v{schema}.new-"):
            raise OSError(5, "Input/output error")
        real_rename(src, dst)
    monkeypatch.setattr(fsutil.os, "rename", rename)
    _edit_a_box(site_dir)
    with pytest.raises(ArtifactWriteFailed, match="Input/output error"):
        build(_config(site_dir, schema), embedder=FakeEmbedder())
    assert _snapshot(built.output) == before
    assert sorted(p.name for p in built.output.parent.iterdir()) == ["latest.json", f"v{schema}"]


def test_without_renameat2_a_rebuild_swaps_in_the_new_set(built, site_dir, monkeypatch, schema):
    monkeypatch.setattr(fsutil, "rename_exchange", lambda a, b: False)
    _edit_a_box(site_dir)
    again = build(_config(site_dir, schema), embedder=FakeEmbedder())
    assert verify_set(again.output, FakeEmbedder()).build_id == again.artifacts.build_id != built.artifacts.build_id
    assert sorted(p.name for p in again.output.parent.iterdir()) == ["latest.json", f"v{schema}"]


def test_a_kill_between_the_swap_and_latest_json_is_detected_and_repaired(built, site_dir, monkeypatch):
    knowledge = built.output.parent
    real_atomic_write = artifacts_module.atomic_write

    def killed(path, data):
        raise KeyboardInterrupt  # the process dies before latest.json is replaced
    monkeypatch.setattr(artifacts_module, "atomic_write", killed)
    _edit_a_box(site_dir)
    with pytest.raises(KeyboardInterrupt):
        build(_config(site_dir), embedder=FakeEmbedder())
    new_id = verify_set(built.output, FakeEmbedder()).build_id
    assert new_id != built.artifacts.build_id  # v1 holds the whole new set
    assert json.loads((knowledge / "latest.json").read_text(encoding="utf-8"))["build_id"] == built.artifacts.build_id
    with pytest.raises(StaleLatest, match=f"names build '{built.artifacts.build_id}'.*is build '{new_id}'"):
        KnowledgeIndex.open(knowledge, embedder=FakeEmbedder())
    assert [d.rule for d in validate_site(_config(site_dir), embedder=FakeEmbedder())] == ["artifact-integrity"]
    monkeypatch.chdir(built.output)
    with pytest.raises(StaleLatest):
        check_latest(Path("."), new_id)

    monkeypatch.setattr(artifacts_module, "atomic_write", real_atomic_write)
    again = build(_config(site_dir), embedder=FakeEmbedder())
    assert KnowledgeIndex.open(knowledge, embedder=FakeEmbedder()).build_id == again.artifacts.build_id == new_id


def test_latest_json_is_followed_to_its_set(built):
    index = KnowledgeIndex.open(built.output.parent / "latest.json", embedder=FakeEmbedder())
    assert index.path == built.output and index.build_id == built.artifacts.build_id


def test_a_latest_json_pointing_outside_its_directory_is_refused(built):
    latest = built.output.parent / "latest.json"
    latest.write_text(json.dumps({**json.loads(latest.read_text()), "path": "../../"}), encoding="utf-8")
    with pytest.raises(ArtifactUnreadable, match="is not a directory beside it"):
        verify_set(built.output.parent, FakeEmbedder())


# --- stale staging directories of killed builds ---------------------------------------------------------

def test_stale_staging_directories_of_killed_builds_are_removed_on_the_next_build(built, site_dir, schema):
    knowledge = built.output.parent
    dead = _dead_pid()
    name = f"v{schema}"
    partial = knowledge / f".{name}.new-{dead}-abcd1234"
    partial.mkdir()
    (partial / SET_FILES[schema][0]).write_bytes(b"[")
    old = knowledge / f".{name}.old-{dead}-0f0f0f0f"
    shutil.copytree(built.output, old)
    legacy = knowledge / f".{name}.new-k3j_x9q2"  # mkdtemp name of earlier versions
    legacy.mkdir()
    foreign = knowledge / f".{name}.new-{dead}-ffff0000"
    foreign.mkdir()
    (foreign / "diary.txt").write_text("mine", encoding="utf-8")
    running = knowledge / f".{name}.new-{os.getpid()}-12345678"
    running.mkdir()
    _edit_a_box(site_dir)
    build(_config(site_dir, schema), embedder=FakeEmbedder())
    assert sorted(p.name for p in knowledge.iterdir()) == sorted(
        ["latest.json", name, foreign.name, running.name])
    assert (foreign / "diary.txt").read_text(encoding="utf-8") == "mine"


# `python <this> build …` in a process of its own: the CLI with the fake embedder; with KB_TEST_PAUSE_STAGING
# set, it writes half of the set into its staging folder, prints that folder and waits to be killed.
_BUILD_SCRIPT = """
import os, sys, time
sys.path.insert(0, {root!r})
from knowledge_build import pipeline
from knowledge_build.index import artifacts
from knowledge_build.cli import main
from tests.conftest import FakeEmbedder
pipeline.get_embedder = lambda *args, **kwargs: FakeEmbedder()
if os.environ.get("KB_TEST_PAUSE_STAGING"):
    write_files = artifacts.write_files
    def half_then_wait(directory, files):
        write_files(directory, {{name: files[name] for name in sorted(files)[: len(files) // 2]}})
        print(directory, flush=True)
        time.sleep(3600)
    artifacts.write_files = half_then_wait
main()
"""
KILL_TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120"))


def _build_process(tmp_path, site_dir, output, pause=False):
    script = tmp_path / "build_with_fake.py"
    script.write_text(_BUILD_SCRIPT.format(root=str(Path(__file__).resolve().parent.parent)), encoding="utf-8")
    env = {**os.environ, "KB_CACHE_DIR": str(tmp_path / "cache"), **({"KB_TEST_PAUSE_STAGING": "1"} if pause else {})}
    return subprocess.Popen([sys.executable, str(script), "build", "--site", str(site_dir), "--output", str(output)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("next_inputs", ["the killed build's", "the kept set's"])
def test_a_build_killed_while_staging_leaves_a_folder_the_next_build_removes_and_names(tmp_path, site_dir,
                                                                                        next_inputs):
    import select

    output = tmp_path / "knowledge" / "v2"
    first = _build_process(tmp_path, site_dir, output)
    assert first.wait(timeout=KILL_TIMEOUT) == 0, first.communicate()[1]
    page = site_dir / "junior" / "一次方程式.html"
    original = page.read_text(encoding="utf-8")
    _edit_a_box(site_dir)
    killed = _build_process(tmp_path, site_dir, output, pause=True)
    try:
        ready, _, _ = select.select([killed.stdout], [], [], KILL_TIMEOUT)
        assert ready, "the build did not reach its staging folder"
        staging = Path(killed.stdout.readline().strip())
        assert staging.parent == output.parent and staging.name.startswith(".v2.new-")
        held = sorted(p.name for p in staging.iterdir())
        assert any(layout.BUNDLE_FILE.fullmatch(n) and n[len("knowledge-search-"):][:1] in "trp" for n in held), held
    finally:
        killed.kill()  # SIGKILL: no finally block of the build runs
        killed.communicate(timeout=KILL_TIMEOUT)
    assert staging.is_dir()
    if next_inputs == "the kept set's":
        page.write_text(original, encoding="utf-8")  # the next build keeps the set and writes nothing
    again = _build_process(tmp_path, site_dir, output)
    _, stderr = again.communicate(timeout=KILL_TIMEOUT)
    assert again.returncode == 0, stderr
    assert sorted(p.name for p in output.parent.iterdir()) == ["latest.json", "v2"]
    assert f"removed {staging}, a staging folder left by an interrupted build" in stderr.splitlines()


def test_a_staging_folder_another_process_is_writing_is_left_alone_whatever_its_name_says(built, site_dir):
    """A build in another container writes a staging folder named for a process number this one cannot
    see; the flock it holds on the folder is what says it is in use."""
    knowledge = built.output.parent
    busy = knowledge / f".v2.new-{_dead_pid()}-0badc0de"
    busy.mkdir()
    (busy / layout.V2_CHUNKS).write_bytes(b"{")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('locked', flush=True); time.sleep(3600)", str(busy)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        _edit_a_box(site_dir)
        build(_config(site_dir), embedder=FakeEmbedder())
        assert busy.is_dir() and (busy / layout.V2_CHUNKS).read_bytes() == b"{"
    finally:
        holder.kill()
        holder.wait(timeout=KILL_TIMEOUT)
    assert artifacts_module.clean_stale(built.output) == [busy]  # once its writer is gone


def test_a_kill_between_the_two_fallback_renames_is_recovered_by_the_next_build(built, site_dir, schema):
    knowledge = built.output.parent
    stranded = knowledge / f".v{schema}.old-{_dead_pid()}-0a0b0c0d"
    built.output.rename(stranded)  # the state a kill leaves without renameat2
    _edit_a_box(site_dir)
    again = build(_config(site_dir, schema), embedder=FakeEmbedder())
    assert sorted(p.name for p in knowledge.iterdir()) == ["latest.json", f"v{schema}"]
    assert KnowledgeIndex.open(knowledge, embedder=FakeEmbedder()).build_id == again.artifacts.build_id


# --- NaN never reaches a set or a JSON answer --------------------------------------------------------------

class NaNFor(FakeEmbedder):
    def __init__(self, word):
        super().__init__()
        self.word = word

    def _vector(self, text):
        vector = super()._vector(text)
        return vector * np.nan if self.word in text else vector


def test_a_build_refuses_nan_vectors_naming_the_chunk_and_writes_nothing(built, site_dir):
    before = _snapshot(built.output.parent)
    with pytest.raises(NonFiniteVectors, match=r"NaN or infinite values for chunk '(二次方程式|因数分解)#[^']+'.*"
                                               r"delete the vector cache"):
        build(_config(site_dir, cache_dir=site_dir.parent / "nan-cache"), embedder=NaNFor("解の公式"))
    assert _snapshot(built.output.parent) == before


def test_a_nan_query_vector_answers_from_the_lexical_channel_with_json_safe_numbers(built):
    index = KnowledgeIndex.open(built.output, embedder=NaNFor("二次方程式"))
    results = index.search("二次方程式の解の公式", k=5)
    assert results
    text = json.dumps([r.to_dict() for r in results], allow_nan=False)
    assert "NaN" not in text and all(r.similarity == 0.0 for r in results)


def test_nan_cosines_from_a_dense_source_become_zero_similarity(built):
    index = KnowledgeIndex.open(built.output, embedder=FakeEmbedder())
    results = index.search("二次方程式", k=3, dense_source=lambda qvec, filters: {0: float("nan"), 1: 0.5})
    json.dumps([r.to_dict() for r in results], allow_nan=False)
    assert all(np.isfinite(r.similarity) and np.isfinite(r.score) for r in results)


def test_a_latest_json_that_cannot_be_written_is_one_error_saying_the_set_is_in_place(built, site_dir, monkeypatch):
    from knowledge_build.errors import LatestNotWritten

    def refused(path, data):
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(artifacts_module, "atomic_write", refused)
    _edit_a_box(site_dir)
    with pytest.raises(LatestNotWritten, match=r"the artifact set is in place, but '.*latest\.json' cannot be "
                                               r"written \(Permission denied\); it still names the previous build"):
        build(_config(site_dir), embedder=FakeEmbedder())
    assert verify_set(built.output, FakeEmbedder()).build_id != built.artifacts.build_id


def test_files_are_flushed_one_by_one_where_syncfs_is_not_there(tmp_path, monkeypatch):
    import os as _os

    from knowledge_build import fsutil

    synced = []
    monkeypatch.setattr(fsutil, "syncfs", lambda directory: False)
    real = _os.fsync
    monkeypatch.setattr(fsutil.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    fsutil.write_files(tmp_path, {"a.bin": b"1", "b.bin": b"22"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.bin"] and len(synced) >= 2
    assert fsutil.syncfs(tmp_path) in (True, False)  # Linux: True; never an exception
