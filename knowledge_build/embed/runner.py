"""Embed chunk texts through the cache: only hashes the cache lacks reach the model."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from . import describe, embedder_key
from .cache import VectorCache

log = logging.getLogger("knowledge_build.embed")


@dataclass
class EmbedStats:
    total: int = 0
    cached: int = 0
    embedded: int = 0


def embed_with_cache(embedder, texts_by_hash: dict[str, str], cache: VectorCache | None,
                     batch_size: int = 16, progress: bool = False) -> tuple[dict[str, np.ndarray], EmbedStats]:
    key = embedder_key(describe(embedder))
    stats = EmbedStats(total=len(texts_by_hash))
    vectors = cache.get_many(key, list(texts_by_hash), embedder.dim) if cache else {}
    stats.cached = len(vectors)
    # Length-sorted batches: similar lengths pad least (see docs/benchmarks.md).
    todo = sorted((h for h in texts_by_hash if h not in vectors), key=lambda h: (len(texts_by_hash[h]), h))
    if todo and hasattr(embedder, "cost_estimate"):
        tokens, dollars = embedder.cost_estimate([texts_by_hash[h] for h in todo])
        price = f", about ${dollars:.4f}" if dollars is not None else ""
        log.warning("embedding %d chunks with %s: about %d tokens%s", len(todo), embedder.name, tokens, price)
    bar = _progress(len(todo), progress)
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        fresh = embedder.embed_documents([texts_by_hash[h] for h in batch])
        new = {h: fresh[i] for i, h in enumerate(batch)}
        if cache:
            cache.put_many(key, new)
        vectors.update(new)
        stats.embedded += len(batch)
        bar.update(len(batch))
    bar.close()
    return vectors, stats


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return _NoProgress()  # and tqdm is not even imported (a no-change rebuild)
    from tqdm import tqdm

    return tqdm(total=total, desc="embedding", unit="chunk", disable=not enabled or total == 0, leave=False)
