"""Dense recall@10 of the shipped HNSW index on real-model vectors of 100,000 distinct texts.

    python bench/bench_db_recall.py [--work DIR] [--size 100000] [--queries 400]
        [--hnsw 16:128 24:64 ...] [--ef-search 40 100 200 400] [--embed-only] [--partial [--fill-to N]]

bench_db_scale.py's recall figures come from a synthetic site of hashed-bigram vectors and 57 near-copies
of every chunk: they say nothing about a real site. This bench measures the index on what the local model
makes of real Japanese text:

1. Texts (made at run time from what is on this machine, never stored in the project): the sentences of
   the reference corpus's pages (harness.CORPUS) and of JSQuAD valid's contexts and questions
   (harness.JSQUAD), each alone, in windows of 2 and 3 consecutive sentences of one page or paragraph,
   and pairs of sentences from two different places, until --size distinct texts. They are embedded as
   passages with the build's own local embedder (multilingual-e5-small, "passage: "), in batches, with
   progress on stderr; the vectors are kept in <work> under the texts' hash, block by block, so a rerun
   resumes and then reuses them. Texts are cut at 48 characters to bound the embedding time: 100,000
   take about 1.5 hours at the 17 passages/s of a short test, far longer on a busy machine (6/s at
   load 9). `--partial` measures on the blocks embedded so far (the texts are shuffled, so they are a
   random sample), and `--fill-to N` adds derived vectors up to N rows (see fill(): a stand-in, named
   as such in the output).
2. Queries: the dev queries (harness.DEV_QUERIES) and JSQuAD valid questions (not among the texts), up to
   --queries, embedded as queries ("query: ") the way `search` does; kept in <work>/queries.npy.
3. A local PostgreSQL + pgvector (knowledge_build.store.server, in <work>/pg), a fresh database migrated
   with the project's migrations, the vectors inserted into knowledge_chunks, 80 % box types and 20 %
   'section'/'table' (seeded), so the shipped index definition is what is measured.
4. Recall@10 against exact search (index scans off), mean and min over the queries, tie-aware (a row
   counts when its exact distance is within 1e-6 of the 10th), and the p50 of the index query, for the
   two dense queries the RPCs run, with the RPCs' hnsw.iterative_scan:
   - "all": the embedding-only search_knowledge (003): every chunk, `order by embedding <=> q, id`;
   - "boxes": the hybrid search_knowledge's (006) dense channel for boxes: `type not in ('section',
     'table')` (80 % of the rows), `order by embedding <=> q`;
   at each --ef-search (the RPCs set 200), for the index as migrated and then for each --hnsw
   M:EF_CONSTRUCTION (rebuilt in place: build time, index size). The embedding-only RPC itself is called
   once per query too, and its ids are checked against the replayed query at ef_search 200.

Progress goes to stderr, the markdown table to stdout (for docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import time
from pathlib import Path

import harness
from bench_db_scale import fresh_database, index_settings, rebuild_index
from bench_scale import log

SENTENCE_END = re.compile(r"(?<=[。！？!?])|\n+")
MIN_CHARS = 8  # shorter pieces are headings, numbers and labels
MAX_CHARS = 48  # bounds the embedding time (about 30 passages/s on 2 busy cores)
EMBED_BLOCK = 512  # passages embedded between two saves of the partial vectors
SECTION_SHARE = 0.2
BOX_TYPES = ("rule", "method", "definition", "example", "tip")
QUERIES_SQL = {
    # search_knowledge(query_embedding, ...) of 003, unfiltered
    "all": "select id, embedding <=> %(q)s from knowledge_chunks order by embedding <=> %(q)s, id limit %(k)s",
    # the dense channel for boxes of 006's hybrid search_knowledge
    "boxes": "select id, embedding <=> %(q)s from knowledge_chunks where type not in ('section', 'table')"
             " order by embedding <=> %(q)s limit %(k)s",
}
RPC_SQL = "select id from search_knowledge(query_embedding => %s, match_count => %s)"


# ---------------------------------------------------------------- texts

def page_sentences(corpus: Path) -> list[list[str]]:
    """The sentences of each page of the reference corpus (its HTML and markdown, not its layouts)."""
    from lxml import html

    pages = []
    for path in sorted(corpus.rglob("*")):
        if path.suffix not in (".html", ".md") or any(p.startswith("_") for p in path.relative_to(corpus).parts):
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        raw = re.sub(r"(?s)\A---\n.*?\n---\n", "", raw)  # front matter
        raw = re.sub(r"\{%.*?%\}|\{\{.*?\}\}", " ", raw)  # Liquid
        if not raw.strip():
            continue
        tree = html.fromstring(f"<div>{raw}</div>")
        for bad in tree.xpath("//script|//style"):
            bad.drop_tree()
        blocks = [" ".join(b.text_content().split()) for b in tree.iter("p", "li", "td", "th", "h1", "h2", "h3",
                                                                         "h4", "dd", "dt", "figcaption")]
        text = "\n".join(blocks) if blocks else tree.text_content()
        pages.append(split_sentences(text))
    return [p for p in pages if p]


def split_sentences(text: str) -> list[str]:
    pieces = (" ".join(s.split()) for s in SENTENCE_END.split(text))
    return [s[:MAX_CHARS] for s in pieces if len(s) >= MIN_CHARS]


def make_texts(size: int, held_out: set[str], seed: int = 0) -> list[str]:
    """`size` distinct texts: sentences, windows of 2 and 3 in one place, then pairs from two places."""
    paragraphs, questions = harness.jsquad_paragraphs(harness.JSQUAD)
    places = [p for p in page_sentences(harness.CORPUS) + [split_sentences(t) for _, t in paragraphs] if p]
    texts = dict.fromkeys(q for q in questions if q not in held_out)
    for width in (1, 2, 3):
        for sentences in places:
            for i in range(len(sentences) - width + 1):
                texts.setdefault("".join(sentences[i:i + width])[:MAX_CHARS])
    log(f"{len(texts):,} texts from the questions and the sentences and windows of {len(places):,} places")
    rng = random.Random(seed)
    while len(texts) < size:
        a, b = rng.sample(range(len(places)), 2)
        texts.setdefault((rng.choice(places[a]) + rng.choice(places[b]))[:MAX_CHARS])
    out = list(texts)
    rng.shuffle(out)
    return out[:size]


def query_set(limit: int) -> list[str]:
    dev = harness.query_texts(harness.DEV_QUERIES)
    _, questions = harness.jsquad_paragraphs(harness.JSQUAD)
    unique = list(dict.fromkeys(questions))
    picked = random.Random(1).sample(unique, max(0, min(len(unique), limit - len(dev))))
    return (dev + picked)[:limit]


# ---------------------------------------------------------------- vectors

def embed_passages(embedder, texts: list[str], work: Path, partial: bool = False):
    """(len(texts), dim) float32, from <work>/passages-<hash>.npy when it was made from the same texts;
    otherwise embedded block by block, each block saved, so an interrupted run resumes. `partial`: only
    the blocks saved so far, from the first on (a random sample of the texts: they are shuffled)."""
    import numpy as np

    digest = hashlib.sha256("\n".join([embedder.name, *texts]).encode()).hexdigest()[:16]
    done, blocks = work / f"passages-{digest}.npy", work / f"blocks-{digest}"
    if done.is_file():
        log(f"reusing {done}")
        return np.load(done)
    blocks.mkdir(parents=True, exist_ok=True)
    parts, start_time, fresh = [], time.perf_counter(), 0
    for start in range(0, len(texts), EMBED_BLOCK):
        path = blocks / f"{start:07d}.npy"
        if partial and not path.is_file():
            break
        if not path.is_file():
            vectors = np.concatenate([v for _, v in embedder.embed_batches(texts[start:start + EMBED_BLOCK])])
            np.save(path, vectors)
            fresh += len(vectors)
            rate = fresh / (time.perf_counter() - start_time)
            left = len(texts) - start - len(vectors)
            log(f"embedded {start + len(vectors):,}/{len(texts):,} ({rate:.0f} passages/s, "
                f"about {left / rate / 60:.0f} min left)")
        parts.append(np.load(path))
    matrix = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
    if len(matrix) == len(texts):
        np.save(done, matrix)
    return matrix


def fill(vectors, size: int, seed: int = 0):
    """`vectors` and, up to `size` rows, derived ones: each the normalised mean of two of them picked at
    random, a stand-in for the embedding of two sentences from two places (what the texts beyond the
    sentences and windows are) when there was no time to embed them all."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, len(vectors), (max(0, size - len(vectors)), 2))
    derived = vectors[pairs[:, 0]] + vectors[pairs[:, 1]]
    derived /= np.linalg.norm(derived, axis=1, keepdims=True)
    return np.concatenate([vectors, derived.astype(np.float32)])


