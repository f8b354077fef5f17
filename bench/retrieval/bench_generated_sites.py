"""Retrieval on the generated documentation site (tests/generated_sites/), per generator: hit@1, hit@5
and MRR@10 of the labelled questions for hybrid, dense and lexical search, against plain BM25 over the
same chunks (character bigrams of the NFKC, lower-cased title and text; bm25s), and the search box (its Python
mirror, browser/search.py, which the tests hold to the JavaScript) with and without its dense channel.

    python bench/retrieval/bench_generated_sites.py [--cache-dir DIR] [--generators jekyll,hugo,…]

Builds the site with each real generator (jekyll, hugo, mkdocs, sphinx-html, sphinx-dirhtml, plain; the
ones not installed are reported and left out), indexes the output as an owner would (`kb.build` with
the local model), and scores every result with the tests' `is_hit` (on the labelled page, at or under
the labelled heading). Relevance (issue 25): the share of correct top-5 hybrid answers marked
`relevant`, and of the off-topic questions (data/eval/offtopic_sites.jsonl, offtopic_queries.jsonl)
whose top 5 hold no relevant result. The figures go to docs/retrieval.md.
"""

from __future__ import annotations

import json
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests.generated_sites: the site, its generators and is_hit
sys.path.insert(0, str(ROOT / "bench"))

import harness  # noqa: E402

import knowledge_build as kb  # noqa: E402
from knowledge_build.browser.search import BrowserIndex  # noqa: E402
from tests.generated_sites.build import GENERATORS, GeneratorMissing, build_site, check_available  # noqa: E402
from tests.generated_sites.hits import is_hit, load_queries  # noqa: E402

K = 10
OFFTOPIC = (ROOT / "data" / "eval" / "offtopic_sites.jsonl", ROOT / "data" / "eval" / "offtopic_queries.jsonl")


def bigrams(text: str) -> list[str]:
    text = "".join(unicodedata.normalize("NFKC", text).lower().split())
    return [text[i:i + 2] for i in range(len(text) - 1)] or [text]


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {"hit@1": sum(r == 1 for r in ranks if r) / n, "hit@5": sum(bool(r and r <= 5) for r in ranks) / n,
            "mrr@10": sum(1 / r for r in ranks if r and r <= K) / n}


def first_hit(results: list[tuple[str, str, list]], label, site) -> int | None:
    return next((rank for rank, (url, title, parents) in enumerate(results, 1)
                 if is_hit(url, title, parents, label, site)), None)


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--generators", default=",".join(GENERATORS))
    args = parser.parse_args()
    import bm25s

    labels = load_queries()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kb-bench-gen-") as work:
        for generator in args.generators.split(","):
            try:
                check_available(generator)
            except GeneratorMissing as missing:
                print(f"{generator}: left out ({missing})")
                continue
            site = build_site(generator, Path(work) / generator)
            config = kb.load_config(site=site.output, cache_dir=args.cache_dir, env={})
            result = kb.build(config)
            index = kb.KnowledgeIndex.open(result.output)
            chunks = [json.loads(line) for line in open(result.output / "knowledge_chunks.jsonl", encoding="utf-8")]
            parents = {c["id"]: c.get("parents", []) for c in chunks}
            row = {"generator": generator, "pages": f"{result.pages['indexed']}/{result.pages['found']}",
                   "chunks": len(chunks)}
            kept = []
            for mode in ("hybrid", "dense", "lexical"):
                ranks = []
                for label in labels:
                    found = index.search(label.query, k=K, mode=mode)
                    ranks.append(first_hit([(r.url, r.title, parents.get(r.id, [])) for r in found], label, site))
                    if mode == "hybrid":
                        kept += [r.relevant for r in found[:5]
                                 if is_hit(r.url, r.title, parents.get(r.id, []), label, site)]
                row[mode] = metrics(ranks)
            for mode, dense in (("box", True), ("box_words_only", False)):  # the search box, its Python mirror
                box = BrowserIndex(result.output)
                if not dense:
                    box.entry.pop("dense", None)  # as a bundle built with search_box_dense false ranks
                ranks = []
                for label in labels:
                    found = box.search(label.query, k=K)
                    ranks.append(first_hit([(r.url, r.title, parents.get(r.id, [])) for r in found], label, site))
                row[mode] = metrics(ranks)
            offtopic = [item["query"] for path in OFFTOPIC for item in harness.read_jsonl(path)]
            rejected = sum(not any(r.relevant for r in index.search(q, k=5)) for q in offtopic)
            row["relevance"] = {"correct_relevant": f"{sum(kept)}/{len(kept)}",
                                "offtopic_rejected": f"{rejected}/{len(offtopic)}"}
            retriever = bm25s.BM25()
            retriever.index([bigrams(f"{c['title']}\n{c['content']}") for c in chunks], show_progress=False)
            ranks = []
            for label in labels:
                docs, _ = retriever.retrieve([bigrams(label.query)], k=min(K, len(chunks)), show_progress=False)
                found = [chunks[i] for i in docs[0]]
                ranks.append(first_hit([(c["url"], c["title"], c.get("parents", [])) for c in found], label, site))
            row["bm25"] = metrics(ranks)
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False))
    print(f"\n{len(labels)} questions; hit@1 / hit@5 / MRR@10\n")
    print("| generator | pages indexed | chunks | hybrid | dense | lexical | BM25 (bigrams, same chunks) "
          "| the box | the box, words only | correct top-5 relevant | off-topic rejected |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [" / ".join(f"{row[m][key]:.3f}" for key in ("hit@1", "hit@5", "mrr@10"))
                 for m in ("hybrid", "dense", "lexical", "bm25", "box", "box_words_only")]
        cells += [row["relevance"]["correct_relevant"], row["relevance"]["offtopic_rejected"]]
        print(f"| {row['generator']} | {row['pages']} | {row['chunks']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
