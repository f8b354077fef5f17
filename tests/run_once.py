"""What the suite makes once per run, shared by every xdist worker: a folder of the run that all of its
processes see, a lock-guarded "make it once" and the reference-corpus index that a helper process starts
building as the run begins (`tests/background_build.py`), so that the run's longest set-up overlaps the
tests that do not need it instead of keeping a worker waiting."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from filelock import FileLock

CORPUS_REAL = "corpus-real"


def run_dir_of(basetemp: Path) -> Path:
    """A folder of this run that every process of it shares: under xdist, the controller's base
    temporary folder (each worker's is a folder in it); in one process, its own."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def once_per_run(run_dir: Path, name: str, make: Callable[[Path], Path]) -> Path:
    """What `make(folder)` returns, made once per run: the first process (xdist worker, or the background
    builder) to ask makes it in the run's folder `name` while holding a file lock; the others wait for the
    lock and read the path it recorded (pytest-xdist's "Making session-scoped fixtures execute only once").
    A failed attempt records nothing, so the next one to ask makes it again."""
    folder = run_dir / name
    made = folder / "made.json"
    with FileLock(f"{folder}.lock"):
        if not made.is_file():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed attempt left
            folder.mkdir()
            made.write_text(json.dumps(str(make(folder))), encoding="utf-8")
        return Path(json.loads(made.read_text(encoding="utf-8")))


def build_corpus(corpus: Path, cache_dir: Path) -> Callable[[Path], Path]:
    """The corpus index as `corpus_real_index` and the background builder both make it."""
    def make(base: Path) -> Path:
        from knowledge_build import build, load_config

        return build(load_config(site=corpus, output=base / "v2", cache_dir=cache_dir, env={})).output
    return make


# The background build shares the machine with the workers (see tests/conftest.py's `pytest_configure`): it may
# use every core, but its threads sleep instead of spinning while they wait for one another, so that a busy
# machine slows it down instead of wasting a core on the wait. Vectors do not depend on the thread count.
BACKGROUND_BUILD_THREADS = {"OMP_NUM_THREADS": str(os.cpu_count() or 1), "OMP_WAIT_POLICY": "PASSIVE"}


def start_in_background(run_dir: Path, name: str, corpus: Path, cache_dir: Path) -> subprocess.Popen | None:
    """Starts `tests/background_build.py` for `name` unless a process of this run already has (the first
    to create `<name>.started` wins). Its output goes to `<name>.log` in the run's folder. Returns the
    process this caller started, or None."""
    started = run_dir / f"{name}.started"
    try:
        os.close(os.open(started, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return None
    env = {key: value for key, value in os.environ.items() if not key.startswith("KB_")}
    env.update(BACKGROUND_BUILD_THREADS)
    script = Path(__file__).with_name("background_build.py")
    with open(run_dir / f"{name}.log", "wb") as log:
        return subprocess.Popen([sys.executable, str(script), str(run_dir), name, str(corpus), str(cache_dir)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
