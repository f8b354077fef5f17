"""Retrieval on JGLUE JSQuAD (valid): dense, lexical and hybrid on 4,442 questions.

    python bench/bench_jsquad.py ../shared/corpus/jsquad/valid-v1.3.json [--cache-dir DIR]

Converts the set with `convert-squad`, builds it (the first run embeds 1,145 paragraphs,
a few minutes on 2 cores; later runs use the vector cache) and evaluates each mode.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import knowledge_build as kb
from knowledge_build.evaluate import evaluate, load_dataset
from knowledge_build.squad import convert_squad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        converted = convert_squad(args.source, Path(work))
        result = kb.build(kb.load_config(site=converted.site, cache_dir=args.cache_dir, env={}), progress=True)
        print(f"{converted.paragraphs} paragraphs, {converted.questions} questions; "
              f"build {result.seconds:.1f} s ({result.embed_stats.embedded} embedded)")
        index = kb.KnowledgeIndex.open(result.output)
        queries = load_dataset(converted.queries)
        print("| mode | hit@1 | hit@5 | hit@10 | MRR@10 | nDCG@10 | p50 ms |")
        print("|---|---|---|---|---|---|---|")
        rrf = dataclasses.replace(index.settings, fusion="rrf", channel_weights={"dense": 1.0, "lexical": 1.0})
        for label, mode, settings in (("dense", "dense", index.settings), ("lexical", "lexical", index.settings),
                                      ("hybrid (shipped)", "hybrid", index.settings),
                                      ("hybrid with RRF k=60, weights 1/1", "hybrid", rrf)):
            index.settings = settings
            report = evaluate(index, queries, k=5, mode=mode)
            m = report.metrics
            print(f"| {label} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | {m['mrr@10']:.3f} | "
                  f"{m['ndcg@10']:.3f} | {report.latency_ms['p50']} |", flush=True)


if __name__ == "__main__":
    main()
