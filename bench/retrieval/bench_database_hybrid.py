"""Retrieval through the database: the artifacts path, the hybrid `search_knowledge` RPC and the
embedding-only RPC on the same chunks, real model (README and docs/retrieval.md, "Hybrid search in
the database").

    python bench/retrieval/bench_database_hybrid.py [--index DIR] [--jsquad ../shared/corpus/jsquad/valid-v1.3.json]
        [--site ../shared/corpus/school_asset] [--cache-dir DIR] [--pg DIR]

Builds the reference corpus (or takes a build of it, --index), starts a local PostgreSQL + pgvector
(`knowledge_build.store.server`; data in --pg, else a temporary directory, stopped at the end),
publishes the build into a fresh database with `knowledge_build.store.postgres.publish`, and
evaluates each query set three ways, hit@1 / hit@5 / MRR@10 (top 10):

- artifacts path: `KnowledgeIndex.search` (hybrid);
- database hybrid: `SearchService.search` with the database's URL, what `search --database-url`
  runs (the RPC ranks; places and sub-results applied locally); a result that did not come from
  the database stops the run;
- embedding-only RPC: `search_knowledge(query_embedding, ...)`'s ids in its order.

Query sets: the dev queries, the project's own box, variant, section and outside-box questions
(the last judged by page and snippet, as bench_outside_boxes.py judges them) and, with --jsquad,
JSQuAD valid converted and built (vectors from --cache-dir) and published to a database of its own.
A query's vector is computed once and shared by the three. Prints one markdown table.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import knowledge_build as kb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_outside_boxes: its is_answer
import harness  # noqa: E402

SETS = (harness.DEV_QUERIES, harness.EVAL_DATA / "corpus_queries.jsonl", harness.EVAL_DATA / "variant_queries.jsonl",
        harness.EVAL_DATA / "section_queries.jsonl", harness.EVAL_DATA / "outside_box_queries.jsonl")
K = 10


class _Found:
    sub_results = ()

    def __init__(self, chunk_id: str):
        self.id = chunk_id


class DatabaseHybrid:
    """`search --database-url`'s path: SearchService over the index and the database."""

    def __init__(self, index, url: str):
        self.index, self.chunks = index, index.chunks
        self.service = kb.SearchService(index, url, statement_timeout_ms=60_000)

    def get(self, chunk_id):
        return self.index.get(chunk_id)

    def search(self, query, k=5, mode="hybrid"):
        found = self.service.search(query, k=k, mode=mode)
        if any(r.source != "database" for r in found):
            sys.exit(f"the database did not answer {query!r} (the service fell back to the artifacts)")
        return found


class DenseRpc:
    """The embedding-only RPC: its ids in its order."""

    def __init__(self, index, conn):
        self.index, self.conn, self.chunks = index, conn, index.chunks

    def get(self, chunk_id):
        return self.index.get(chunk_id)

    def search(self, query, k=5, mode=None):
        from knowledge_build.store.postgres import dense_search

        return [_Found(row[0]) for row in dense_search(self.conn, self.index.analyser.embed(query), k)]


def fresh_database(server_url: str, name: str, index_dir: Path) -> str:
    import psycopg

    from knowledge_build.store.postgres import connect, publish

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}"')
        conn.execute(f'create database "{name}"')
    url = server_url.replace("/postgres?", f"/{name}?")
    with connect(url) as conn:
        publish(conn, index_dir)
    return url


def outside_metrics(system, index, path: Path) -> dict:
    """hit@1 / hit@5 / MRR@10 of questions judged by page and snippet (a result's sub-results count
    at its rank)."""
    from bench_outside_boxes import is_answer

    ranks = []
    items = harness.read_jsonl(path)
    for item in items:
        found = system.search(item["query"], k=K)
        ranks.append(next((n for n, r in enumerate(found, 1) if any(
            is_answer(c.material, f"{c.title}\n{c.content}", item)
            for c in map(index.get, [r.id, *(s["id"] for s in getattr(r, "sub_results", ()) or ())]))), None))
    return {**harness.rank_metrics(ranks), "queries": len(items)}


def site_rows(index_dir: Path, server_url: str, name: str, sets: list[tuple[str, Path]]) -> list[str]:
    from knowledge_build.evaluation.evaluate import evaluate, load_dataset
    from knowledge_build.store.postgres import connect

    harness.report(f"{name}: publishing", str(index_dir))
    url = fresh_database(server_url, f"kb_bench_hybrid_{name}", index_dir)
    index = kb.KnowledgeIndex.open(index_dir)
    index.embed_query = functools.lru_cache(maxsize=None)(index.embed_query)  # one vector per query, shared
    rows = []
    with connect(url) as conn:
        systems = (index, DatabaseHybrid(index, url), DenseRpc(index, conn))
        for label, path in sets:
            cells = []
            for system in systems:
                if "outside_box" in path.name:
                    m = outside_metrics(system, index, path)
                else:
                    m = evaluate(system, load_dataset(path)).metrics
                cells.append(f"{m['hit@1']:.3f} / {m['hit@5']:.3f} / {m['mrr@10']:.3f}")
            rows.append(f"| {label} ({m['queries']:,}) | " + " | ".join(cells) + " |")
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--index", type=Path, help="a build of the reference corpus (real model); else built here")
    parser.add_argument("--site", type=Path, default=harness.CORPUS, help="the reference corpus (default: shared)")
    parser.add_argument("--jsquad", type=Path, help="JSQuAD valid (valid-v1.3.json): converted, built, evaluated too")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--pg", type=Path, help="the PostgreSQL data directory (default: a temporary one)")
    parser.add_argument("--sets", type=Path, nargs="+", default=list(SETS), help="query sets of the corpus")
    args = parser.parse_args()
    from knowledge_build.evaluation.squad import convert_squad
    from knowledge_build.store import server

    harness.report("machine", harness.machine())
    with harness.workdir("kb-bench-db-hybrid-") as work:
        pg = args.pg or work / "pg"
        server_url = server.start(pg)
        try:
            index_dir = args.index or kb.build(kb.load_config(site=args.site, output=work / "corpus",
                                                              cache_dir=args.cache_dir, env={})).output
            rows = site_rows(index_dir, server_url, "corpus", [(p.stem, p) for p in args.sets])
            if args.jsquad:
                converted = convert_squad(args.jsquad, work / "jsquad")
                built = kb.build(kb.load_config(site=converted.site, output=work / "jsquad-index",
                                                cache_dir=args.cache_dir, env={}))
                rows += site_rows(built.output, server_url, "jsquad",
                                  [(f"JSQuAD valid, {converted.paragraphs:,} paragraphs", converted.queries)])
        finally:
            if args.pg is None:
                server.stop(pg)
    print("| set (queries) | artifacts path | database hybrid (`search --database-url`) | embedding-only RPC |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nhit@1 / hit@5 / MRR@10, top {K}; load average at the end: {harness.load_average()}")


if __name__ == "__main__":
    main()
