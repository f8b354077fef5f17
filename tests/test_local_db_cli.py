"""`knowledge-build db start` with a --data-dir it cannot use: one clear line and exit 1, never a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _db_start(data_dir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "knowledge_build.cli", "db", "start", "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("where, reason", [
    ("/proc/x", "No such file or directory"),
    ("file", "it is a file, not a folder"),
    ("full", "it holds other files and is not a database folder"),
])
def test_db_start_in_an_unusable_folder_is_one_clear_line(tmp_path, where, reason):
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("someone's files\n")
    data_dir = where if where.startswith("/") else tmp_path / where
    done = _db_start(data_dir)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [f"Error: cannot keep a database in {data_dir}: {reason}. Fix: give --data-dir a new or "
                      "empty folder that can be created and written (e.g. .knowledge-db)"], done.stderr
    assert (tmp_path / "full" / "notes.txt").read_text() == "someone's files\n"
