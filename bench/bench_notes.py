"""Notes search at 2,000 and 20,000 notes (the MCP tool knowledge_query): the indexed store
(store/notes_index.py, both vector indexes) against the code it replaced, in the same run.

    python bench/bench_notes.py ../shared/corpus/jsquad/valid-v1.3.json [--sizes 2000 20000] [--queries 100]
        [--before 63b9e28] [--before-queries 5]

Notes are JSQuAD paragraphs (one each, the store's own analysis, text_ja.analyze, done once per
paragraph) with random unit vectors of the local model's dimension (384), in 10 categories; the
store is filled through its index so the bench does not spend minutes re-analysing repeats.
Queries are JSQuAD questions through NoteStore.search (analyze_query included) with random query
vectors; "filtered" adds category=. "before" is store/notes.py of the git revision --before
(searching every row, BM25 models rebuilt per query), loaded from git and run on the same file.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import tempfile
from pathlib import Path

import harness
import numpy as np
from harness import DIM, RandomEmbedder

from knowledge_build.store.notes import NoteStore
from knowledge_build.text.ja import analyze

CATEGORIES = 10
WHEN = "2026-11-01T00:00:00+00:00"


def fill(store: NoteStore, paragraphs, size: int, tokens: dict) -> float:
    rng, timer = np.random.default_rng(1), harness.Timer()
    for start in range(0, size, 500):
        rows = []
        for n in range(start, min(size, start + 500)):
            title, text = paragraphs[n % len(paragraphs)]
            if n % len(paragraphs) not in tokens:
                tokens[n % len(paragraphs)] = json.dumps(analyze(f"{title}\n{text}"), ensure_ascii=False)
            vector = rng.standard_normal(DIM).astype(np.float32)
            rows.append((f"note-{n:06d}", "note", None, None, title, text, "[]", f"category {n % CATEGORIES}",
                         "anonymous", WHEN, WHEN, (vector / np.linalg.norm(vector)).tobytes(),
                         tokens[n % len(paragraphs)]))
        with store._transaction() as cur:
            store._index.insert(cur, rows)
    return timer.seconds


def old_store_class(revision: str):
    """NoteStore of store/notes.py at `revision`, imported from git as a module of the package."""
    source = subprocess.run(["git", "show", f"{revision}:knowledge_build/store/notes.py"], check=True,
                            capture_output=True, text=True, cwd=harness.REPO).stdout
    path = Path(tempfile.mkdtemp()) / "notes_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("knowledge_build.store.notes_before", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NoteStore


def p50_ms(store, questions: list[str], **filters) -> float:
    store.search(questions[0], top_k=5, **filters)  # warm: the numpy fallback reads the vectors once
    return harness.median(harness.latencies_ms(lambda question: store.search(question, top_k=5, **filters), questions))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("jsquad", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--before", default="63b9e28", help="git revision of the code before the indexes")
    parser.add_argument("--before-queries", type=int, default=5)
    args = parser.parse_args()
    paragraphs, questions = harness.jsquad_paragraphs(args.jsquad)
    before = old_store_class(args.before) if args.before else None
    print(f"{len(paragraphs)} paragraphs; {harness.machine()}")
    print(f"{'store':<22} {'notes':>6} {'fill s':>7} {'open s':>7} {'p50 ms':>8} {'filtered p50 ms':>16}")
    tokens: dict = {}
    with harness.workdir("kb-bench-notes-") as tmp:
        for size in args.sizes:
            path = tmp / f"notes-{size}.sqlite"
            store = NoteStore(RandomEmbedder(), path, vector_index="numpy")
            fill_s = fill(store, paragraphs, size, tokens)
            store.close()
            for index in ("sqlite-vec", "numpy"):
                # sqlite-vec: the first open builds the vec0 table
                open_s, store = harness.timed(NoteStore, RandomEmbedder(), path, vector_index=index)
                print(f"{'after (' + index + ')':<22} {size:>6} {fill_s:>7.1f} {open_s:>7.2f}"
                      f" {p50_ms(store, questions[:args.queries]):>8.1f}"
                      f" {p50_ms(store, questions[:args.queries], category='category 3'):>16.1f}", flush=True)
                store.close()
            if before is not None:
                store = before(RandomEmbedder(), path)
                picked = questions[:args.before_queries]
                print(f"{'before (' + args.before + ')':<22} {size:>6} {'':>7} {'':>7} {p50_ms(store, picked):>8.1f}"
                      f" {p50_ms(store, picked, category='category 3'):>16.1f}", flush=True)
                store.close()


if __name__ == "__main__":
    main()
