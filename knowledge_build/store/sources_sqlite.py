"""The SQLite side of the web sources store (sources.py): tables beside the notes, FTS5 over the
analysed tokens, and a sqlite-vec vec0 table or, where sqlite-vec cannot be loaded, an exact numpy
scan over vectors read again only when the store's generation changed."""

from __future__ import annotations

import json
import threading
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..ranking.settings import SearchSettings
from .common import FIELDS, SourcesUnavailable, fts_document, fts_match, log, utc_now
from .source_relevance import StoreStatistics
from .sqlite_transaction import sqlite_transaction

_COLUMNS = ("id", "source_url", "chunk_index", "url", "title", "heading", "parents", "kind", "text", "crawled_at",
            "embedding", "language", "tokens")
_warned_fallback = False
# Query tokens found in more chunks than this share (and this count) are not searched (_selective).
MAX_DF_SHARE = 0.05
MIN_DF_CUT = 200
KEEP_RAREST = 3


_SQLITE_SCHEMA = [
    """create table if not exists knowledge_sources (url text primary key, title text not null,
        chunks integer not null, crawled_at text not null, updated_at text not null,
        language text not null default '')""",
    """create table if not exists knowledge_source_chunks (id integer primary key autoincrement,
        source_url text not null, generation integer not null, chunk_index integer not null, url text not null,
        title text not null, heading text not null, parents text not null, kind text not null, text text not null,
        crawled_at text not null, embedding blob not null, tokens text not null, language text not null default '')""",
    "create index if not exists knowledge_source_chunks_source on knowledge_source_chunks (source_url, generation)",
    # One row: the store's generation (bumped by every write), the generation the vec0 table
    # holds (a writer without sqlite-vec leaves it behind; a reader with it rebuilds), the dimension.
    """create table if not exists knowledge_source_state (id integer primary key check (id = 1),
        generation integer not null, vec_generation integer not null, dim integer not null)""",
    # How many chunks hold each token in each field (kept by every write): _selective reads it
    # with index lookups, where FTS5's own counts (fts5vocab) read each token's whole posting list.
    """create table if not exists knowledge_source_terms (field text not null, term text not null,
        docs integer not null, primary key (field, term)) without rowid""",
    f"""create virtual table if not exists knowledge_source_fts using fts5({', '.join(FIELDS)},
        tokenize='unicode61 remove_diacritics 0')""",
]


def sqlite_module(vector_index: str):
    """(sqlite3-compatible module, sqlite_vec module or None) for the vector index asked for."""
    import sqlite3

    if vector_index == "numpy":
        return sqlite3, None
    try:
        import sqlite_vec
    except ImportError:
        return _no_vec(vector_index, sqlite3, "the sqlite-vec package is not installed")
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3, sqlite_vec
    try:  # this Python's sqlite3 was built without extension loading; pysqlite3 has it
        import pysqlite3.dbapi2 as module
    except ImportError:
        return _no_vec(vector_index, sqlite3, "this Python's sqlite3 cannot load extensions")
    return module, sqlite_vec


def _no_vec(vector_index: str, sqlite3, reason: str):
    global _warned_fallback
    if vector_index == "sqlite-vec":
        raise SourcesUnavailable(f"sqlite-vec cannot be used: {reason}. Fix: pip install 'knowledge-build[web]' "
                                 "(sqlite-vec, and pysqlite3-binary on Linux), or use vector_index 'auto'.")
    if not _warned_fallback:
        log.warning("sqlite-vec cannot be used (%s): notes and web sources are searched with an exact in-memory "
                    "scan instead (same results, more memory). Fix: pip install 'knowledge-build[web]'.", reason)
        _warned_fallback = True
    return sqlite3, None


