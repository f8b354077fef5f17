"""Retrieval with sections off / unanchored / all, and the section_weight sweep (docs/retrieval.md,
"Sections and tables (issue 13)").

    python bench/retrieval/eval_sections.py OFF_INDEX UNANCHORED_INDEX ALL_INDEX [--dev FILE]
                                            [--sections FILE] [--weights 0.5,0.6,…]

Each index is the reference corpus built with the real model and that `--sections` setting (the
same cache, so the boxes' vectors are shared). Prints hit@1, hit@5 and MRR@10 of the dev set and of
the section queries (data/eval/section_queries.jsonl) for every index and section weight (tables at
the shipped table_weight; set another with SearchSettings in a copy of this script). A section query
whose relevant chunks are not in an index (a section that holds an anchored box is a chunk only
with `all`) counts as a miss there, so every setting is scored on the same 40 queries.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import knowledge_build as kb
from knowledge_build.evaluation.evaluate import load_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402


def scores(index, queries) -> dict:
    known = {c.id for c in index.chunks}
    usable = [replace(q, relevant=tuple(r for r in q.relevant if r in known) or ("(not indexed)",)) for q in queries]
    return harness.rank_metrics(harness.first_relevant_ranks(index, usable))  # as `knowledge-build eval` scores them


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("indexes", type=Path, nargs=3, metavar="INDEX")
    parser.add_argument("--dev", type=Path, default=harness.DEV_QUERIES)
    parser.add_argument("--sections", type=Path, default=harness.EVAL_DATA / "section_queries.jsonl")
    parser.add_argument("--weights", default="0.5,0.6,0.7,0.8,0.9,1.0")
    args = parser.parse_args()
    dev, sections = load_dataset(args.dev), load_dataset(args.sections)
    print("| setting | section_weight | dev hit@1 | dev hit@5 | dev MRR@10 | sections hit@1 | sections hit@5 | sections MRR@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, path in zip(("off", "unanchored", "all"), args.indexes):
        weights = [1.0] if name == "off" else [float(w) for w in args.weights.split(",")]
        for weight in weights:
            index = kb.KnowledgeIndex.open(path, settings=kb.SearchSettings(section_weight=weight))
            d, s = scores(index, dev), scores(index, sections)
            print(f"| {name} | {weight if name != 'off' else '–'} | {d['hit@1']:.3f} | {d['hit@5']:.3f} | "
                  f"{d['mrr@10']:.3f} | {s['hit@1']:.3f} | {s['hit@5']:.3f} | {s['mrr@10']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
