"""Embed chunk texts through the cache: only hashes the cache lacks reach the model.

The embedder decides how to group the texts (see `embed_batches` in embed/__init__.py); every
group is committed to the cache as soon as it arrives, so an interrupted build resumes from there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from . import describe, embedder_key
from .cache import VectorCache

log = logging.getLogger("knowledge_build.embed")
FALLBACK_BATCH_SIZE = 16


@dataclass
class EmbedStats:
    total: int = 0
    cached: int = 0
    embedded: int = 0


def embed_with_cache(embedder, texts_by_hash: dict[str, str], cache: VectorCache | None,
                     batch_size: int | None = None, progress: bool = False) -> tuple[dict[str, np.ndarray], EmbedStats]:
    """Vectors for every hash. `batch_size` only feeds embedders that do not batch themselves."""
    key = embedder_key(describe(embedder))
    stats = EmbedStats(total=len(texts_by_hash))
    vectors = cache.get_many(key, list(texts_by_hash), embedder.dim) if cache else {}
    stats.cached = len(vectors)
    # Length-sorted: similar lengths pad least and share a request's token budget (docs/benchmarks.md).
    todo = sorted((h for h in texts_by_hash if h not in vectors), key=lambda h: (len(texts_by_hash[h]), h))
    texts = [texts_by_hash[h] for h in todo]
    if todo and hasattr(embedder, "cost_estimate"):
        tokens, dollars = embedder.cost_estimate(texts)
        price = f", about ${dollars:.4f}" if dollars is not None else ""
        log.warning("embedding %d chunks with %s: about %d tokens%s", len(todo), embedder.name, tokens, price)
    bar = _progress(len(todo), progress)
    try:
        for positions, fresh in _groups(embedder, texts, batch_size):
            new = {todo[p]: fresh[i] for i, p in enumerate(positions)}
            if cache:
                cache.put_many(key, new)
            vectors.update(new)
            stats.embedded += len(new)
            bar.update(len(new))
    finally:
        bar.close()
    return vectors, stats


def _groups(embedder, texts: list[str], batch_size: int | None):
    if hasattr(embedder, "embed_batches"):
        return embedder.embed_batches(texts)
    size = batch_size or FALLBACK_BATCH_SIZE
    return ((list(range(start, min(start + size, len(texts)))), embedder.embed_documents(texts[start:start + size]))
            for start in range(0, len(texts), size))


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
