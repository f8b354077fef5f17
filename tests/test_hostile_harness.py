"""bench/hostile.py, the hostile-input harness, run on its search and MCP cases: every run ends clearly, and
the harness itself tells a traceback, a hang and a silent success from a clear refusal."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HARNESS = REPO / "bench" / "hostile.py"
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120"))


@pytest.mark.model
def test_hostile_search_and_stdio_inputs_end_in_clear_errors(tmp_path):
    run = subprocess.run([sys.executable, str(HARNESS), "--work", str(tmp_path / "work"), "--format", "json",
                          "--only", "search/*,serve-stdio/*,sources-add/*", "--timeout", str(TIMEOUT)],
                         capture_output=True, text=True, timeout=TIMEOUT * 60, cwd=REPO)
    report = json.loads(run.stdout)
    assert report["problems"] == [] and run.returncode == 0, run.stderr[-3000:]
    # search/*, serve-stdio/* and sources-add/*: the broken sets, queries, addresses and garbage MCP lines
    assert report["runs"] >= 60 and report["totals"]["ok"] == report["runs"]


def test_the_harness_counts_a_traceback_a_hang_and_a_silent_success(tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import hostile
    finally:
        sys.path.remove(str(REPO / "bench"))
    python = [sys.executable, "-c"]
    hostile.KB = python  # the cases below run small Python programs instead of the CLI
    env = dict(os.environ)
    cases = {
        "traceback": hostile.Case("t", ["raise SystemExit(int('x'))"]),
        "hang": hostile.Case("h", ["import time; time.sleep(60)"]),
        "silent-wrong": hostile.Case("s", ["print('fine')"], expect="refuse"),
        "unclear": hostile.Case("u", ["import sys; sys.exit(3)"]),
        "ok": hostile.Case("o", ["import sys; print('Error: no such thing. Fix: …', file=sys.stderr); sys.exit(1)"]),
    }
    kept = tmp_path / "kept.txt"
    kept.write_text("mine\n")
    cases["data-loss"] = hostile.Case("d", [f"import pathlib, sys; pathlib.Path({str(kept)!r}).write_text('');"
                                             "print('error: gone', file=sys.stderr); sys.exit(1)"], protect=[kept])
    for verdict, case in cases.items():
        assert hostile.run_case(case, env, timeout=1.0 if verdict == "hang" else TIMEOUT).verdict == verdict
