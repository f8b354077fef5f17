"""The SQLite file behind both build caches (vectors, lexical tokens): one table keyed by
(recipe, content key), WAL so a second build or a reader never blocks, and lookups of many keys
in batches that stay under SQLite's bound-parameter limit."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterator

_BATCH = 500  # bound parameters per query, well under SQLite's limit


def open_keyed(path: Path, table: str, recipe: str, key: str, value: str) -> sqlite3.Connection:
    """Open (or create) `path` with `table (recipe, key, value)`, primary key (recipe, key)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    add_table(db, table, recipe, key, value)
    return db


def add_table(db: sqlite3.Connection, table: str, recipe: str, key: str, value: str) -> None:
    """Create `table (recipe, key, value)` in an open file unless it is there."""
    db.execute(f"CREATE TABLE IF NOT EXISTS {table} ("
               f" {recipe} TEXT NOT NULL, {key} TEXT NOT NULL, {value} NOT NULL,"
               f" PRIMARY KEY ({recipe}, {key}))")
    db.commit()


def select_keys(db: sqlite3.Connection, table: str, recipe: str, key: str, value: str, recipe_value: str,
                keys) -> Iterator[tuple[str, object]]:
    """(key, value) of every stored row of this recipe whose key is in `keys`."""
    unique = sorted(set(keys))
    for start in range(0, len(unique), _BATCH):
        part = unique[start:start + _BATCH]
        marks = ",".join("?" * len(part))
        yield from db.execute(f"SELECT {key}, {value} FROM {table} WHERE {recipe} = ? AND {key} IN ({marks})",
                              [recipe_value, *part])
