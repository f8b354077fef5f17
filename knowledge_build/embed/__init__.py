"""Embedders behind one protocol, and the vector cache that makes rebuilds cheap."""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from ..errors import EmbedderUnavailable


class Embedder(Protocol):
    provider: str
    model: str
    dim: int
    query_prefix: str
    passage_prefix: str

    @property
    def name(self) -> str: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def describe(embedder) -> dict:
    """The manifest's record of an embedder; two sets compare equal only if these do."""
    return {
        "provider": embedder.provider,
        "model": embedder.model,
        "dim": int(embedder.dim),
        "query_prefix": embedder.query_prefix,
        "passage_prefix": embedder.passage_prefix,
    }


def embedder_key(info: dict) -> str:
    return f"{info['provider']}:{info['model']}:{info['dim']}"


def get_embedder(name: str = "local", **options) -> Embedder:
    if name == "local":
        from .local import LocalEmbedder

        return LocalEmbedder(**options)
    raise EmbedderUnavailable(f"unknown embedder {name!r}. Available: local.")


__all__ = ["Embedder", "describe", "embedder_key", "get_embedder"]
