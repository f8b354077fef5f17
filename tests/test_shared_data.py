"""The tests that need the shared data (../shared: the reference corpus and its dev queries) skip with
one reason when it is absent, fail when KB_REQUIRE_SHARED=1, and CI sets that variable (README,
"Development")."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import ROOT

TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 3
# Two cheap tests that need the shared data (no model): one through the corpus_dir fixture, one that
# calls require_shared itself.
TESTS = ["tests/test_sections_corpus.py",
         "tests/test_eval_datasets.py::test_every_outside_box_snippet_is_on_its_page_outside_every_box_and_in_no_box"]


def _pytest(tmp_path, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "PYTEST_"))}
    environ.update(env, KB_CACHE_DIR=str(tmp_path / "cache"))
    # --basetemp: its own temporary folder. Without it the inner pytest makes a numbered one in the user's
    # shared pytest-of-<user> and, as it exits, deletes the oldest there (another run's: 25-40 s of waiting
    # on this machine's disk, for 1 CPU-s of tests).
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-rs", "-p", "no:cacheprovider",
                           "--basetemp", str(tmp_path / "inner"), *TESTS],
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=TIMEOUT)


def test_without_the_shared_data_its_tests_skip_with_one_reason(tmp_path):
    result = _pytest(tmp_path, KB_SHARED_DIR=str(tmp_path / "nowhere"))
    assert result.returncode == 0, result.stdout + result.stderr
    reasons = {line.split(": ", 1)[1] for line in result.stdout.splitlines() if line.startswith("SKIPPED")}
    assert reasons == {f"shared test data not found at {tmp_path / 'nowhere'} (the reference corpus and its dev "
                       "queries, kept beside the repository in ../shared; set KB_SHARED_DIR to that folder); "
                       "set KB_REQUIRE_SHARED=1 to make this an error"}, result.stdout
    assert "2 skipped" in result.stdout


def test_with_kb_require_shared_the_missing_data_fails_them(tmp_path):
    result = _pytest(tmp_path, KB_SHARED_DIR=str(tmp_path / "nowhere"), KB_REQUIRE_SHARED="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout and "1 error" in result.stdout, result.stdout
    assert "KB_REQUIRE_SHARED is set, so the tests that need it cannot skip" in result.stdout


def test_ci_requires_the_shared_data():
    assert "export KB_REQUIRE_SHARED=1\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
