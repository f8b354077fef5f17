"""Off-topic queries versus on-topic ones: the top result's similarity and score, and what a
similarity threshold would keep or drop (docs/retrieval.md, "Off-topic queries").

    knowledge-build build --site ../shared/corpus/school_asset --output /tmp/corpus/v1
    python bench/bench_offtopic.py /tmp/corpus/v1 data/eval/offtopic_queries.jsonl \\
        ../shared/eval/dev_queries.jsonl data/eval/corpus_queries.jsonl

The off-topic file holds {"qid", "query"} lines (nothing is relevant, so it is no eval dataset);
each further file is an eval dataset whose correct top-1 answers are the on-topic side.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

THRESHOLDS = (0.78, 0.80, 0.81, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f} (n={len(values)})"


def top_results(index, path: Path, labelled: bool) -> list[dict]:
    rows = []
    for item in _lines(path):
        top = index.search(item["query"], k=1)[0]
        ok = top.id in item["relevant"] if labelled else False
        rows.append({"qid": item["qid"], "similarity": top.similarity, "score": top.score, "correct": ok})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path)
    parser.add_argument("offtopic", type=Path)
    parser.add_argument("datasets", type=Path, nargs="+")
    args = parser.parse_args()

    from knowledge_build import KnowledgeIndex

    index = KnowledgeIndex.open(args.index)
    off = top_results(index, args.offtopic, labelled=False)
    sets = {path.stem: top_results(index, path, labelled=True) for path in args.datasets}
    print("| set | similarity min / median / max | score min / median / max |\n|---|---|---|")
    print(f"| off-topic | {_spread([r['similarity'] for r in off])} | {_spread([r['score'] for r in off])} |")
    for name, rows in sets.items():
        right = [r for r in rows if r["correct"]]
        print(f"| {name}, correct top-1 | {_spread([r['similarity'] for r in right])} | "
              f"{_spread([r['score'] for r in right])} |")
    print("\n| similarity >= | off-topic dropped | " + " | ".join(f"{n} correct kept" for n in sets) + " |")
    print("|---|---|" + "---|" * len(sets))
    for t in THRESHOLDS:
        kept = [f"{sum(r['correct'] and r['similarity'] >= t for r in rows)}/{sum(r['correct'] for r in rows)}"
                for rows in sets.values()]
        print(f"| {t:.2f} | {sum(r['similarity'] < t for r in off)}/{len(off)} | " + " | ".join(kept) + " |")


if __name__ == "__main__":
    main()
