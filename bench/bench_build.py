"""Build and query benchmarks on a real site (the reference corpus by default).

    python bench/bench_build.py ../shared/corpus/school_asset [--cache-dir DIR]

Prints: extraction speed (with lexical tokens), cold build and embed ms/chunk, no-change
rebuild, one-box-edit rebuild, full warm builds without and with the search box's dense channel, loader cold start, and query latency against the bare
query-embedding time measured in the same run. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import harness

import knowledge_build as kb
from knowledge_build.pipeline import lexical_fields


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("--queries", type=Path, default=harness.DEV_QUERIES)
    parser.add_argument("--cache-dir", type=Path, help="reuse this vector cache (default: a fresh one, so a cold build)")
    args = parser.parse_args()
    with harness.workdir("kb-bench-") as work:
        site = harness.copy_site(args.site, work / "site")
        cache = args.cache_dir or work / "cache"
        config = kb.load_config(site=site, cache_dir=cache, output=work / "v1", env={})
        bench_extract(config)
        bench_builds(config, site)
        bench_dense_cost(site, cache, work)
        bench_queries(work / "v1", _queries(args.queries))


def bench_extract(config) -> None:
    kb.extract(config)  # warm the OS file cache and imports
    runs = []
    for _ in range(5):
        with harness.Timer() as t:
            extraction = kb.extract(config)
            lexical_fields(extraction.chunks)
        runs.append(t.seconds)
    best = min(runs)
    pages = len(extraction.pages)
    harness.report("extract + lexical tokens (best of 5)",
                   f"{best:.3f} s  ({pages / best:.0f} pages/s, {len(extraction.chunks)} chunks)")


def bench_builds(config, site: Path) -> None:
    cold, result = harness.timed(kb.build, config, progress=True)
    embedded = result.embed_stats.embedded
    per_chunk = f"{cold / embedded * 1000:.0f} ms/chunk embedded" if embedded else "all from cache"
    harness.report("first build" + (" (cold cache)" if embedded else " (warm cache)"),
                   f"{cold:.1f} s  ({embedded} embedded, {per_chunk})")

    seconds, result = harness.timed(kb.build, config)
    harness.report("no-change rebuild", f"{seconds:.2f} s  ({result.embed_stats.embedded} embedded)")

    harness.edit_one_box(site)
    seconds, result = harness.timed(kb.build, config)
    harness.report("one-box-edit rebuild", f"{seconds:.2f} s  ({result.embed_stats.embedded} embedded)")


def bench_dense_cost(site: Path, cache: Path, work: Path, runs: int = 3) -> None:
    """Full builds with a warm cache, the search box's dense channel off and on, interleaved (the build memo
    cleared before each, so each runs in full): their medians and ratio."""
    import shutil

    from knowledge_build.index.build_memo import MEMO_DIR

    times: dict[str, list[float]] = {"false": [], "true": []}
    for _ in range(runs):
        for dense in times:
            shutil.rmtree(cache / MEMO_DIR, ignore_errors=True)
            config = kb.load_config(site=site, cache_dir=cache, output=work / f"dense-{dense}",
                                    env={"KB_SEARCH_BOX_DENSE": dense})
            seconds, _ = harness.timed(kb.build, config)
            times[dense].append(seconds)
    off, on = harness.median(times["false"]), harness.median(times["true"])
    harness.report(f"full build, warm cache, box without / with its dense channel (median of {runs})",
                   f"{off:.2f} s / {on:.2f} s  (x{on / off:.2f})")


def bench_queries(index_dir: Path, queries: list[str]) -> None:
    code = ("import time; t=time.perf_counter(); import knowledge_build as kb; "
            f"i=kb.KnowledgeIndex.open({str(index_dir)!r}); t1=time.perf_counter(); "
            "i.search('二次方程式の解き方'); print(t1-t, time.perf_counter()-t)")
    opens, firsts = [], []
    for _ in range(3):
        opened, first = map(float, harness.run_process(harness.python_command("-c", code)).stdout.split())
        opens.append(opened)
        firsts.append(first)
    harness.report("loader cold start: import + open (median of 3)", f"{harness.median(opens) * 1000:.0f} ms")
    harness.report("loader cold start: to first answer", f"{harness.median(firsts) * 1000:.0f} ms")

    index = kb.KnowledgeIndex.open(index_dir)
    embedder = index.embedder
    for q in queries[:10]:
        index.search(q)  # warm-up
    ms = harness.interleaved_ms({"embed": embedder.embed_query, "search": lambda q: index.search(q, k=5)},
                                queries, rounds=3)
    e50, s50 = harness.median(ms["embed"]), harness.median(ms["search"])
    e95, s95 = harness.p95(ms["embed"]), harness.p95(ms["search"])
    harness.report(f"query embedding only ({len(queries)} queries x3)", harness.p50_p95(ms["embed"]))
    harness.report("search (embed + dense + lexical + fusion)", harness.p50_p95(ms["search"]))
    harness.report("search overhead on top of embedding",
                   f"p50 +{(s50 / e50 - 1) * 100:.1f}%  p95 +{(s95 / e95 - 1) * 100:.1f}%")


def _queries(path: Path) -> list[str]:
    extra = ["たすきがけ", "タスキガケ", "襷掛け", "tasukigake", "判別式", "移項", "解の公式", "平方完成",
             "三平方の定理", "一次関数の傾き", "sin cos tan", "円周角", "確率の求め方", "連立方程式の代入法",
             "因数分解の公式", "二次関数の最大値", "比例と反比例の違い", "相似の証明", "標準偏差とは", "ベクトルの内積"]
    return (harness.query_texts(path) + extra * 3)[:100]


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