class SqliteSources:
    def __init__(self, path: Path, dim: int, settings: SearchSettings, vector_index: str = "auto"):
        self.dim, self.settings, self.path = dim, settings, path
        module, sqlite_vec = sqlite_module(vector_index)
        self._lock = threading.RLock()
        self._matrix: tuple[int, np.ndarray, np.ndarray] | None = None  # (generation, ids, vectors)
        self._lengths: tuple[int, int, dict] | None = None  # (generation, chunks, mean tokens per field)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = module.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
            self._conn.execute("pragma journal_mode=wal")
            if sqlite_vec is not None:
                self._conn.enable_load_extension(True)
                sqlite_vec.load(self._conn)
                self._conn.enable_load_extension(False)
            with self._transaction(write=True) as cur:
                for statement in _SQLITE_SCHEMA:
                    cur.execute(statement)
                _add_missing_columns(cur)
                self._check_dim(cur)
        except (OSError, module.Error) as exc:
            raise SourcesUnavailable(f"cannot open the sources store {path} ({exc}). Fix: pass a writable "
                                     "file as --store, or a postgresql:// URL") from exc
        self.vector_index = "sqlite-vec" if sqlite_vec is not None else "numpy"
        if sqlite_vec is not None:
            self._sync_vec()

    def _check_dim(self, cur) -> None:
        row = cur.execute("select dim from knowledge_source_state").fetchone()
        if row is None:
            cur.execute("insert into knowledge_source_state values (1, 0, -1, ?)", (self.dim,))  # no vec0 table yet
        elif row[0] != self.dim:
            if cur.execute("select count(*) from knowledge_source_chunks").fetchone()[0]:
                raise SourcesUnavailable(
                    f"the stored web sources have vectors of dimension {row[0]}, this embedder makes {self.dim}. "
                    "Fix: use the embedder they were stored with, or delete the sources and add them again.")
            cur.execute("update knowledge_source_state set dim = ?, vec_generation = -1", (self.dim,))

    @contextmanager
    def _transaction(self, write: bool):
        """A cursor inside one transaction: a reader sees one committed state throughout."""
        with self._lock, sqlite_transaction(self._conn, write) as cur:
            yield cur

    def _state(self, cur) -> tuple[int, int]:
        return cur.execute("select generation, vec_generation from knowledge_source_state").fetchone()

    def _bump(self, cur) -> tuple[int, bool]:
        """The new generation, and whether the vec0 table follows this write (it was up to date)."""
        generation, vec_generation = self._state(cur)
        in_sync = self.vector_index == "sqlite-vec" and vec_generation == generation
        cur.execute("update knowledge_source_state set generation = ?, vec_generation = ?",
                    (generation + 1, generation + 1 if in_sync else vec_generation))
        return generation + 1, in_sync

    def _sync_vec(self) -> None:
        """Rebuild the vec0 table when a writer without sqlite-vec (or another dimension) left it behind."""
        with self._transaction(write=True) as cur:
            generation, vec_generation = self._state(cur)
            if generation == vec_generation:
                return
            log.info("rebuilding the web sources' vector index (generation %s -> %s)", vec_generation, generation)
            cur.execute("drop table if exists knowledge_source_vec")
            cur.execute(f"create virtual table knowledge_source_vec using vec0(embedding float[{self.dim}]"
                        " distance_metric=cosine)")
            cur.execute("insert into knowledge_source_vec (rowid, embedding) select id, embedding"
                        " from knowledge_source_chunks")
            cur.execute("update knowledge_source_state set vec_generation = generation")

    # --- writes ----------------------------------------------------------------------------

    def replace(self, source_url: str, title: str, crawled_at: str, rows: list[dict]) -> int:
        with self._transaction(write=True) as cur:
            generation, vec = self._bump(cur)
            for row in rows:
                cur.execute("insert into knowledge_source_chunks (source_url, generation, chunk_index, url, title,"
                            " heading, parents, kind, text, crawled_at, embedding, tokens, language)"
                            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (source_url, generation, row["chunk_index"], row["url"], row["title"], row["heading"],
                             json.dumps(row["parents"], ensure_ascii=False), row["kind"], row["text"],
                             row["crawled_at"], row["embedding"].tobytes(),
                             json.dumps(row["tokens"], ensure_ascii=False), row.get("language", "")))
                row_id = cur.lastrowid
                cur.execute(f"insert into knowledge_source_fts (rowid, {', '.join(FIELDS)}) values (?, ?, ?, ?, ?, ?)",
                            (row_id, *fts_document(row["tokens"])))
                if vec:
                    cur.execute("insert into knowledge_source_vec (rowid, embedding) values (?, ?)",
                                (row_id, row["embedding"].tobytes()))
            self._count_terms(cur, [row["tokens"] for row in rows], +1)
            self._delete_chunks(cur, source_url, generation, vec)
            cur.execute("insert into knowledge_sources (url, title, chunks, crawled_at, updated_at, language)"
                        " values (?, ?, ?, ?, ?, ?) on conflict (url) do update set title = excluded.title,"
                        " chunks = excluded.chunks, crawled_at = excluded.crawled_at, updated_at = excluded.updated_at,"
                        " language = excluded.language",
                        (source_url, title, len(rows), crawled_at, utc_now(), rows[0].get("language", "") if rows else ""))
        return len(rows)

    def delete(self, source_url: str) -> int | None:
        with self._transaction(write=True) as cur:
            if cur.execute("select 1 from knowledge_sources where url = ?", (source_url,)).fetchone() is None:
                return None
            generation, vec = self._bump(cur)
            deleted = self._delete_chunks(cur, source_url, generation, vec)
            cur.execute("delete from knowledge_sources where url = ?", (source_url,))
        return deleted

    def _delete_chunks(self, cur, source_url: str, below: int, vec: bool) -> int:
        """Delete the source's chunks of generations before `below` from the table and both indexes."""
        old = "select id from knowledge_source_chunks where source_url = ? and generation < ?"
        self._count_terms(cur, [json.loads(r[0]) for r in cur.execute(
            "select tokens from knowledge_source_chunks where source_url = ? and generation < ?",
            (source_url, below)).fetchall()], -1)
        cur.execute(f"delete from knowledge_source_fts where rowid in ({old})", (source_url, below))
        if vec:
            cur.execute(f"delete from knowledge_source_vec where rowid in ({old})", (source_url, below))
        cur.execute("delete from knowledge_source_chunks where source_url = ? and generation < ?", (source_url, below))
        return cur.rowcount

    @staticmethod
    def _count_terms(cur, documents: list[dict], sign: int) -> None:
        count_terms(cur, "knowledge_source_terms", documents, sign)

    # --- reads -----------------------------------------------------------------------------

    def status(self) -> dict:
        with self._transaction(write=False) as cur:
            sources, last = cur.execute("select count(*), max(crawled_at) from knowledge_sources").fetchone()
            chunks = cur.execute("select count(*) from knowledge_source_chunks").fetchone()[0]
        return {"sources": sources, "chunks": chunks, "last_crawl": last}

    def sources(self) -> list[dict]:
        with self._transaction(write=False) as cur:
            rows = cur.execute("select url, title, chunks, crawled_at, language from knowledge_sources order by url"
                               ).fetchall()
        return [{"url": r[0], "title": r[1], "chunks": r[2], "crawled_at": r[3], "language": r[4]} for r in rows]

    def candidates(self, qvec: np.ndarray, tokens: dict, n: int) -> tuple[dict, dict, dict]:
        """({id: cosine} of the n nearest, {id: BM25} of the n best lexical, {id: row}) from one snapshot."""
        with self._transaction(write=False) as cur:
            generation, vec_generation = self._state(cur)
            stale = self.vector_index == "sqlite-vec" and vec_generation != generation
            if not stale:
                return self._candidates(cur, qvec, tokens, n)
        self._sync_vec()  # rare: a writer without sqlite-vec wrote since; a write transaction of its own
        return self.candidates(qvec, tokens, n)

    def _candidates(self, cur, qvec: np.ndarray, tokens: dict, n: int) -> tuple[dict, dict, dict]:
        if not qvec.any():  # a query without a vector (no text the embedder reads) has no neighbours
            dense = {}
        elif self.vector_index == "sqlite-vec":
            dense = {r[0]: 1.0 - float(r[1]) for r in cur.execute(
                "select rowid, distance from knowledge_source_vec where embedding match ? and k = ?",
                (qvec.tobytes(), n))}
        else:
            dense = self._scan(cur, qvec, n)
        lexical = {}
        match = fts_match(self._selective(cur, tokens))
        if match:
            weights = ", ".join(str(float(self.settings.field_weights.get(f, 0.0))) for f in FIELDS)
            lexical = {r[0]: -float(r[1]) for r in cur.execute(
                f"select rowid, bm25(knowledge_source_fts, {weights}) as s from knowledge_source_fts"
                " where knowledge_source_fts match ? order by s limit ?", (match, n))}
        return dense, lexical, self._rows(cur, sorted(set(dense) | set(lexical)))

    def statistics(self, tokens: dict) -> StoreStatistics:
        """The store's chunks, their mean length per field of `tokens` and how many hold each token
        (source_relevance.py). The lengths are summed again only after a write (a new generation)."""
        with self._transaction(write=False) as cur:
            generation = self._state(cur)[0]
            if self._lengths is None or self._lengths[0] != generation:
                sums = ", ".join(f"coalesce(sum(json_array_length(tokens, '$.{name}')), 0)" for name in FIELDS)
                chunks, *totals = cur.execute(f"select count(*), {sums} from knowledge_source_chunks").fetchone()
                self._lengths = (generation, chunks, {name: total / chunks if chunks else 0.0
                                                      for name, total in zip(FIELDS, totals)})
            df = {}
            for name, words in tokens.items():
                words = list(dict.fromkeys(t for t in words if t))
                for start in range(0, len(words), 500):
                    part = words[start:start + 500]
                    df.update(((name, term), docs) for term, docs in cur.execute(
                        f"select term, docs from knowledge_source_terms where field = ? and term in"
                        f" ({', '.join('?' * len(part))})", (name, *part)))
            _, chunks, mean = self._lengths
        return StoreStatistics(chunks, {name: mean.get(name, 0.0) for name in tokens}, df)

    def _selective(self, cur, tokens: dict) -> dict:
        total = cur.execute("select coalesce(sum(chunks), 0) from knowledge_sources").fetchone()[0]
        return selective(cur, "knowledge_source_terms", tokens, total)

    @staticmethod
    def _rows(cur, ids: list[int]) -> dict[int, dict]:
        rows = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            for r in cur.execute(f"select {', '.join(_COLUMNS)} from knowledge_source_chunks where id in"
                                 f" ({', '.join('?' * len(part))})", part):
                row = dict(zip(_COLUMNS, r))
                row["parents"] = json.loads(row["parents"])
                row["embedding"] = np.frombuffer(row["embedding"], dtype=np.float32)
                rows[row["id"]] = row
        return rows

    def _scan(self, cur, qvec: np.ndarray, n: int) -> dict:
        """The exact nearest n by numpy, over vectors read again only when the generation changed."""
        generation = self._state(cur)[0]
        if self._matrix is None or self._matrix[0] != generation:
            pairs = cur.execute("select id, embedding from knowledge_source_chunks order by id").fetchall()
            ids = np.array([p[0] for p in pairs], dtype=np.int64)
            matrix = (np.frombuffer(b"".join(p[1] for p in pairs), dtype=np.float32).reshape(len(pairs), self.dim)
                      if pairs else np.zeros((0, self.dim), np.float32))
            self._matrix = (generation, ids, matrix)
        _, ids, matrix = self._matrix
        if not len(ids):
            return {}
        cosine = matrix @ qvec
        top = np.argpartition(-cosine, n - 1)[:n] if len(ids) > n else np.arange(len(ids))
        return {int(ids[i]): float(cosine[i]) for i in top}

    def close(self) -> None:
        self._conn.close()


