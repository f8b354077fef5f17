"""Embedders behind one protocol, and the vector cache that makes rebuilds cheap.

Each embedder owns its batching: `embed_batches(texts, kind="passage")` yields (positions, vectors) per
finished model call or request (the local model: 16 texts at a time; the OpenAI client: up to 256 inputs
per request, 4 requests at a time); `kind="query"` embeds the texts as queries (the search box's dense
tables, browser/dense.py). An embedder without `embed_batches` is fed batch_size texts per
`embed_documents` call by the runner, and its queries one `embed_query` at a time.
"""

from __future__ import annotations

import os
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


PROVIDERS = ("local", "openai", "openai-compatible")


def get_embedder(name: str = "local", model: str | None = None, dimensions: int | None = None,
                 base_url: str | None = None, batch_size: int | None = None, known_dim: int | None = None,
                 timeout: float | None = None) -> Embedder:
    """An embedder by provider name. openai-compatible needs a base_url (or KB_BASE_URL, else
    OPENAI_BASE_URL); a remote
    embedder's timeout per request is `timeout`, else KB_EMBEDDING_TIMEOUT, else its default.
    batch_size None means the embedder's own (16 for local, 256 per request for OpenAI)."""
    if name == "local":
        from .local import LocalEmbedder

        return LocalEmbedder(batch_size=batch_size)
    if name in ("openai", "openai-compatible"):
        from .openai import OpenAIEmbedder

        base_url = base_url or os.environ.get("KB_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or None
        if name == "openai-compatible" and not base_url:
            raise EmbedderUnavailable("the openai-compatible embedder needs the server's URL. Fix: [[pass --base-url "
                                      "URL, or ]]set KB_BASE_URL or OPENAI_BASE_URL (or base_url in knowledge.yml), "
                                      "e.g. http://127.0.0.1:8000/v1.")
        return OpenAIEmbedder(model=model, dimensions=dimensions, base_url=base_url if name != "openai" else None,
                              batch_size=batch_size, known_dim=known_dim, timeout=timeout or _env_timeout())
    raise EmbedderUnavailable(f"unknown embedder {name!r}. Available: {', '.join(PROVIDERS)}.")


def _env_timeout() -> float | None:
    # Search opens an embedder from the manifest, without a Config: the variable must reach it too.
    value = os.environ.get("KB_EMBEDDING_TIMEOUT", "")
    if not value:
        return None
    from ..config import positive_seconds

    return positive_seconds(value, "environment (KB_EMBEDDING_TIMEOUT)")


__all__ = ["Embedder", "describe", "embedder_key", "get_embedder"]
