"""The run's vector cache (tests/conftest.py, `run_cache`): every real-model build of a run, in-process
or in a subprocess, reads and fills one cache, so the model embeds each distinct text once per run;
`once_per_run` makes an expensive fixture once for every xdist worker."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from .conftest import SITE, manual_text, once_per_run


@pytest.fixture
def model_texts(monkeypatch) -> list[str]:
    """Every passage that reaches the real model during the test (the counter of the proof)."""
    from knowledge_build.embed import local

    seen: list[str] = []
    original = local.LocalEmbedder.embed_documents

    def counting(self, texts):
        seen.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(local.LocalEmbedder, "embed_documents", counting)
    return seen


def _copy_of_site(target: Path) -> Path:
    import shutil

    shutil.copytree(SITE, target, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    return target


@pytest.mark.model
def test_a_second_build_of_the_sample_site_in_the_run_sends_no_text_to_the_model(real_index_dir, run_cache,
                                                                                 model_texts, tmp_path):
    from knowledge_build import build, load_config

    result = build(load_config(site=_copy_of_site(tmp_path / "site"), cache_dir=run_cache, env={}))
    assert model_texts == [] and result.embed_stats.embedded == 0
    assert result.embed_stats.cached == result.embed_stats.total > 100
    assert {p.name: p.read_bytes() for p in Path(result.output).iterdir()} == \
        {p.name: p.read_bytes() for p in real_index_dir.iterdir()}


@pytest.mark.model
def test_the_counter_counts_what_a_build_embeds(real_index_dir, run_cache, model_texts, tmp_path):
    """The proof above could not pass with a counter that sees nothing: one new box is one text."""
    from knowledge_build import build, load_config

    site = _copy_of_site(tmp_path / "site")
    page = next(site.rglob("二次方程式.html"))
    marker = f"run-cache-{uuid.uuid4().hex}"  # a text no other build of any run has
    page.write_text(page.read_text(encoding="utf-8") + f'\n<div class="tip-box" id="tip-{marker}">'
                    f"<strong>{marker}</strong><p>この一文は {marker} だけのものです。</p></div>\n", encoding="utf-8")
    result = build(load_config(site=site, cache_dir=run_cache, env={}))
    assert result.embed_stats.embedded == len(model_texts) >= 1
    assert any(marker in text for text in model_texts)


@pytest.mark.model
def test_a_model_tests_subprocess_builds_from_the_run_cache(real_index_dir, run_cache, tmp_path):
    assert os.environ["KB_CACHE_DIR"] == str(run_cache)
    site = _copy_of_site(tmp_path / "site")
    done = subprocess.run([sys.executable, "-m", "knowledge_build.cli", "build", "--site", str(site), "--format",
                           "json"], capture_output=True, text=True, timeout=600)  # KB_CACHE_DIR inherited
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["embedded"] == 0 and summary["cached"] == summary["chunks"] > 100


def test_a_test_not_marked_model_has_its_own_cache_folder(tmp_path):
    assert os.environ["KB_CACHE_DIR"] == str(tmp_path / "cache")


@pytest.mark.model
def test_private_cache_gives_a_model_test_its_own_folder(private_cache, run_cache, tmp_path):
    assert os.environ["KB_CACHE_DIR"] == str(private_cache) != str(run_cache)
    assert private_cache.is_relative_to(tmp_path)


class _Factory:
    """tmp_path_factory as an xdist worker sees it: its base folder inside the run's."""

    def __init__(self, run: Path, worker: str):
        self.base = run / f"popen-{worker}"

    def getbasetemp(self) -> Path:
        return self.base


def test_once_per_run_makes_a_thing_once_for_every_worker_and_again_after_a_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    made: list[Path] = []

    def make(folder: Path) -> Path:
        made.append(folder)
        (folder / "thing").write_text("x", encoding="utf-8")
        return folder / "thing"

    def fail(folder: Path) -> Path:
        (folder / "half").write_text("x", encoding="utf-8")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        once_per_run(_Factory(tmp_path, "gw0"), "thing", fail)
    first = once_per_run(_Factory(tmp_path, "gw0"), "thing", make)
    second = once_per_run(_Factory(tmp_path, "gw1"), "thing", make)
    assert first == second == tmp_path / "thing" / "thing" and made == [tmp_path / "thing"]
    assert not (tmp_path / "thing" / "half").exists()  # the failed attempt's leftovers went first


WRITER = """import sys
import numpy as np
from knowledge_build.embed.cache import VectorCache

path, name = sys.argv[1], sys.argv[2]
with VectorCache(path) as cache:
    for batch in range(150):
        keys = [f"{name}-{batch}-{row}" for row in range(16)]
        cache.put_many("fake:writers", {key: np.full(4, batch, np.float32) for key in keys})
        assert len(cache.get_many("fake:writers", keys, 4)) == 16
"""


def test_three_processes_fill_one_vector_cache_at_once(tmp_path):
    """What sharing the run's cache across xdist workers and their subprocesses asks of the SQLite file:
    writers in several processes at once, each batch committed, none refused for a lock."""
    from knowledge_build.embed.cache import VectorCache

    path = tmp_path / "vectors.sqlite"
    VectorCache(path).close()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], stderr=subprocess.PIPE, text=True)
               for name in ("a", "b", "c")]
    errors = [writer.communicate(timeout=600)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0], errors
    with VectorCache(path) as cache:
        keys = [f"{name}-{batch}-{row}" for name in "abc" for batch in range(150) for row in range(16)]
        assert len(cache.known("fake:writers", keys, 4)) == 3 * 150 * 16


def test_the_readme_names_the_persistent_cache_that_ci_keeps():
    from .conftest import ROOT

    readme = manual_text()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "`KB_TEST_CACHE` names a folder that keeps that cache between runs" in readme
    assert 'export KB_TEST_CACHE="${KB_TEST_CACHE:-$HOME/.cache/knowledge-build-tests}"' in ci
    assert "(`.ci/run` uses\n  `~/.cache/knowledge-build-tests`)" in readme