def embed_queries(embedder, queries: list[str], work: Path):
    import numpy as np

    digest = hashlib.sha256("\n".join([embedder.name, *queries]).encode()).hexdigest()[:16]
    path = work / f"queries-{digest}.npy"
    if path.is_file():
        return np.load(path)
    matrix = np.stack([embedder.embed_query(q) for q in queries]).astype(np.float32)
    np.save(path, matrix)
    return matrix


# ---------------------------------------------------------------- database

def load(conn, passages, seed: int = 0) -> tuple[str, float]:
    """The vectors as knowledge_chunks rows (binary COPY), 80 % boxes and 20 % sections/tables, then the
    HNSW index as migrated, built on the loaded table (publish inserts into the index row by row instead:
    the same graph construction, slower)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    kinds = np.where(rng.random(len(passages)) < SECTION_SHARE, rng.integers(5, 7, len(passages)),
                     rng.integers(0, 5, len(passages)))
    types = (*BOX_TYPES, "section", "table")
    definition = conn.execute("select pg_get_indexdef('knowledge_chunks_embedding_hnsw'::regclass)").fetchone()[0]
    conn.execute("drop index knowledge_chunks_embedding_hnsw")
    with conn.cursor().copy("copy knowledge_chunks (id, num, material, anchor, url, title, content, type,"
                            " content_hash, embedding) from stdin with (format binary)") as copy:
        copy.set_types(["text", "int4", "text", "text", "text", "text", "text", "text", "text", "vector"])
        for row, vector in enumerate(passages):
            material, anchor = f"m{row // 100:04d}", f"c{row % 100:02d}"
            copy.write_row([f"{material}#{anchor}", row + 1, material, anchor, f"/{material}/#{anchor}", anchor,
                            "", types[kinds[row]], f"{row:016x}", vector])
    conn.execute("vacuum analyze knowledge_chunks")
    with harness.Timer() as t:
        conn.execute(definition)
    return definition, t.seconds


def index_size(conn) -> int:
    return conn.execute("select pg_relation_size('knowledge_chunks_embedding_hnsw')").fetchone()[0]


def exact(conn, vectors, k: int = 10) -> dict[str, list[float]]:
    """Per query shape, per query vector, the k-th smallest cosine distance, by a sequential scan."""
    out = {}
    with conn.transaction():
        conn.execute("set local enable_indexscan = off")
        conn.execute("set local enable_bitmapscan = off")
        for shape, sql in QUERIES_SQL.items():
            out[shape] = [conn.execute(sql, {"q": v, "k": k}).fetchall()[-1][1] for v in vectors]
    return out


def recall(conn, shape: str, vectors, kth: list[float], ef_search: int, k: int = 10):
    """(mean recall@k, min, p50 ms, ids per query) of the HNSW index at `ef_search`, tie-aware; None when
    the planner does not use the index."""
    hits, ms, ids = [], [], []
    with conn.transaction():
        conn.execute(f"set local hnsw.ef_search = {int(ef_search)}")
        conn.execute("set local hnsw.iterative_scan = 'relaxed_order'")  # as the RPCs
        plan = "\n".join(r[0] for r in conn.execute("explain " + QUERIES_SQL[shape], {"q": vectors[0], "k": k}))
        if "knowledge_chunks_embedding_hnsw" not in plan:  # a small table at a high ef_search
            log(f"the {shape} query does not use the HNSW index at ef_search {ef_search} (a sequential scan)")
            return None
        for v, last in zip(vectors, kth):
            start = time.perf_counter()
            found = conn.execute(QUERIES_SQL[shape], {"q": v, "k": k}).fetchall()
            ms.append((time.perf_counter() - start) * 1000)
            hits.append(sum(1 for _, d in found if d <= last + 1e-6) / k)
            ids.append([i for i, _ in found])
    if min(hits) < 0.5:
        log(f"{shape}, ef_search {ef_search}: recall@{k} {min(hits):.1f} for query #{hits.index(min(hits))}")
    return sum(hits) / len(hits), min(hits), harness.median(ms), ids


def check_rpc(conn, vectors, replayed: list[list[str]], k: int = 10) -> int:
    """Queries whose embedding-only RPC answer differs from the replayed "all" query at ef_search 200."""
    return sum(1 for v, ids in zip(vectors, replayed)
               if [r[0] for r in conn.execute(RPC_SQL, (v, k))] != ids)


def measure(args, passages, query_vectors) -> None:
    from knowledge_build.store import server
    from knowledge_build.store.postgres import connect, migrate

    log("starting PostgreSQL")
    db = fresh_database(server.start(args.work / "pg"), "kb_recall")
    with connect(db) as conn:
        conn.autocommit = True
        migrate(conn, passages.shape[1])
        conn.execute(f"set maintenance_work_mem = '{args.maintenance_work_mem}'")
        log(f"loading {len(passages):,} rows and building the index as migrated")
        definition, seconds = load(conn, passages)
        shipped = index_settings(conn)
        log(f"index built in {seconds:.0f} s; exact neighbours of {len(query_vectors)} queries")
        kth = exact(conn, query_vectors)
        out = [f"| index | build | size | hnsw.ef_search | all: recall@10 mean | min | p50 | boxes: recall@10 mean "
               "| min | p50 |", "|---|---|---|---|---|---|---|---|---|---|"]
        for setting in [None, *args.hnsw]:
            if setting is None:
                label = f"as migrated ({shipped})"
            else:
                m, efc = (int(x) for x in setting.split(":"))
                log(f"rebuilding the HNSW index with m={m}, ef_construction={efc}")
                label, seconds = f"m={m}, ef_construction={efc}", rebuild_index(conn, m, efc)
            size = index_size(conn)
            for ef in args.ef_search:
                row = [label, f"{seconds:.0f} s", f"{size / 1e6:.0f} MB", str(ef)]
                for shape in QUERIES_SQL:
                    found = recall(conn, shape, query_vectors, kth[shape], ef)
                    if found is None:
                        row += ["(sequential scan)", "", ""]
                        continue
                    mean, low, p50, ids = found
                    row += [f"{mean:.4f}", f"{low:.2f}", f"{p50:.1f} ms"]
                    if setting is None and shape == "all" and ef == 200:
                        differ = check_rpc(conn, query_vectors, ids)
                        log(f"the embedding-only RPC differs from the replayed query on {differ} queries")
                log(" | ".join(row))
                out.append("| " + " | ".join(row) + " |")
        conn.execute("drop index knowledge_chunks_embedding_hnsw")
        conn.execute(definition)
    out.append(f"\n{len(passages):,} rows ({args.rows_note}), {len(query_vectors)} queries; {os.cpu_count()} cores; load average at the "
               f"end: {harness.load_average()}; index builds with maintenance_work_mem {args.maintenance_work_mem}")
    print("\n".join(out), flush=True)


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kb-bench-db-recall"),
                        help="vectors, and the database in <work>/pg (default /tmp/kb-bench-db-recall)")
    parser.add_argument("--size", type=int, default=100_000, help="distinct texts (default 100000)")
    parser.add_argument("--queries", type=int, default=400, help="dev queries, then JSQuAD questions (default 400)")
    parser.add_argument("--hnsw", nargs="*", default=["16:128", "16:200", "24:64", "24:128", "32:64"],
                        metavar="M:EF_CONSTRUCTION", help="index settings to rebuild and measure after the migrated one")
    parser.add_argument("--ef-search", type=int, nargs="+", default=[40, 100, 200, 400],
                        help="hnsw.ef_search values (default 40 100 200 400; the RPCs set 200)")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the index builds (default 1GB)")
    parser.add_argument("--rows", type=int, help="load only the first ROWS vectors (a quick trial)")
    parser.add_argument("--keep-server", action="store_true", help="leave the database running at the end")
    parser.add_argument("--partial", action="store_true",
                        help="embed nothing: measure on the vectors embedded so far (an interrupted run's)")
    parser.add_argument("--fill-to", type=int,
                        help="with --partial: add derived vectors (means of two embedded ones) up to this many rows")
    parser.add_argument("--embed-only", action="store_true", help="make and embed the texts and queries, then stop")
    args = parser.parse_args()
    from knowledge_build.embed.local import LocalEmbedder

    log(harness.machine())
    args.work.mkdir(parents=True, exist_ok=True)
    queries = query_set(args.queries)
    texts = make_texts(args.size, set(queries))
    embedder = LocalEmbedder()
    query_vectors = embed_queries(embedder, queries, args.work)
    passages = embed_passages(embedder, texts, args.work, args.partial)
    log(f"{len(passages):,} passages embedded, {len(query_vectors)} queries")
    embedded = len(passages)
    if args.fill_to:
        passages = fill(passages, args.fill_to)
        log(f"{len(passages):,} rows with the derived ones")
    args.rows_note = f"{embedded:,} embedded texts" + (f" + {len(passages) - embedded:,} derived vectors"
                                                      if len(passages) > embedded else "")
    if args.embed_only:
        return
    from knowledge_build.store import server

    try:
        measure(args, passages[:args.rows] if args.rows else passages, query_vectors)
    finally:
        if not args.keep_server:
            server.stop(args.work / "pg")


if __name__ == "__main__":
    main()
