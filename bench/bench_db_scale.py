"""The database path at scale: publish, HNSW recall, incremental publish, RPC latency, size on disk.

    python bench/bench_db_scale.py ../shared/corpus/school_asset [--size 100000] [--work DIR]
        [--hnsw 16:64 16:128 ...] [--ef-search 40 100 200 400] [--recall-queries 300] [--rounds 3]

Generates a synthetic site of --size chunks from the reference corpus and builds it with the
BigramEmbedder (bench_scale.py's generator and embedder; --work keeps the site and its build, and a
later run with the same --work reuses them), starts a local PostgreSQL + pgvector in <work>/pg and
measures, each on a fresh database:

1. the full publish to an empty database, in a child process (wall time, the child's peak RSS);
2. one-chunk incremental publish: one box's heading edited, the site rebuilt (not timed), published
   again (timed, in a child process, with what it changed), and once more with nothing changed;
3. the size on disk of the lexical and chunk tables and their indexes;
4. RPC latency, p50/p95, dense-only `search_knowledge(query_embedding, …)` and hybrid
   `search_knowledge(query_text, query_embedding, …)`, with 1 caller and with 8 concurrent callers
   (threads, one connection each), over the dev queries and their BigramEmbedder vectors;
5. dense recall@10 of the HNSW index against exact search (the same query vectors, a sequential
   scan), for the shipped index and for each `--hnsw M:EF_CONSTRUCTION` (rebuilt in place, last,
   so the figures above are the shipped index's), at each `--ef-search`, with the p50 of the index
   query. Tie-aware: a returned row counts when its exact distance is within 1e-6 of the k-th.

`--publish-only` stops after step 3; `--incremental-only` runs step 2 alone on the database a run
with the same --work left. `--latency-only` measures step 4 alone on the database a run with the same --work left (started
with --keep-server or not), after running the current migration 006 again (it is idempotent), so
a changed search_knowledge is measured without publishing again.

Progress goes to stderr, the markdown tables to stdout (for docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import threading
import time
from pathlib import Path

import harness
from bench_scale import FALLBACK_QUERIES, BigramEmbedder, chunk_queries, generate_site, log

HERE = Path(__file__).resolve()
BENCH_SCALE = HERE.parent / "bench_scale.py"
HEARTBEAT_S = 30.0
TABLES = ("knowledge_chunks", "knowledge_terms", "knowledge_chunk_terms", "knowledge_lexical_stats")
DENSE_SQL = "select id from search_knowledge(query_embedding => %s, match_count => 5)"
HYBRID_SQL = "select id from search_knowledge(query_text => %s, query_embedding => %s, match_count => 5)"


# ---------------------------------------------------------------- child processes

def child_publish(url: str, index_dir: str) -> None:
    """One publish, timed as a whole; prints what it did and the process's peak RSS."""
    from knowledge_build.store.postgres import connect, publish

    start = time.perf_counter()
    with connect(url) as conn:
        plan = publish(conn, Path(index_dir))
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "insert": len(plan.insert), "update": len(plan.update),
                      "delete": len(plan.delete), "unchanged": plan.unchanged, "terms": plan.terms,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _child(label: str, command: list[str]) -> dict:
    def heartbeat(child, seconds: float) -> None:
        log(f"{label}: still running, {seconds:.0f} s")

    run = harness.run_process(command, capture_stderr=False, label=f"bench child {label}", every=HEARTBEAT_S,
                              on_wait=heartbeat)
    return json.loads(run.stdout.strip().splitlines()[-1])


def build(site: Path, output: Path, cache: Path, label: str) -> dict:
    settings = json.dumps({"KB_ARTIFACT_SCHEMA": "2"})
    return _child(label, harness.python_command(str(BENCH_SCALE), "_build", str(site), str(output), str(cache),
                                                settings))


def publish(url: str, index_dir: Path, label: str) -> dict:
    return _child(label, harness.python_command(str(HERE), "_publish", url, str(index_dir)))


# ---------------------------------------------------------------- set-up

