"""Vector cache keyed by (embedder, content_hash), in SQLite.

Each batch is committed as soon as it is embedded, so an interrupted build resumes
where it stopped; a rebuild with no content change embeds nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np


class VectorCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            " embedder TEXT NOT NULL, content_hash TEXT NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (embedder, content_hash))"
        )
        self._db.commit()

    def get_many(self, embedder: str, hashes: list[str], dim: int) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = sorted(set(hashes))
        for start in range(0, len(unique), 500):
            part = unique[start:start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT content_hash, vector FROM vectors WHERE embedder = ? AND content_hash IN ({marks})",
                [embedder, *part],
            )
            for key, blob in rows:
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (dim,):
                    found[key] = vector
        return found

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
