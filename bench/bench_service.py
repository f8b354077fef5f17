"""Database vs artifacts: publish time, query latency on each path, and the cost of a failure.

    python bench/bench_service.py ../shared/corpus/school_asset [--cache-dir DIR]

Builds the corpus (vector cache), starts a local PostgreSQL + pgvector, and prints: publish
time cold and with one changed box; query latency through the database and from the
artifacts; added latency while the circuit breaker is open; the first query after the
database dies (bounded by the connect timeout).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import harness

import knowledge_build as kb
from knowledge_build.store import server
from knowledge_build.store.postgres import connect, publish

WIDTH = 52


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--queries", type=Path, default=harness.DEV_QUERIES)
    args = parser.parse_args()
    with harness.workdir("kb-service-") as work:
        data = work / "pg" / "data"
        try:
            run(args, work, data)
        finally:
            server.stop(data)


def run(args, work: Path, data: Path) -> None:
    site = harness.copy_site(args.site, work / "site")
    config = kb.load_config(site=site, output=work / "v1", cache_dir=args.cache_dir, env={})
    index_dir = kb.build(config).output
    url = server.start(data)
    with connect(url) as conn:
        seconds, plan = harness.timed(publish, conn, index_dir)
        harness.report("publish, empty database", f"{seconds:.2f} s ({len(plan.insert)} rows)", WIDTH)
        harness.edit_one_box(site)
        kb.build(config)
        seconds, plan = harness.timed(publish, conn, index_dir)
        harness.report("publish, one box changed", f"{seconds:.2f} s ({plan.changes} row)", WIDTH)
        seconds, plan = harness.timed(publish, conn, index_dir)
        harness.report("publish, nothing changed", f"{seconds:.2f} s ({plan.changes} rows)", WIDTH)
    index = kb.KnowledgeIndex.open(index_dir)
    service = kb.SearchService(index, url, connect_timeout=1, breaker=kb.CircuitBreaker(reset_after=3600))
    queries = harness.query_texts(args.queries)
    for q in queries[:10]:
        service.search(q)
        index.search(q)

    def via_database(q: str) -> None:
        assert service.search(q)[0].source == "database"

    ms = harness.interleaved_ms({"database": via_database, "artifacts": index.search}, queries, rounds=3)
    harness.report(f"query via database ({len(ms['database'])} queries)", harness.p50_p95(ms["database"]), WIDTH)
    harness.report("query from artifacts", harness.p50_p95(ms["artifacts"]), WIDTH)
    os.kill(server.pid(data), signal.SIGKILL)
    time.sleep(0.5)
    with harness.Timer() as first:
        assert service.search(queries[0])[0].source == "artifacts"
    harness.report("first query after the database died", f"{first.ms:.1f} ms", WIDTH)
    ms = harness.interleaved_ms({"service": service.search, "artifacts": index.search}, queries, rounds=3)
    breaker_open, alone = harness.median(ms["service"]), harness.median(ms["artifacts"])
    harness.report("breaker open: service vs artifacts alone (p50)",
                   f"{breaker_open:.2f} ms vs {alone:.2f} ms ({breaker_open - alone:+.2f} ms)", WIDTH)


if __name__ == "__main__":
    main()
