"""Could the search box say "nothing on this site answers that"? Its evidence, measured on the off-topic sets and
the labelled sets (docs/retrieval.md, "Nothing on this site answers that in the box"; issue 41, item 6).

    knowledge-build build --site ../shared/corpus/school_asset --output /tmp/corpus/v2
    python bench/retrieval/bench_box_relevance.py /tmp/corpus/v2 [--unknown 0 0.15 0.3 1]

Through the box's Python mirror (browser/search.py), its first 5 results per query:
- the dense score: percentiles of the best of the first five results' scores, per set;
- the words' coverage, ranking/relevance.py's rule with no cosine (coverage decides): per field, each query term's
  BM25 saturation in the row (its stored score over idf × (k1 + 1), idf from the term's rows in the field) weighted
  by its idf, over the idf the query's terms reach; the best field. `--unknown w`: each run of the query's
  characters that no site word covers (not a run of one or two hiragana) also counts, with w × the highest idf.
  An off-topic query is rejected when no result is relevant (relevance ≥ the threshold); a labelled answer found
  in the top 5 is kept when it is relevant.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

OFFTOPIC = ["offtopic_queries.jsonl", "offtopic_heldout.jsonl", "offtopic_sites.jsonl"]
LABELLED = [harness.DEV_QUERIES, harness.EVAL_DATA / "corpus_queries.jsonl",
            harness.EVAL_DATA / "paraphrase_queries.jsonl", harness.EVAL_DATA / "variant_queries.jsonl"]
PARTICLES = re.compile(r"^[\u3041-\u309f]{1,2}$")


class Judge:
    def __init__(self, box, unknown: float):
        from knowledge_build.ranking.settings import K1, SearchSettings

        self.box, self.unknown, self.k1, self.settings = box, unknown, K1, SearchSettings()
        self.n = box.entry["rows"]
        self.top = self.idf(0)

    def idf(self, df: int) -> float:
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def uncovered(self, query: str, terms: list[str]) -> list[str]:
        from knowledge_build.browser.analysis import fold

        text = fold(query)
        covered = [False] * len(text)
        for term in terms:
            for found in re.finditer(re.escape(term), text):
                covered[found.start():found.end()] = [True] * (found.end() - found.start())
        runs = re.findall(r"\w+", "".join(" " if c else ch for ch, c in zip(text, covered)))
        return [r for r in runs if not PARTICLES.match(r)]

    def coverage(self, query: str, rows: list[int]) -> list[float]:
        from knowledge_build.browser.bundle import FIELDS

        body, reading = self.box.terms(query)
        missing = len(self.uncovered(query, body + reading)) * self.top * self.unknown
        best = [0.0] * len(rows)
        for slot, field in enumerate(FIELDS):
            terms = reading if field == "reading" else body + reading if field == "title" else body
            if not terms:
                continue
            total, found = missing, [0.0] * len(rows)
            for term in terms:
                posted, q = self.box.postings(term)[slot]
                if not posted:
                    total += self.top
                    continue
                weight = self.idf(len(posted))
                total += weight
                score = dict(zip(posted, q))
                for i, row in enumerate(rows):
                    if row in score:
                        found[i] += weight * min(1.0, score[row] * self.box.entry["scales"][slot] / (weight * (self.k1 + 1)))
            best = [max(b, f / total) for b, f in zip(best, found)]
        return best

    def relevance(self, query: str, results) -> list[float]:
        from knowledge_build.ranking.relevance import relevances

        covered = self.coverage(query, [r.row for r in results])
        return relevances([None] * len(covered), covered, self.settings)[0] if results else []


def percentiles(values: list[float]) -> str:
    values = sorted(values)
    return " ".join(f"p{int(f * 100)} {values[int(len(values) * f)]:.3f}" for f in (0.1, 0.25, 0.5, 0.75, 0.9))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("index", type=Path, help="a built set with the search box's bundle")
    parser.add_argument("--unknown", type=float, nargs="+", default=[0.0, 0.15, 0.3, 1.0])
    args = parser.parse_args()
    from knowledge_build.browser.search import BrowserIndex

    box = BrowserIndex(args.index)
    row_of = {json.loads(line)["id"]: i for i, line in
              enumerate((args.index / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines())}
    threshold = Judge(box, 0).settings.relevance_threshold
    sets = {name: harness.read_jsonl(harness.EVAL_DATA / name) for name in OFFTOPIC}
    sets.update({Path(p).name: [q for q in harness.read_jsonl(p) if q.get("relevant")] for p in LABELLED})
    results = {name: [box.search(q["query"], k=5) for q in items] for name, items in sets.items()}
    print("the dense score, best of the first five results:")
    for name, items in sets.items():
        best = [max((box.dense_scores(box.terms(q["query"])[0]).get(r.row, 0.0) for r in found), default=0.0)
                for q, found in zip(items, results[name])]
        print(f"  {name:28} {percentiles(best)}")
    for unknown in args.unknown:
        judge = Judge(box, unknown)
        print(f"the words' coverage, uncovered characters at {unknown} of the highest idf:")
        for name, items in sets.items():
            judged = [judge.relevance(q["query"], found) for q, found in zip(items, results[name])]
            if name in OFFTOPIC:
                print(f"  {name:28} rejected {sum(max(r, default=0) < threshold for r in judged)} / {len(items)}")
                continue
            found = kept = 0
            for q, ranked, relevance in zip(items, results[name], judged):
                gold = {box.place[row_of[i]] for i in q["relevant"] if i in row_of}
                for r, value in zip(ranked, relevance):
                    if box.place[r.row] in gold:
                        found, kept = found + 1, kept + (value >= threshold)
            print(f"  {name:28} answers in the top 5 kept {kept} / {found}")


if __name__ == "__main__":
    main()