# Columns added after the tables were first shipped: a store made before gets them on opening.
_ADDED_COLUMNS = (("knowledge_sources", "language", "text not null default ''"),
                  ("knowledge_source_chunks", "language", "text not null default ''"))


def _add_missing_columns(cur) -> None:
    """The migration of an older store file: SQLite has no `add column if not exists`."""
    for table, column, definition in _ADDED_COLUMNS:
        if column not in {row[1] for row in cur.execute(f"pragma table_info({table})")}:
            cur.execute(f"alter table {table} add column {column} {definition}")


def count_terms(cur, table: str, documents: list[dict], sign: int) -> None:
    """Add (sign +1) or remove (-1) the documents' distinct tokens from a terms table
    (field, term, docs), as knowledge_source_terms."""
    counts = Counter((name, t) for tokens in documents for name in FIELDS for t in set(tokens.get(name) or []) if t)
    if sign > 0:
        cur.executemany(f"insert into {table} values (?, ?, ?) on conflict (field, term)"
                        " do update set docs = docs + excluded.docs", [(f, t, n) for (f, t), n in counts.items()])
        return
    cur.executemany(f"update {table} set docs = docs - ? where field = ? and term = ?",
                    [(n, f, t) for (f, t), n in counts.items()])
    cur.executemany(f"delete from {table} where field = ? and term = ? and docs <= 0", list(counts))


def selective(cur, table: str, tokens: dict, total: int) -> dict:
    """The query's tokens without those in more than MAX_DF_SHARE of the `total` documents (and
    more than MIN_DF_CUT): such a token adds almost nothing to BM25 (its IDF is near zero) but makes
    FTS5 score most of the table, which is what would make query time grow with the store. When
    every token is that common, the rarest few are kept. `table` counts documents per token."""
    cut = max(MIN_DF_CUT, int(total * MAX_DF_SHARE))
    found = []  # (document frequency, field, token)
    for column, name in enumerate(FIELDS):
        words = list(dict.fromkeys(t for t in tokens.get(name) or [] if t))
        for start in range(0, len(words), 500):
            part = words[start:start + 500]
            found += [(docs, column, term) for term, docs in cur.execute(
                f"select term, docs from {table} where field = ? and term in ({', '.join('?' * len(part))})",
                (name, *part))]
    kept = [f for f in found if f[0] <= cut] or sorted(found)[:KEEP_RAREST]
    selected: dict[str, list[str]] = {}
    for _, column, token in kept:
        selected.setdefault(FIELDS[column], []).append(token)
    return selected
