"""Build and query benchmarks on a real site (the reference corpus by default).

    python bench/bench_build.py ../shared/corpus/school_asset [--cache-dir DIR]

Prints: extraction speed (with lexical tokens), cold build and embed ms/chunk, no-change
rebuild, one-box-edit rebuild, loader cold start, and query latency against the bare
query-embedding time measured in the same run. Figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import knowledge_build as kb
from knowledge_build.pipeline import lexical_fields

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", type=Path)
    parser.add_argument("--queries", type=Path, default=HERE.parent.parent / "shared" / "eval" / "dev_queries.jsonl")
    parser.add_argument("--cache-dir", type=Path, help="reuse this vector cache (default: a fresh one, so a cold build)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kb-bench-"))
    try:
        site = work / "site"
        shutil.copytree(args.site, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
        cache = args.cache_dir or work / "cache"
        config = kb.load_config(site=site, cache_dir=cache, output=work / "v1", env={})
        bench_extract(config)
        bench_builds(config, site)
        bench_queries(work / "v1", _queries(args.queries))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _report(name: str, value: str) -> None:
    print(f"{name:<44} {value}", flush=True)


def bench_extract(config) -> None:
    kb.extract(config)  # warm the OS file cache and imports
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        extraction = kb.extract(config)
        lexical_fields(extraction.chunks)
        runs.append(time.perf_counter() - start)
    best = min(runs)
    pages = len(extraction.pages)
    _report("extract + lexical tokens (best of 5)",
            f"{best:.3f} s  ({pages / best:.0f} pages/s, {len(extraction.chunks)} chunks)")


def bench_builds(config, site: Path) -> None:
    start = time.perf_counter()
    result = kb.build(config, progress=True)
    cold = time.perf_counter() - start
    embedded = result.embed_stats.embedded
    per_chunk = f"{cold / embedded * 1000:.0f} ms/chunk embedded" if embedded else "all from cache"
    _report("first build" + (" (cold cache)" if embedded else " (warm cache)"), f"{cold:.1f} s  ({embedded} embedded, {per_chunk})")

    start = time.perf_counter()
    result = kb.build(config)
    _report("no-change rebuild", f"{time.perf_counter() - start:.2f} s  ({result.embed_stats.embedded} embedded)")

    page = next(p for p in sorted(site.rglob("*.html")) if 'id="rule-' in p.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    at = text.index('id="rule-')
    close = text.index("</strong>", at)
    # A fresh edit every run, so a shared vector cache cannot already hold it.
    page.write_text(text[:close] + f"（改{time.time_ns()}）" + text[close:], encoding="utf-8")
    start = time.perf_counter()
    result = kb.build(config)
    _report("one-box-edit rebuild", f"{time.perf_counter() - start:.2f} s  ({result.embed_stats.embedded} embedded)")


def bench_queries(index_dir: Path, queries: list[str]) -> None:
    code = ("import time; t=time.perf_counter(); import knowledge_build as kb; "
            f"i=kb.KnowledgeIndex.open({str(index_dir)!r}); t1=time.perf_counter(); "
            "i.search('二次方程式の解き方'); print(t1-t, time.perf_counter()-t)")
    opens, firsts = [], []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        opened, first = map(float, out.split())
        opens.append(opened)
        firsts.append(first)
    _report("loader cold start: import + open (median of 3)", f"{statistics.median(opens) * 1000:.0f} ms")
    _report("loader cold start: to first answer", f"{statistics.median(firsts) * 1000:.0f} ms")

    index = kb.KnowledgeIndex.open(index_dir)
    embedder = index._embedder
    for q in queries[:10]:
        index.search(q)  # warm-up
    embed_ms, search_ms = [], []
    for _ in range(3):
        for q in queries:
            start = time.perf_counter()
            embedder.embed_query(q)
            embed_ms.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            index.search(q, k=5)
            search_ms.append((time.perf_counter() - start) * 1000)
    e50, s50 = statistics.median(embed_ms), statistics.median(search_ms)
    e95, s95 = _p95(embed_ms), _p95(search_ms)
    _report(f"query embedding only ({len(queries)} queries x3)", f"p50 {e50:.1f} ms  p95 {e95:.1f} ms")
    _report("search (embed + dense + lexical + fusion)", f"p50 {s50:.1f} ms  p95 {s95:.1f} ms")
    _report("search overhead on top of embedding", f"p50 +{(s50 / e50 - 1) * 100:.1f}%  p95 +{(s95 / e95 - 1) * 100:.1f}%")


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def _queries(path: Path) -> list[str]:
    queries = [json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    extra = ["たすきがけ", "タスキガケ", "襷掛け", "tasukigake", "判別式", "移項", "解の公式", "平方完成",
             "三平方の定理", "一次関数の傾き", "sin cos tan", "円周角", "確率の求め方", "連立方程式の代入法",
             "因数分解の公式", "二次関数の最大値", "比例と反比例の違い", "相似の証明", "標準偏差とは", "ベクトルの内積"]
    return (queries + extra * 3)[:100]


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