def prepare(args, work: Path) -> tuple[Path, Path, Path, list[str]]:
    """The site, its build and cache, and the chunk queries: made once, reused with the same --work."""
    site, output, cache, saved = work / "site", work / "out", work / "cache", work / "chunk_queries.json"
    if (output / "manifest.json").is_file() and saved.is_file():
        log(f"reusing the site and build in {work}")
        return site, output, cache, json.loads(saved.read_text(encoding="utf-8"))
    shutil.rmtree(site, ignore_errors=True)
    log(f"{args.size:,}: generating the synthetic site in {site}")
    queries = generate_site(args.corpus, site, args.size)
    log("building it (BigramEmbedder)")
    built = build(site, output, cache, "build")
    log(f"built {built['chunks']:,} chunks in {built['seconds']:.1f} s")
    saved.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    return site, output, cache, queries


def fresh_database(server_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}"')
        conn.execute(f'create database "{name}"')
    return server_url.replace("/postgres?", f"/{name}?")


# ---------------------------------------------------------------- measurements

def sizes(conn) -> list[tuple[str, int, int, int]]:
    """(table, total, table alone, its indexes) in bytes."""
    return [(t, *conn.execute("select pg_total_relation_size(%s), pg_relation_size(%s), pg_indexes_size(%s)",
                              (t, t, t)).fetchone()) for t in TABLES]


