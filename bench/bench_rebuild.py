"""The everyday rebuild as a user runs it: a whole `knowledge-build build` process with nothing changed.

    python bench/bench_rebuild.py ../shared/corpus/school_asset [--cache-dir DIR] [--runs 9]

Runs `knowledge-build --version` and a no-change `knowledge-build build --site SITE --output TMP
--format json` as whole processes, interleaved, N times each, and prints the medians, their ratio
(the machine is shared: the ratio to the bare start-up measured in the same run is the comparable
figure; CPU seconds, user + system, are less disturbed by other processes than wall time) and the
number of chunks embedded (0 is the point). Without --cache-dir the build uses its configured cache
(KB_CACHE_DIR, else ~/.cache/knowledge-build); a first, untimed build fills it if it is cold (with the
real model: minutes). The output goes to a temporary directory; the site is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", type=Path)
    parser.add_argument("--cache-dir", type=Path,
                        help="the cache to use (default: the configured one, as `knowledge-build build` uses it)")
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each command (default 9)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kb-bench-rebuild-"))
    try:
        run(args.site, args.cache_dir, work / "v1", args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _command() -> list[str]:
    script = Path(sys.executable).parent / "knowledge-build"
    return [str(script)] if script.exists() else [shutil.which("knowledge-build") or "knowledge-build"]


def run(site: Path, cache: Path | None, output: Path, runs: int) -> None:
    kb = _command()
    version = kb + ["--version"]
    build = kb + ["build", "--site", str(site), "--output", str(output), "--format", "json"]
    if cache is not None:
        build += ["--cache-dir", str(cache)]
    seconds, _, summary = _timed(build)
    _report("first build (warms the caches)", f"{seconds:.2f} s  ({summary['embedded']} embedded)")
    _timed(build)  # and once more, so that any cache a first build filled late is warm too
    starts, rebuilds, embedded = [], [], []
    for _ in range(runs):  # interleaved: a burst of load from other processes hits both alike
        starts.append(_timed(version)[:2])
        *timing, summary = _timed(build)
        rebuilds.append(timing)
        embedded.append(summary["embedded"])
    for name, runs_of in (("knowledge-build --version", starts), ("no-change rebuild, whole process", rebuilds)):
        wall, cpu = (statistics.median(r[i] for r in runs_of) for i in (0, 1))
        _report(f"{name} (median of {runs})", f"{wall:.3f} s wall (min {min(r[0] for r in runs_of):.3f}), "
                                              f"{cpu:.3f} s CPU")
    ratio = [statistics.median(r[i] for r in rebuilds) / statistics.median(s[i] for s in starts) for i in (0, 1)]
    _report("rebuild / --version", f"{ratio[0]:.2f} wall, {ratio[1]:.2f} CPU")
    _report("chunks embedded by the timed rebuilds", f"{max(embedded)} (of {summary['chunks']} chunks)")
    _report("load average (1, 5, 15 min) at the end", " ".join(f"{v:.2f}" for v in os.getloadavg()))


def _timed(command: list[str]) -> tuple[float, float, dict]:
    """Wall-clock seconds, CPU seconds (user + system) of the child, and its JSON output if any."""
    before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds, _children_cpu() - before, json.loads(done.stdout) if done.stdout.lstrip().startswith("{") else {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _report(name: str, value: str) -> None:
    print(f"{name:<52} {value}", flush=True)


if __name__ == "__main__":
    main()
