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

from pathlib import Path

import harness

WIDTH = 52


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("--cache-dir", type=Path,
                        help="the cache to use (default: the configured one, as `knowledge-build build` uses it)")
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each command (default 9)")
    args = parser.parse_args()
    with harness.workdir("kb-bench-rebuild-") as work:
        run(args.site, args.cache_dir, work / "v1", args.runs)


def run(site: Path, cache: Path | None, output: Path, runs: int) -> None:
    kb = harness.cli_command()
    version = kb + ["--version"]
    build = kb + ["build", "--site", str(site), "--output", str(output), "--format", "json"]
    if cache is not None:
        build += ["--cache-dir", str(cache)]
    first = harness.run_process(build)
    harness.report("first build (warms the caches)", f"{first.seconds:.2f} s  ({first.json()['embedded']} embedded)",
                   WIDTH)
    harness.run_process(build)  # and once more, so that any cache a first build filled late is warm too
    starts, rebuilds, embedded = [], [], []
    for _ in range(runs):  # interleaved: a burst of load from other processes hits both alike
        starts.append(harness.run_process(version))
        rebuilds.append(harness.run_process(build))
        summary = rebuilds[-1].json()
        embedded.append(summary["embedded"])
    for name, runs_of in (("knowledge-build --version", starts), ("no-change rebuild, whole process", rebuilds)):
        wall, cpu = harness.median(r.seconds for r in runs_of), harness.median(r.cpu_seconds for r in runs_of)
        harness.report(f"{name} (median of {runs})", f"{wall:.3f} s wall (min {min(r.seconds for r in runs_of):.3f}), "
                                                     f"{cpu:.3f} s CPU", WIDTH)
    ratio = [harness.median(getattr(r, field) for r in rebuilds) / harness.median(getattr(s, field) for s in starts)
             for field in ("seconds", "cpu_seconds")]
    harness.report("rebuild / --version", f"{ratio[0]:.2f} wall, {ratio[1]:.2f} CPU", WIDTH)
    harness.report("chunks embedded by the timed rebuilds", f"{max(embedded)} (of {summary['chunks']} chunks)", WIDTH)
    harness.report("load average (1, 5, 15 min) at the end", harness.load_average(), WIDTH)


if __name__ == "__main__":
    main()
