"""Extraction time with sections off, unanchored and all (issue 13's budget: at most 1.5x of off).

    python bench/bench_sections.py ../shared/corpus/school_asset [--runs 5]

Extraction is what every command runs before anything else (scan, chunks, no model, no disk
writes): `kb.extract`. The three settings are timed interleaved in one process, `--runs` rounds,
after one warm-up round of each (imports, the tokenizer and the glossary are loaded once, as in a
real build), without a build cache: every page is read as sections. A fourth row times
`unanchored` with a build cache that has read the pages before (what a rebuild does, see
section_memory.py). The median of each and its ratio to `off` are printed, then where the extra
time goes for `unanchored` without the cache (a profile of one run, top functions by cumulative
time).
"""

from __future__ import annotations

import cProfile
import io
import pstats
from pathlib import Path

import harness

import knowledge_build as kb
from knowledge_build.text.token_cache import TokenCache

MODES = ("off", "unanchored", "all")


def extract_seconds(site: Path, mode: str, cache: TokenCache | None = None) -> tuple[float, int]:
    with harness.Timer() as t:
        chunks = kb.extract(kb.load_config(site=site, sections=mode, env={}), cache).chunks
    return t.seconds, len(chunks)


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with harness.workdir("kb-bench-sections-") as tmp, TokenCache(tmp / "tokens.sqlite") as cache:
        counts = {mode: extract_seconds(args.site, mode)[1] for mode in MODES}  # warm-up
        extract_seconds(args.site, "unanchored", cache)  # fills the cache, as a first build does
        times: dict[str, list[float]] = {mode: [] for mode in (*MODES, "rebuild")}
        for _ in range(args.runs):
            for mode in MODES:
                times[mode].append(extract_seconds(args.site, mode)[0])
            times["rebuild"].append(extract_seconds(args.site, "unanchored", cache)[0])
    off = harness.median(times["off"])
    print(f"extraction of {args.site} (median of {args.runs}, interleaved, after a warm-up):")
    labels = {mode: mode for mode in MODES} | {"rebuild": "unanchored, pages read before (build cache)"}
    counts["rebuild"] = counts["unanchored"]
    for mode, label in labels.items():
        median = harness.median(times[mode])
        print(f"  sections {label:<44} {median:6.3f} s  {median / off:4.2f}x  {counts[mode]} chunks  "
              f"(runs: {', '.join(f'{t:.3f}' for t in times[mode])})")
    profile = cProfile.Profile()
    profile.enable()
    kb.extract(kb.load_config(site=args.site, sections="unanchored", env={}))
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(r"knowledge_build", 14)
    print("\nwhere unanchored's time goes (cumulative, one run):")
    print("\n".join(line for line in out.getvalue().splitlines() if "knowledge_build" in line or "cumtime" in line))


if __name__ == "__main__":
    main()
