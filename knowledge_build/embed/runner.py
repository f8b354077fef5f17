"""Embed chunk texts through the cache: only hashes the cache lacks reach the model.

The embedder decides how to group the texts (see `embed_batches` in embed/__init__.py); every
group is committed to the cache as soon as it arrives, so an interrupted build resumes from there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..progress import Progress
from . import describe, embedder_key
from .cache import VectorCache

log = logging.getLogger("knowledge_build.embed")
FALLBACK_BATCH_SIZE = 16


@dataclass
class EmbedStats:
    total: int = 0
    cached: int = 0
    embedded: int = 0


WINDOW = 4096  # texts built, vectors read from the cache, per step of embed_rows (a multiple of 16 and 256)


def embed_with_cache(embedder, texts_by_hash: dict[str, str], cache: VectorCache | None,
                     batch_size: int | None = None, progress: bool = False) -> tuple[dict[str, np.ndarray], EmbedStats]:
    """Vectors for every hash. `batch_size` only feeds embedders that do not batch themselves."""
    hashes = list(texts_by_hash)
    matrix = np.zeros((len(hashes), embedder.dim), np.float32)
    stats = embed_rows(embedder, hashes, lambda row: texts_by_hash[hashes[row]], matrix, cache, batch_size, progress)
    return {h: matrix[row] for row, h in enumerate(hashes)}, stats


def embed_rows(embedder, hashes: Sequence[str], text_of: Callable[[int], str], out, cache: VectorCache | None,
               batch_size: int | None = None, progress: bool = False, stage: str = "embedding",
               unit: str = "chunk") -> EmbedStats:
    """Fill out[row] with the vector of each row (content hash hashes[row], text text_of(row)); `out`
    is any (rows, dim) array: numpy, or a memory map of the file being written. Vectors the cache has
    are read WINDOW rows at a time, the others are embedded (each text made when its window is sent)
    and committed to the cache group by group, so memory holds `out`, the hashes and one window."""
    key = embedder_key(describe(embedder))
    first: dict[str, int] = {}  # hash -> first row: a text shared by rows is embedded once
    copies: list[tuple[int, int]] = []
    for row, h in enumerate(hashes):
        if first.setdefault(h, row) != row:
            copies.append((row, first[h]))
    stats = EmbedStats(total=len(first))
    known = cache.known(key, list(first), embedder.dim) if cache else set()
    _fill_known(cache, key, embedder.dim, [(h, first[h]) for h in first if h in known], out)
    stats.cached = len(known)
    # Length-sorted: similar lengths pad least and share a request's token budget (docs/benchmarks.md).
    todo = sorted((len(text_of(row)), h, row) for h, row in first.items() if h not in known)
    _estimate_cost(embedder, [row for _, _, row in todo], text_of)
    bar = Progress(stage, len(todo), unit, progress)
    try:
        for start in range(0, len(todo), WINDOW):
            window = todo[start:start + WINDOW]
            for positions, fresh in _groups(embedder, [text_of(row) for _, _, row in window], batch_size):
                for i, p in enumerate(positions):
                    out[window[p][2]] = fresh[i]
                if cache:
                    cache.put_many(key, {window[p][1]: fresh[i] for i, p in enumerate(positions)})
                stats.embedded += len(positions)
                bar.update(len(positions))
    finally:
        bar.close()
    for row, source in copies:
        out[row] = out[source]
    return stats


def _fill_known(cache: VectorCache | None, key: str, dim: int, rows: list[tuple[str, int]], out) -> None:
    for start in range(0, len(rows), WINDOW):
        window = dict(rows[start:start + WINDOW])
        for h, vector in cache.get_many(key, list(window), dim).items():
            out[window[h]] = vector


def _estimate_cost(embedder, rows: list[int], text_of: Callable[[int], str]) -> None:
    """A paid embedder's estimate of what the texts to embed will cost, logged before any request."""
    if not rows or not hasattr(embedder, "cost_estimate"):
        return
    tokens, dollars = 0, 0.0
    for start in range(0, len(rows), WINDOW):
        part_tokens, part_dollars = embedder.cost_estimate([text_of(row) for row in rows[start:start + WINDOW]])
        tokens += part_tokens
        dollars = None if part_dollars is None or dollars is None else dollars + part_dollars
    price = f", about ${dollars:.4f}" if dollars is not None else ""
    log.warning("embedding %d chunks with %s: about %d tokens%s", len(rows), embedder.name, tokens, price)


def _groups(embedder, texts: list[str], batch_size: int | None):
    if hasattr(embedder, "embed_batches"):
        return embedder.embed_batches(texts)
    size = batch_size or FALLBACK_BATCH_SIZE
    return ((list(range(start, min(start + size, len(texts)))), embedder.embed_documents(texts[start:start + size]))
            for start in range(0, len(texts), size))
