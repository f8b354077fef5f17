"""Database vs artifacts: publish time, query latency on each path, and the cost of a failure.

    python bench/bench_service.py ../shared/corpus/school_asset [--cache-dir DIR]

Builds the corpus (vector cache), starts a local PostgreSQL + pgvector, and prints: publish
time cold and with one changed box; query latency through the database and from the
artifacts; added latency while the circuit breaker is open; the first query after the
database dies (bounded by the connect timeout).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import tempfile
import time
from pathlib import Path

import knowledge_build as kb
from knowledge_build.store import server
from knowledge_build.store.postgres import connect, publish


def _report(name: str, value: str) -> None:
    print(f"{name:<52} {value}", flush=True)


def _p(values, q):
    return statistics.quantiles(values, n=100)[q - 1] if q != 50 else statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--queries", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev_queries.jsonl")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kb-service-"))
    data = work / "pg" / "data"
    try:
        site = work / "site"
        shutil.copytree(args.site, site, ignore=shutil.ignore_patterns("_site"))
        config = kb.load_config(site=site, output=work / "v1", cache_dir=args.cache_dir, env={})
        index_dir = kb.build(config).output
        url = server.start(data)
        with connect(url) as conn:
            started = time.perf_counter()
            plan = publish(conn, index_dir)
            _report("publish, empty database", f"{time.perf_counter() - started:.2f} s ({len(plan.insert)} rows)")
            page = next(p for p in sorted(site.rglob("*.html")) if 'id="rule-' in p.read_text(encoding="utf-8"))
            text = page.read_text(encoding="utf-8")
            close = text.index("</strong>", text.index('id="rule-'))
            page.write_text(text[:close] + f"（改{time.time_ns()}）" + text[close:], encoding="utf-8")
            kb.build(config)
            started = time.perf_counter()
            plan = publish(conn, index_dir)
            _report("publish, one box changed", f"{time.perf_counter() - started:.2f} s ({plan.changes} row)")
            started = time.perf_counter()
            plan = publish(conn, index_dir)
            _report("publish, nothing changed", f"{time.perf_counter() - started:.2f} s ({plan.changes} rows)")
        index = kb.KnowledgeIndex.open(index_dir)
        service = kb.SearchService(index, url, connect_timeout=1, breaker=kb.CircuitBreaker(reset_after=3600))
        queries = [json.loads(line)["query"] for line in args.queries.read_text(encoding="utf-8").splitlines() if line]
        for q in queries[:10]:
            service.search(q)
            index.search(q)
        db_ms, local_ms = [], []
        for _ in range(3):
            for q in queries:
                started = time.perf_counter()
                assert service.search(q)[0].source == "database"
                db_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                index.search(q)
                local_ms.append((time.perf_counter() - started) * 1000)
        _report(f"query via database ({len(db_ms)} queries)", f"p50 {_p(db_ms, 50):.1f} ms  p95 {_p(db_ms, 95):.1f} ms")
        _report("query from artifacts", f"p50 {_p(local_ms, 50):.1f} ms  p95 {_p(local_ms, 95):.1f} ms")
        os.kill(server.pid(data), signal.SIGKILL)
        time.sleep(0.5)
        started = time.perf_counter()
        assert service.search(queries[0])[0].source == "artifacts"
        _report("first query after the database died", f"{(time.perf_counter() - started) * 1000:.1f} ms")
        open_ms, base_ms = [], []
        for _ in range(3):
            for q in queries:
                started = time.perf_counter()
                service.search(q)
                open_ms.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                index.search(q)
                base_ms.append((time.perf_counter() - started) * 1000)
        added = statistics.median(open_ms) - statistics.median(base_ms)
        _report("breaker open: service vs artifacts alone (p50)",
                f"{statistics.median(open_ms):.2f} ms vs {statistics.median(base_ms):.2f} ms ({added:+.2f} ms)")
    finally:
        server.stop(data)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
