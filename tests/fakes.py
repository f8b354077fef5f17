"""The deterministic fake embedders of the tests, in a module of their own: tests/fake_cli.py (the CLI in a
subprocess, behind the fake embedder) imports them without pytest and the fixtures (0.1 CPU-s a process)."""

from __future__ import annotations

import hashlib
import re

import numpy as np


class FakeEmbedder:
    """Deterministic bag-of-character-bigrams vectors: similar texts get similar vectors."""

    provider = "fake"
    model = "char-bigram-hash/1"
    dim = 64
    query_prefix = "query: "
    passage_prefix = "passage: "

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.documents_embedded = 0
        self.calls = 0

    @property
    def name(self):
        return f"{self.provider}:{self.model}"

    _hashes: dict[str, int] = {}  # bigram -> its hash, for every instance: a run meets a few thousand

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        compact = re.sub(r"\s+", "", text)
        hashes = self._hashes
        for i in range(len(compact) - 1):
            bigram = compact[i:i + 2]
            number = hashes.get(bigram)
            if number is None:
                number = hashes[bigram] = int.from_bytes(hashlib.blake2b(bigram.encode(), digest_size=4).digest(),
                                                         "little")
            vector[number % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_documents(self, texts):
        self.calls += 1
        self.documents_embedded += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text):
        return self._vector(text)


class LocalLookalike(FakeEmbedder):
    """Fake vectors recorded under the local model's name and size: a set that `validate` and a
    subprocess `search` accept as the local model's (both create that embedder), embedded in no time.
    Its vectors are cached under the local model's name: use it only with a private cache directory."""

    provider = "local"
    model = "multilingual-e5-small-q4"

    def __init__(self):
        super().__init__(dim=384)
