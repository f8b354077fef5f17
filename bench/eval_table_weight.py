"""The table_weight sweep (docs/retrieval.md, "Sections and tables (issue 13)").

    python bench/eval_table_weight.py CORPUS_INDEX SITE_INDEX [--weights 0.7,0.8,0.9,1.0]

CORPUS_INDEX: the reference corpus built with the real model and `--sections unanchored`;
SITE_INDEX: the sample site (site/) built the same way. For each table weight (sections at the
shipped section_weight) prints hit@1 / hit@5 / MRR@10 of the dev set, of the 40 section queries, of
the ones among them whose answer is a table chunk, and of the sample site's cell questions
(data/eval/table_cell_queries.jsonl: a question naming one cell of the 25-row table, answered by that
row's chunk), with how many of those put the row first.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import knowledge_build as kb
from knowledge_build.evaluation.evaluate import load_dataset
from knowledge_build.search.ranking import SearchSettings

HERE = Path(__file__).resolve().parent


def ranks(index, queries) -> list[int | None]:
    found = []
    for query in queries:
        retrieved = [r.id for r in index.search(query.query, k=10)]
        found.append(next((i for i, r in enumerate(retrieved, 1) if r in query.relevant), None))
    return found


def summary(found: list[int | None]) -> str:
    n = len(found)
    hit1 = sum(r == 1 for r in found if r) / n
    hit5 = sum(1 for r in found if r and r <= 5) / n
    mrr = sum(1 / r for r in found if r) / n
    return f"{hit1:.3f} / {hit5:.3f} / {mrr:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus_index", type=Path)
    parser.add_argument("site_index", type=Path)
    parser.add_argument("--weights", default="0.7,0.8,0.9,1.0")
    args = parser.parse_args()
    dev = load_dataset(HERE.parent.parent / "shared" / "eval" / "dev_queries.jsonl")
    sections = load_dataset(HERE.parent / "data" / "eval" / "section_queries.jsonl")
    tables = [q for q in sections if any("#tbl-" in r for r in q.relevant)]
    cells = load_dataset(HERE.parent / "data" / "eval" / "table_cell_queries.jsonl")
    print(f"| table_weight | dev hit@1 / hit@5 / MRR | sections ({len(sections)}) | table queries ({len(tables)}) "
          f"| cell questions ({len(cells)}) | cell rows first |")
    print("|---|---|---|---|---|---|")
    for weight in (float(w) for w in args.weights.split(",")):
        settings = replace(SearchSettings(), table_weight=weight)
        corpus = kb.KnowledgeIndex.open(args.corpus_index, settings=settings)
        site = kb.KnowledgeIndex.open(args.site_index, settings=settings)
        cell_ranks = ranks(site, cells)
        print(f"| {weight:g} | {summary(ranks(corpus, dev))} | {summary(ranks(corpus, sections))} | "
              f"{summary(ranks(corpus, tables))} | {summary(cell_ranks)} | {sum(r == 1 for r in cell_ranks)} / "
              f"{len(cells)} |", flush=True)


if __name__ == "__main__":
    main()
