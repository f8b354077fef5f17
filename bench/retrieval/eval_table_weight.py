"""The table_weight sweep (docs/retrieval.md, "Sections and tables (issue 13)").

    python bench/retrieval/eval_table_weight.py CORPUS_INDEX SITE_INDEX [--weights 0.7,0.8,0.9,1.0]

CORPUS_INDEX: the reference corpus built with the real model and `--sections unanchored`;
SITE_INDEX: the sample site (site/) built the same way. For each table weight (sections at the
shipped section_weight) prints hit@1 / hit@5 / MRR@10 of the dev set, of the 40 section queries, of
the ones among them whose answer is a table chunk, and of the sample site's cell questions
(data/eval/table_cell_queries.jsonl: a question naming one cell of the 25-row table, answered by that
row's chunk), with how many of those put the row first.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import knowledge_build as kb
from knowledge_build.evaluation.evaluate import load_dataset
from knowledge_build.ranking.settings import SearchSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402


def summary(found: list[int | None]) -> str:
    m = harness.rank_metrics(found)
    return f"{m['hit@1']:.3f} / {m['hit@5']:.3f} / {m['mrr@10']:.3f}"


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("corpus_index", type=Path)
    parser.add_argument("site_index", type=Path)
    parser.add_argument("--weights", default="0.7,0.8,0.9,1.0")
    args = parser.parse_args()
    dev = load_dataset(harness.DEV_QUERIES)
    sections = load_dataset(harness.EVAL_DATA / "section_queries.jsonl")
    tables = [q for q in sections if any("#tbl-" in r for r in q.relevant)]
    cells = load_dataset(harness.EVAL_DATA / "table_cell_queries.jsonl")
    print(f"| table_weight | dev hit@1 / hit@5 / MRR | sections ({len(sections)}) | table queries ({len(tables)}) "
          f"| cell questions ({len(cells)}) | cell rows first |")
    print("|---|---|---|---|---|---|")
    for weight in (float(w) for w in args.weights.split(",")):
        settings = replace(SearchSettings(), table_weight=weight)
        corpus = kb.KnowledgeIndex.open(args.corpus_index, settings=settings)
        site = kb.KnowledgeIndex.open(args.site_index, settings=settings)
        cell_ranks = harness.first_relevant_ranks(site, cells)
        dev_ranks, section_ranks, table_ranks = (harness.first_relevant_ranks(corpus, queries)
                                                 for queries in (dev, sections, tables))
        print(f"| {weight:g} | {summary(dev_ranks)} | {summary(section_ranks)} | "
              f"{summary(table_ranks)} | {summary(cell_ranks)} | {sum(r == 1 for r in cell_ranks)} / "
              f"{len(cells)} |", flush=True)


if __name__ == "__main__":
    main()
