"""Off-topic queries versus on-topic ones: how often the calibrated relevance says "nothing
relevant" for the former and "relevant" for the correct answers of the latter, at the shipped
threshold and around it (docs/retrieval.md, "Off-topic queries and relevance").

    knowledge-build build --site ../shared/corpus/school_asset --output /tmp/corpus/v1
    python bench/retrieval/bench_offtopic.py /tmp/corpus/v1 --offtopic data/eval/offtopic_queries.jsonl \\
        data/eval/offtopic_heldout.jsonl --datasets ../shared/eval/dev_queries.jsonl data/eval/corpus_queries.jsonl

An off-topic file holds {"qid", "query"} lines (nothing is relevant, so it is no eval dataset): a
query counts as rejected when none of its top 5 results is relevant. A dataset is an eval dataset:
each labelled answer found in the top 5 counts as kept when it is marked relevant.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_outside_boxes: its is_answer
import harness  # noqa: E402

THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
K = 5


def best_relevance(index, path: Path) -> list[float]:
    """Per off-topic query: the highest relevance among its top K results."""
    return [max((r.relevance for r in index.search(item["query"], k=K)), default=0.0) for item in harness.read_jsonl(path)]


def answer_relevance(index, path: Path) -> tuple[list[float], list[float]]:
    """Relevance of every labelled answer found in the top K, and of correct top-1 answers. A line
    is labelled by chunk ids (`relevant`) or by page and snippet (`material`, `snippet`: the
    outside-box questions, judged as bench_outside_boxes.py judges them)."""
    found, first = [], []
    for item in harness.read_jsonl(path):
        results = index.search(item["query"], k=K)
        correct = [_is_correct(index, r, item) for r in results]
        found += [r.relevance for r, ok in zip(results, correct) if ok]
        if results and correct[0]:
            first.append(results[0].relevance)
    return found, first


def _is_correct(index, result, item: dict) -> bool:
    ids = [result.id, *(sub["id"] for sub in getattr(result, "sub_results", ()) or ())]
    if "relevant" in item:
        return any(i in item["relevant"] for i in ids)
    from bench_outside_boxes import is_answer

    return any(is_answer(c.material, f"{c.title}\n{c.content}", item) for c in map(index.get, ids))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("index", type=Path)
    parser.add_argument("--offtopic", type=Path, nargs="+", required=True)
    parser.add_argument("--datasets", type=Path, nargs="+", default=[])
    args = parser.parse_args()

    from knowledge_build import KnowledgeIndex

    index = KnowledgeIndex.open(args.index)
    off = {p.stem: best_relevance(index, p) for p in args.offtopic}
    on = {p.stem: answer_relevance(index, p) for p in args.datasets}
    head = [f"{n}: off-topic rejected" for n in off] + [f"{n}: answers in top {K} kept" for n in on] + \
        [f"{n}: correct top-1 kept" for n in on]
    print("| relevance >= | " + " | ".join(head) + " |\n|---|" + "---|" * len(head))
    for t in THRESHOLDS:
        cells = [f"{sum(v < t for v in vals)}/{len(vals)} ({sum(v < t for v in vals) / len(vals):.1%})"
                 for vals in off.values()]
        for part in (0, 1):
            cells += [f"{sum(v >= t for v in vals[part])}/{len(vals[part])} "
                      f"({sum(v >= t for v in vals[part]) / max(1, len(vals[part])):.1%})" for vals in on.values()]
        print(f"| {t:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