def latency(url: str, sql: str, params: list[tuple], callers: int, rounds: int) -> list[float]:
    """Milliseconds of each call, `callers` threads each with its own connection, each over all
    params `rounds` times (starting at a different place, so they do not run in step)."""
    from knowledge_build.store.postgres import connect

    found: list[float] = []
    lock = threading.Lock()
    start_line = threading.Barrier(callers)

    def caller(offset: int) -> None:
        with connect(url) as conn:
            conn.execute(sql, params[0]).fetchall()  # warm the connection (function plans)
            order = params[offset:] + params[:offset]
            start_line.wait()
            mine = []
            for _ in range(rounds):
                for p in order:
                    start = time.perf_counter()
                    conn.execute(sql, p).fetchall()
                    mine.append((time.perf_counter() - start) * 1000)
            with lock:
                found.extend(mine)

    threads = [threading.Thread(target=caller, args=(i * len(params) // callers,)) for i in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return found


def exact_neighbours(conn, vectors, k: int = 10) -> list[list[float]]:
    """Per query vector, the k smallest cosine distances, by a sequential scan."""
    out = []
    with conn.transaction():
        conn.execute("set local enable_indexscan = off")
        conn.execute("set local enable_bitmapscan = off")
        for v in vectors:
            out.append([r[0] for r in conn.execute(
                "select embedding <=> %s from knowledge_chunks order by embedding <=> %s limit %s", (v, v, k))])
    return out


def index_recall(conn, vectors, exact, ef_search: int, k: int = 10) -> tuple[float, float, float]:
    """(mean recall@k, min, p50 ms) of the HNSW index at `ef_search` (tie-aware)."""
    hits, ms = [], []
    with conn.transaction():
        conn.execute(f"set local hnsw.ef_search = {int(ef_search)}")
        plan = "\n".join(r[0] for r in conn.execute(
            "explain select id from knowledge_chunks order by embedding <=> %s limit %s", (vectors[0], k)))
        if "hnsw" not in plan:
            sys.exit(f"the index query does not use the HNSW index:\n{plan}")
        for v, best in zip(vectors, exact):
            start = time.perf_counter()
            found = [r[0] for r in conn.execute(
                "select embedding <=> %s from knowledge_chunks order by embedding <=> %s limit %s", (v, v, k))]
            ms.append((time.perf_counter() - start) * 1000)
            hits.append(sum(1 for d in found if d <= best[-1] + 1e-6) / k)
    return sum(hits) / len(hits), min(hits), harness.median(ms)


def rebuild_index(conn, m: int, ef_construction: int) -> float:
    with harness.Timer() as t:
        conn.execute("drop index if exists knowledge_chunks_embedding_hnsw")
        conn.execute(f"create index knowledge_chunks_embedding_hnsw on knowledge_chunks using hnsw"
                     f" (embedding vector_cosine_ops) with (m = {int(m)}, ef_construction = {int(ef_construction)})")
    return t.seconds


def index_settings(conn) -> str:
    return conn.execute("select coalesce(array_to_string(c.reloptions, ', '), 'defaults (m=16, ef_construction=64)')"
                        " from pg_class c where c.relname = 'knowledge_chunks_embedding_hnsw'").fetchone()[0]


# ---------------------------------------------------------------- run

def run(args, work: Path) -> None:
    from knowledge_build.store import server
    from knowledge_build.store.postgres import connect

    queries = (harness.query_texts(args.queries) if args.queries.is_file() else []) or FALLBACK_QUERIES
    embedder = BigramEmbedder()
    if args.latency_only:
        return latency_only(server.start(work / "pg").replace("/postgres?", "/kb_bench?"), queries, embedder, args)
    if args.incremental_only:
        site, output, cache, _ = prepare(args, work)
        out = incremental(server.start(work / "pg").replace("/postgres?", "/kb_bench?"), site, output, cache)
        out.append(f"\n{os.cpu_count()} cores; load average at the end: {harness.load_average()}")
        print("\n".join(out), flush=True)
        return
    site, output, cache, chunk_qs = prepare(args, work)
    log("starting PostgreSQL")
    db = fresh_database(server.start(work / "pg"), "kb_bench")
    out = []

    log("full publish to an empty database")
    full = publish(db, output, "full publish")
    log(f"published {full['insert']:,} rows in {full['seconds']:.1f} s")
    out.append(f"Full publish, empty database: **{full['seconds']:.1f} s** ({full['insert']:,} rows, lexical terms "
               f"of {full['terms']:,} chunks), peak RSS of the publishing process {full['peak_mb']:.0f} MB")

    out += incremental(db, site, output, cache)

    with connect(db) as conn:
        conn.autocommit = True
        conn.execute("vacuum analyze")
        out.append("\n| table | total | table | indexes |\n|---|---|---|---|")
        out += [f"| {t} | {total / 1e6:.1f} MB | {table / 1e6:.1f} MB | {indexes / 1e6:.1f} MB |"
                for t, total, table, indexes in sizes(conn)]
        shipped = index_settings(conn)
    if args.publish_only:
        out.append(f"\n{os.cpu_count()} cores; load average at the end: {harness.load_average()}")
        print("\n".join(out), flush=True)
        return

    out += latency_table(db, queries, embedder, args, shipped)

    recall_queries = (queries + chunk_qs)[:args.recall_queries]
    vectors = [embedder.embed_query(q) for q in recall_queries]
    with connect(db) as conn:
        conn.autocommit = True
        log(f"exact neighbours of {len(vectors)} queries (sequential scan)")
        exact = exact_neighbours(conn, vectors)
        out.append(f"\nHNSW recall@10 against exact search ({len(vectors)} queries: dev queries and chunk titles/"
                   "openings; tie-aware), p50 of the index query alone:\n\n"
                   "| index (m, ef_construction) | build | hnsw.ef_search | recall@10 mean | min | p50 |\n"
                   "|---|---|---|---|---|---|")
        conn.execute(f"set maintenance_work_mem = '{args.maintenance_work_mem}'")
        definition = conn.execute("select pg_get_indexdef('knowledge_chunks_embedding_hnsw'::regclass)").fetchone()[0]
        for setting in [None, *args.hnsw]:
            if setting is None:
                label, seconds = f"shipped: {shipped}", None
            else:
                m, efc = (int(x) for x in setting.split(":"))
                log(f"rebuilding the HNSW index with m={m}, ef_construction={efc}")
                label, seconds = f"m={m}, ef_construction={efc}", rebuild_index(conn, m, efc)
            for ef in args.ef_search:
                log(f"recall: {label}, ef_search {ef}")
                mean, low, p50 = index_recall(conn, vectors, exact, ef)
                build_s = "(publish)" if seconds is None else f"{seconds:.0f} s"
                out.append(f"| {label} | {build_s} | {ef} | {mean:.4f} | {low:.2f} | {p50:.1f} ms |")
        if args.hnsw:
            log("putting the shipped HNSW index back")
            conn.execute("drop index knowledge_chunks_embedding_hnsw")
            conn.execute(definition)
    out.append(f"\n{os.cpu_count()} cores; load average at the end: {harness.load_average()}; "
               f"embedder {embedder.name}; index builds with maintenance_work_mem {args.maintenance_work_mem}")
    print("\n".join(out), flush=True)


def incremental(db: str, site: Path, output: Path, cache: Path) -> list[str]:
    """One box edited, the site rebuilt (not timed), published (timed); then published again unchanged."""
    log("one box edited; rebuilding (not timed)")
    page = harness.edit_one_box(site)
    build(site, output, cache, "rebuild")
    log("incremental publish")
    one = publish(db, output, "incremental publish")
    log("no-change publish")
    same = publish(db, output, "no-change publish")
    return [f"One-chunk incremental publish ({page.name}'s first rule box retitled): **{one['seconds']:.2f} s** "
            f"({one['insert']} inserted, {one['update']} updated, {one['delete']} deleted, "
            f"{one['unchanged']:,} unchanged; terms rewritten for {one['terms']} chunks)",
            f"No-change publish: **{same['seconds']:.2f} s** ({same['update'] + same['insert'] + same['delete']} "
            f"rows written, {same['unchanged']:,} unchanged)"]


def latency_table(db: str, queries: list[str], embedder, args, index: str) -> list[str]:
    dense = [(embedder.embed_query(q),) for q in queries]
    hybrid = [(q, v) for q, (v,) in zip(queries, dense)]
    out = [f"\nRPC latency, {len(queries)} dev queries (BigramEmbedder vectors), match_count 5, HNSW index "
           f"{index}:\n\n| call | callers | calls | p50 | p95 |\n|---|---|---|---|---|"]
    for name, sql, params in (("dense only", DENSE_SQL, dense), ("hybrid", HYBRID_SQL, hybrid)):
        for callers in (1, 8):
            log(f"latency: {name}, {callers} caller(s)")
            ms = latency(db, sql, params, callers, args.rounds if callers == 1 else 1)
            out.append(f"| {name} | {callers} | {len(ms)} | {harness.median(ms):.1f} ms | {harness.p95(ms):.1f} ms |")
    return out


def latency_only(db: str, queries: list[str], embedder, args) -> None:
    from knowledge_build.store.postgres import connect, migrate

    with connect(db) as conn:
        migrate(conn, embedder.dim)  # this checkout's functions (store/functions), when their text changed
        index = index_settings(conn)
    out = latency_table(db, queries, embedder, args, index)
    out.append(f"\n{os.cpu_count()} cores; load average at the end: {harness.load_average()}")
    print("\n".join(out), flush=True)


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("corpus", type=Path, help="the reference corpus (a Jekyll site), only read")
    parser.add_argument("--size", type=int, default=100_000, help="chunks in the synthetic site (default 100000)")
    parser.add_argument("--work", type=Path, help="keep the site, build and database here (reused on a later run)")
    parser.add_argument("--queries", type=Path, default=harness.DEV_QUERIES)
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the queries with 1 caller (default 3)")
    parser.add_argument("--recall-queries", type=int, default=300, help="queries for recall@10 (default 300)")
    parser.add_argument("--hnsw", nargs="*", default=["16:128", "24:128"], metavar="M:EF_CONSTRUCTION",
                        help="index settings to rebuild and measure after the shipped one (default 16:128 24:128)")
    parser.add_argument("--ef-search", type=int, nargs="+", default=[40, 100, 200, 400],
                        help="hnsw.ef_search values (default 40 100 200 400)")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the index rebuilds (default 1GB)")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the RPC latency, on the database an earlier run with this --work left")
    parser.add_argument("--incremental-only", action="store_true",
                        help="only step 2 (one box edited, published; then a no-change publish), on the database "
                             "an earlier run with this --work left")
    parser.add_argument("--publish-only", action="store_true",
                        help="only the publishes (full, one chunk, no change) and the sizes on disk")
    parser.add_argument("--keep-server", action="store_true", help="leave the database running at the end")
    args = parser.parse_args()
    log(harness.machine())
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return measure(args, args.work)
    with harness.workdir(f"kb-bench-db-{args.size}-") as work:
        measure(args, work)


def measure(args, work: Path) -> None:
    from knowledge_build.store import server

    try:
        run(args, work)
    finally:
        if not args.keep_server:
            server.stop(work / "pg")

if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if len(sys.argv) > 1 and sys.argv[1] == "_publish":
        child_publish(*sys.argv[2:4])
    else:
        main()
