"""Web sources store at scale (issue 14's bar: `sources query` p50 <= 50 ms, `delete` <= 0.5 s at
20,000 chunks in the SQLite store), and the same at 2,000 to show query time stays flat.

    python bench/bench_sources.py ../shared/corpus/jsquad/valid-v1.3.json [--sizes 2000 20000] [--queries 200]

Chunks are made of real Japanese text (three JSQuAD paragraphs each, about 550 characters, as a
web section) with random unit vectors of the local model's dimension (384), in sources of 10
chunks. Tokens are analysed once per paragraph (the store's own analysis, text_ja.analyze); the
store is filled through its backend so the bench does not spend minutes re-analysing repeats.
Queries are JSQuAD questions (analyze_query) with random unit vectors: `query_vector` is what
`sources query` runs after embedding the question. Both vector indexes are timed: sqlite-vec (vec0,
exact KNN) and the numpy fallback (whose first query after a write reads the vectors again,
reported apart). `delete` deletes one 10-chunk source; `replace` re-ingests one (rows prepared).
"""

from __future__ import annotations

import os
from pathlib import Path

import harness
import numpy as np
from harness import DIM, RandomEmbedder

from knowledge_build.store.sources import SourceStore, unit_vector
from knowledge_build.text.ja import analyze, analyze_query

PER_SOURCE = 10
CRAWLED = "2026-11-01T00:00:00+00:00"


def load(path: Path) -> tuple[list[tuple[str, str, dict]], list[str]]:
    """(title, paragraph, tokens) of every JSQuAD paragraph, and the questions."""
    paragraphs, questions = harness.jsquad_paragraphs(path)
    return [(title, text, analyze(text)) for title, text in paragraphs], questions


def rows_for(paragraphs, start: int, rng) -> tuple[str, list[dict]]:
    """One source's title and rows: 10 chunks of three paragraphs each."""
    n, rows = len(paragraphs), []
    for i in range(PER_SOURCE):
        j = start + i
        picks = [paragraphs[(j * k + k) % n] for k in (1, 7, 13)]
        tokens = {f: [t for p in picks for t in p[2][f]] for f in ("lemma", "reading", "kana2")}
        title = picks[0][0]
        tokens["page"] = list(dict.fromkeys(analyze_title(title)))
        tokens["heading"] = tokens["page"]
        rows.append({"chunk_index": i, "url": f"#s{i}", "title": title, "heading": title, "parents": [],
                     "kind": "section", "text": "\n".join(p[1] for p in picks), "crawled_at": CRAWLED,
                     "embedding": unit_vector(rng.standard_normal(DIM).astype(np.float32)), "tokens": tokens})
    return picks[0][0], rows


_TITLES: dict[str, list[str]] = {}


def analyze_title(title: str) -> list[str]:
    if title not in _TITLES:
        _TITLES[title] = analyze(title)["lemma"]
    return _TITLES[title]


def fill(store: SourceStore, paragraphs, size: int, seed: int = 1) -> float:
    rng = np.random.default_rng(seed)
    timer = harness.Timer()
    for s in range(size // PER_SOURCE):
        title, rows = rows_for(paragraphs, s * PER_SOURCE, rng)
        url = f"https://bench.example/{s:06d}"
        for row in rows:
            row["url"] = url + row["url"]
        store._db.replace(url, title, CRAWLED, rows)
    return timer.seconds


def measure(path: Path, index: str, paragraphs, questions, size: int, queries: int) -> dict:
    rng = np.random.default_rng(7)
    store = SourceStore(RandomEmbedder(), path, vector_index=index)
    fill_s = fill(store, paragraphs, size) if store.status()["chunks"] == 0 else 0.0
    asked = [(unit_vector(rng.standard_normal(DIM).astype(np.float32)), analyze_query(q))
             for q in questions[:queries]]
    store.query_vector(*asked[0], k=5)  # warm: the numpy fallback reads the vectors once
    ms = harness.latencies_ms(lambda q: store.query_vector(*q, k=5), asked)
    deletes, replaces, after_write = [], [], []
    for s in range(5):
        url = f"https://bench.example/{s * 37:06d}"
        deletes.append(harness.timed(store.delete_source, url)[0])
        after_write.append(harness.timed(store.query_vector, *asked[s], k=5)[0])
        title, rows = rows_for(paragraphs, s * 37 * PER_SOURCE, rng)
        for row in rows:
            row["url"] = url + row["url"]
        replaces.append(harness.timed(store._db.replace, url, title, CRAWLED, rows)[0])
    chunks = store.status()["chunks"]
    store.close()
    # p95 as numpy's percentile computes it ("inclusive"), as this bench always has
    return {"index": index, "chunks": chunks, "fill_s": fill_s, "p50_ms": harness.median(ms),
            "p95_ms": harness.percentile(ms, 95, method="inclusive"), "delete_s": max(deletes),
            "replace_s": max(replaces), "first_query_after_write_ms": 1000 * harness.median(after_write),
            "file_mb": os.path.getsize(path) / 1e6}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("jsquad", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--indexes", nargs="+", default=["sqlite-vec", "numpy"])
    args = parser.parse_args()
    paragraphs, questions = load(args.jsquad)
    print(f"{len(paragraphs)} paragraphs, {len(questions)} questions; {harness.machine()}")
    print(f"{'index':<11} {'chunks':>7} {'fill s':>7} {'p50 ms':>7} {'p95 ms':>7} {'delete s':>9} {'replace s':>10}"
          f" {'1st after write ms':>19} {'file MB':>8}")
    with harness.workdir("kb-bench-sources-") as tmp:
        for size in args.sizes:
            for index in args.indexes:
                r = measure(tmp / f"{index}-{size}.sqlite", index, paragraphs, questions, size, args.queries)
                print(f"{r['index']:<11} {r['chunks']:>7} {r['fill_s']:>7.1f} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f}"
                      f" {r['delete_s']:>9.3f} {r['replace_s']:>10.3f} {r['first_query_after_write_ms']:>19.1f}"
                      f" {r['file_mb']:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
