"""Retrieval of artifact schema 2 against schema 1 on the same build inputs (issue 16).

    python bench/retrieval/compare_schemas.py --site ../shared/corpus/school_asset \\
        --datasets ../shared/eval/dev_queries.jsonl data/eval/corpus_queries.jsonl \\
                   data/eval/section_queries.jsonl \\
        [--jsquad ../shared/corpus/jsquad/valid-v1.3.json] [--cache-dir DIR] [--format json]

Each site is built twice from the same caches, once per schema (the second build embeds nothing),
both sets are opened, and every dataset is evaluated on both (hybrid, k = 5, the shipped settings,
the real model). Both indexes get the same query vector for the same text, so the rows differ only
in what the schemas store (fp16 vectors and postings against float32 vectors and token lists).
The last column is the largest absolute difference of the four metrics; the issue allows 0.005.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import knowledge_build as kb
from knowledge_build.evaluation.evaluate import evaluate, load_dataset
from knowledge_build.evaluation.squad import convert_squad

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

METRICS = ("hit@1", "hit@5", "mrr@10", "ndcg@10")
ALLOWED = 0.005


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--site", type=Path, help="a site directory (built HTML or Jekyll sources)")
    parser.add_argument("--datasets", type=Path, nargs="*", default=[], help="labelled queries for --site")
    parser.add_argument("--jsquad", type=Path, help="JSQuAD valid JSON: converted, built and evaluated too")
    parser.add_argument("--cache-dir", type=Path, default=None, help="vector and token caches (default: the tool's)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args()
    if not args.site and not args.jsquad:
        parser.error("give --site (with --datasets) and/or --jsquad")
    rows = []
    with harness.workdir("kb-compare-schemas-") as work:
        if args.site:
            rows += compare(args.site, [(p.name, load_dataset(p)) for p in args.datasets], work / "site", args)
        if args.jsquad:
            converted = convert_squad(args.jsquad, work / "jsquad-site")
            label = f"JSQuAD valid, {converted.paragraphs} paragraphs"
            rows += compare(converted.site, [(label, load_dataset(converted.queries))], work / "jsquad", args)
    worst = max((row["max_delta"] for row in rows), default=0.0)
    if args.format == "json":
        print(json.dumps({"rows": rows, "max_delta": worst, "allowed": ALLOWED}, ensure_ascii=False, indent=2))
    else:
        print("| set | schema 1: hit@1 / hit@5 / MRR@10 / nDCG@10 | schema 2 | max abs. difference |")
        print("|---|---|---|---|")
        for row in rows:
            print(f"| {row['set']} ({row['queries']}) | {_metrics(row['schema 1'])} | {_metrics(row['schema 2'])} "
                  f"| {row['max_delta']:.4f} |")
        print(f"largest difference {worst:.4f} (allowed {ALLOWED})")
    return 0 if worst <= ALLOWED else 1


def compare(site: Path, datasets, work: Path, args) -> list[dict]:
    indexes = {}
    for schema in (1, 2):
        config = kb.load_config(site=site, env={}).with_overrides(
            output=work / f"v{schema}", artifact_schema=schema, cache_dir=args.cache_dir)
        result = kb.build(config, progress=args.format == "text")
        print(f"{site}: schema {schema} built, {len(result.chunks)} chunks, "
              f"{result.embed_stats.embedded} embedded", file=sys.stderr, flush=True)
        indexes[schema] = kb.KnowledgeIndex.open(result.output)
    # One model call per query text for both indexes: both rank with exactly the same vector.
    harness.record_query_vectors(indexes[1].embedder, indexes[2].embedder, reuse=True)
    rows = []
    for name, queries in datasets:
        row = {"set": name, "queries": len(queries)}
        for schema, index in indexes.items():
            report = evaluate(index, queries, k=5, mode="hybrid")
            row[f"schema {schema}"] = {m: report.metrics[m] for m in METRICS}
        row["max_delta"] = max(abs(row["schema 1"][m] - row["schema 2"][m]) for m in METRICS)
        rows.append(row)
    return rows


def _metrics(m: dict) -> str:
    return " / ".join(f"{m[name]:.4f}" for name in METRICS)


if __name__ == "__main__":
    raise SystemExit(main())
