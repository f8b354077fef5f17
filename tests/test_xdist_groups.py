"""The suite's expensive run-wide fixtures (the corpus index, the generated sites) rely on
`--dist loadgroup` keeping the tests of one `xdist_group` on one worker. With pytest 9.2 and
pytest-xdist 3.8 the grouping silently stopped (pytest-dev/pytest-xdist#1386): the corpus tests ran on
both workers and one of them sat for four minutes waiting for the other's build. This runs a small
suite the way `make test` runs this one and checks the grouping took effect."""

import subprocess
import sys

HEAD = '''
import os
import pytest

def record(name):
    with open("workers.txt", "a", encoding="utf-8") as out:
        out.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")
'''
# Grouped and free tests alternate, so that a plain round-robin or slice-by-slice distribution would
# spread the group over both workers.
SUITE = HEAD + "".join(f'''
@pytest.mark.xdist_group("one")
def test_grouped{i}():
    record("grouped{i}")

def test_free{i}():
    record("free{i}")
''' for i in range(6))


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    (tmp_path / "test_groups.py").write_text(SUITE, encoding="utf-8")
    # --basetemp: its own temporary folder, so that as it exits it deletes no other run's in pytest-of-<user>.
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                          "--dist", "loadgroup", "--basetemp", str(tmp_path / "inner"), "test_groups.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    workers = dict(line.split() for line in (tmp_path / "workers.txt").read_text(encoding="utf-8").splitlines())
    assert len(workers) == 12
    grouped = {worker for name, worker in workers.items() if name.startswith("grouped")}
    assert len(grouped) == 1, f"one group ran on {sorted(grouped)}: is pytest-xdist's loadgroup broken again?"
