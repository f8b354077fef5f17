"""Vector cache keyed by (embedder, content_hash), in SQLite.

Each batch is committed as soon as it is embedded, so an interrupted build resumes
where it stopped; a rebuild with no content change embeds nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..keyed_sqlite import open_keyed, select_keys

_COLUMNS = ("vectors", "embedder", "content_hash", "vector")  # table, recipe, key, value


class VectorCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._db = open_keyed(self.path, *_COLUMNS[:3], "vector BLOB")

    def get_many(self, embedder: str, hashes: list[str], dim: int) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for key, blob in select_keys(self._db, *_COLUMNS, embedder, hashes):
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape == (dim,):
                found[key] = vector
        return found

    def known(self, embedder: str, hashes: list[str], dim: int) -> set[str]:
        """Which of these hashes have a vector of `dim` floats (read without reading the vectors)."""
        return {key for key, size in select_keys(self._db, "vectors", "embedder", "content_hash",
                                                  "length(vector)", embedder, hashes) if size == dim * 4}

    def put_many(self, embedder: str, items: dict[str, np.ndarray]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (embedder, content_hash, vector) VALUES (?, ?, ?)",
                [(embedder, key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in items.items()],
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
