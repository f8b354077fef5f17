"""Token cache: the analysed lexical tokens of a text, keyed by (analyzer, sha256 of that text), in SQLite.

Analysing every chunk with fugashi was most of a no-change rebuild; like the vector cache, this
makes a rebuild analyse only texts it has not seen. The key hashes exactly the analysed text (not
the embedded text, which differs), and the analyzer version string invalidates every entry when
the token recipe changes. Stored beside the vector cache, in its own file, so the two never contend.

The same file keeps the slug of each section heading (table `slugs`, keyed by the slug recipe and
the heading's text): section chunk ids are slugs romanised with the Japanese tokenizer, and a
no-change rebuild should not have to load it to name chunks it named before; and the sections and
tables of each page read before (table `parts`, keyed by the parts recipe and a digest of the page,
see section_memory.py), so a rebuild does not read unchanged pages as sections again.

The cache only saves time: a file that cannot be read or written (damaged, locked, read-only) is
reported once as a warning and the build analyses the texts itself, with the same result.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..keyed_sqlite import add_table, open_keyed, select_keys

log = logging.getLogger("knowledge_build.lexical")
FILE_NAME = "tokens.sqlite"
_COLUMNS = ("tokens", "analyzer", "text_hash", "fields")  # table, recipe, key, value
_SLUG_COLUMNS = ("slugs", "recipe", "heading", "slug")
_PARTS_COLUMNS = ("parts", "recipe", "page", "parts")  # a page's sections and tables, encoded
Tokens = dict[str, list[str]]


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TokenCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        try:
            self._db = open_keyed(self.path, *_COLUMNS[:3], "fields TEXT")
            add_table(self._db, *_SLUG_COLUMNS[:3], "slug TEXT")
            add_table(self._db, *_PARTS_COLUMNS[:3], "parts TEXT")
        except (OSError, sqlite3.Error) as exc:
            self._give_up(exc)

    def get_many(self, analyzer: str, keys: list[str], fields: tuple[str, ...]) -> dict[str, Tokens]:
        """The cached tokens of these keys; an entry without exactly these fields is a miss."""
        found: dict[str, Tokens] = {}
        if self._db is None:
            return found
        try:
            for key, blob in select_keys(self._db, *_COLUMNS, analyzer, keys):
                tokens = _decode(blob, fields)
                if tokens is not None:  # an unreadable entry is a miss: analysed again, rewritten
                    found[key] = tokens
        except sqlite3.Error as exc:
            self._give_up(exc)
        return found

    def put_many(self, analyzer: str, items: dict[str, Tokens]) -> None:
        if not items or self._db is None:
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO tokens (analyzer, text_hash, fields) VALUES (?, ?, ?)",
                    [(analyzer, key, json.dumps(tokens, ensure_ascii=False, separators=(",", ":")))
                     for key, tokens in items.items()],
                )
        except sqlite3.Error as exc:
            self._give_up(exc)

    def slugs(self, recipe: str) -> dict[str, str]:
        """Every heading text -> slug stored under this recipe (a site has a few thousand at most)."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute("SELECT heading, slug FROM slugs WHERE recipe = ?", (recipe,)).fetchall()
        except sqlite3.Error as exc:
            self._give_up(exc)
            return {}
        return {heading: slug for heading, slug in rows if isinstance(heading, str) and isinstance(slug, str)}

    def put_slugs(self, recipe: str, slugs: dict[str, str]) -> None:
        if not slugs or self._db is None:
            return
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO slugs (recipe, heading, slug) VALUES (?, ?, ?)",
                                     [(recipe, heading, slug) for heading, slug in slugs.items()])
        except sqlite3.Error as exc:
            self._give_up(exc)

    def parts_lookup(self, recipe: str):
        """A function: a page's digest -> its stored parts (encoded), or None."""
        def stored(page: str) -> str | None:
            if self._db is None:
                return None
            try:
                row = self._db.execute("SELECT parts FROM parts WHERE recipe = ? AND page = ?",
                                       (recipe, page)).fetchone()
            except sqlite3.Error as exc:
                self._give_up(exc)
                return None
            return row[0] if row and isinstance(row[0], str) else None
        return stored

    def put_parts(self, recipe: str, parts: dict[str, str]) -> None:
        if not parts or self._db is None:
            return
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO parts (recipe, page, parts) VALUES (?, ?, ?)",
                                     [(recipe, page, encoded) for page, encoded in parts.items()])
        except sqlite3.Error as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        log.warning("the token cache %s is not usable (%s); analysing every chunk without it. "
                    "Fix: delete that file (it is rebuilt) or make its directory writable.", self.path, exc)
        self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _decode(blob, fields: tuple[str, ...]) -> Tokens | None:
    try:
        tokens = json.loads(blob)
    except (TypeError, ValueError):
        return None
    if not isinstance(tokens, dict) or set(tokens) != set(fields):
        return None
    if not all(isinstance(v, list) for v in tokens.values()):
        return None
    return tokens


BATCH = 2000  # texts per batch of analyze_batches: what a caller holds in tokens at a time


def analyze_batches(texts: Iterable[str], analyze: Callable[[str], Tokens], analyzer: str,
                    fields: tuple[str, ...], cache: TokenCache | None, batch_size: int = BATCH) -> Iterator[list[Tokens]]:
    """The tokens of the texts, in order, as one list per `batch_size` consecutive texts: each batch
    is read from the cache, its misses analysed and stored, before the next text is taken, so a
    caller that folds a batch into postings and drops it holds one batch of tokens, not the site's.
    `texts` may be a generator."""
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == batch_size:
            yield _analyzed(batch, analyze, analyzer, fields, cache)
            batch = []
    if batch:
        yield _analyzed(batch, analyze, analyzer, fields, cache)


def analyze_cached(texts: list[str], analyze: Callable[[str], Tokens], analyzer: str, fields: tuple[str, ...],
                   cache: TokenCache | None) -> list[Tokens]:
    """The tokens of each text (in order): from the cache when it has them, else analysed and stored."""
    return [tokens for batch in analyze_batches(texts, analyze, analyzer, fields, cache) for tokens in batch]


def _analyzed(texts: list[str], analyze, analyzer: str, fields: tuple[str, ...], cache: TokenCache | None) -> list[Tokens]:
    keys = [text_key(t) for t in texts]
    known = cache.get_many(analyzer, keys, fields) if cache else {}
    fresh: dict[str, Tokens] = {}
    for key, text in zip(keys, texts):
        if key not in known and key not in fresh:
            fresh[key] = analyze(text)
    if cache:
        cache.put_many(analyzer, fresh)
    return [known[key] if key in known else fresh[key] for key in keys]
