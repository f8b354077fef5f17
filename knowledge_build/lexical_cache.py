"""Token cache: the analysed lexical tokens of a text, keyed by (analyzer, sha256 of that text), in SQLite.

Analysing every chunk with fugashi was most of a no-change rebuild; like the vector cache, this
makes a rebuild analyse only texts it has not seen. The key hashes exactly the analysed text (not
the embedded text, which differs), and the analyzer version string invalidates every entry when
the token recipe changes. Stored beside the vector cache, in its own file, so the two never contend.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Callable

FILE_NAME = "tokens.sqlite"
_BATCH = 500  # SQLite's bound-parameter limit is well above this


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TokenCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS tokens ("
            " analyzer TEXT NOT NULL, text_hash TEXT NOT NULL, fields TEXT NOT NULL,"
            " PRIMARY KEY (analyzer, text_hash))"
        )
        self._db.commit()

    def get_many(self, analyzer: str, keys: list[str]) -> dict[str, dict[str, list[str]]]:
        found: dict[str, dict[str, list[str]]] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), _BATCH):
            part = unique[start:start + _BATCH]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT text_hash, fields FROM tokens WHERE analyzer = ? AND text_hash IN ({marks})",
                [analyzer, *part],
            )
            for key, blob in rows:
                fields = _decode(blob)
                if fields is not None:  # an unreadable entry is a miss: analysed again, rewritten
                    found[key] = fields
        return found

    def put_many(self, analyzer: str, items: dict[str, dict[str, list[str]]]) -> None:
        if not items:
            return
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO tokens (analyzer, text_hash, fields) VALUES (?, ?, ?)",
                [(analyzer, key, json.dumps(fields, ensure_ascii=False, separators=(",", ":")))
                 for key, fields in items.items()],
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _decode(blob) -> dict[str, list[str]] | None:
    try:
        fields = json.loads(blob)
    except (TypeError, ValueError):
        return None
    if not isinstance(fields, dict) or not all(isinstance(v, list) for v in fields.values()):
        return None
    return fields


def analyze_cached(texts: list[str], analyze: Callable[[str], dict[str, list[str]]], analyzer: str,
                   cache: TokenCache | None) -> list[dict[str, list[str]]]:
    """The tokens of each text (in order): from the cache when it has them, else analysed and stored."""
    keys = [text_key(t) for t in texts]
    known = cache.get_many(analyzer, keys) if cache else {}
    fresh: dict[str, dict[str, list[str]]] = {}
    for key, text in zip(keys, texts):
        if key not in known and key not in fresh:
            fresh[key] = analyze(text)
    if cache:
        cache.put_many(analyzer, fresh)
    return [known[key] if key in known else fresh[key] for key in keys]
