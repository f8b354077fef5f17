"""The search indexes of the notes (store/notes.py), so that a query reads neither every note nor
rebuilds a BM25 model: the same machinery as the web sources (store/sources_sqlite.py, sources_pg.py).

- SQLite: an FTS5 table over each note's stored tokens (fields as sources.FIELDS, weighted as
  SearchSettings.field_weights; notes have lemma, reading and kana2), and a sqlite-vec vec0 table
  (exact KNN) or, where sqlite-vec cannot be loaded, an exact numpy scan over vectors kept in memory
  and read again only when the notes changed (the store's generation). Both indexes hold the
  filter columns (kind, category, document_id), so a filtered query searches only matching notes.
  `knowledge_note_index` maps the indexes' integer rowids to the notes' text ids.
- Postgres: two columns beside the notes' own, `dense vector(dim)` (pgvector, exact KNN) and
  `lexemes tsvector` (field-marked tokens, GIN index).
A notes file or table written before these indexes existed gets them on open (once, in one
transaction); opening also indexes notes an older version wrote since, and drops index entries of
notes it deleted.
"""

from __future__ import annotations

import json
import logging

import numpy as np

from ..ranking.settings import SearchSettings
from .common import FIELDS, NotesUnavailable, fts_document, fts_match
from .sources_sqlite import count_terms, selective

log = logging.getLogger("knowledge_build.store")

NOTE_COLUMNS = ("id", "kind", "document_id", "chunk_index", "title", "content", "tags", "category", "user_id",
                "created_at", "updated_at", "embedding", "tokens")
FILTERS = ("kind", "category", "document_id")
VEC0_MAX_K = 4096  # sqlite-vec's largest k; a deeper search (top_k above it) takes the numpy scan
_INSERT = (f"insert into knowledge_notes ({', '.join(NOTE_COLUMNS)}) values ({', '.join('?' * len(NOTE_COLUMNS))})")

_SQLITE_INDEX = [
    """create table if not exists knowledge_note_index (id integer primary key autoincrement,
        note_id text not null unique)""",
    # One row: the notes' generation (bumped by every write), the generation the vec0 table holds (a
    # writer without sqlite-vec leaves it behind; a reader with it rebuilds), the vectors' dimension.
    """create table if not exists knowledge_note_state (id integer primary key check (id = 1),
        generation integer not null, vec_generation integer not null, dim integer not null)""",
    # How many notes hold each token in each field (sources_sqlite.selective leaves out common ones).
    """create table if not exists knowledge_note_terms (field text not null, term text not null,
        docs integer not null, primary key (field, term)) without rowid""",
    f"""create virtual table if not exists knowledge_note_fts using fts5({', '.join(FIELDS)},
        {', '.join(f + ' unindexed' for f in FILTERS)}, tokenize='unicode61 remove_diacritics 0')""",
]


def _filter_values(kind, category, document_id) -> tuple[str, str, str]:
    return kind or "", category or "", document_id or ""  # vec0 metadata columns hold no NULL


class SqliteNotesIndex:
    def __init__(self, dim: int, settings: SearchSettings, vec: bool):
        self.dim, self.settings = dim, settings
        self.vector_index = "sqlite-vec" if vec else "numpy"
        self._matrix = None  # (generation, note ids, unit vectors, filter columns)

    def setup(self, cur) -> None:
        """Create the indexes and bring them level with the notes (the migration of an older file)."""
        for statement in _SQLITE_INDEX:
            cur.execute(statement)
        row = cur.execute("select dim from knowledge_note_state").fetchone()
        if row is None:
            cur.execute("insert into knowledge_note_state values (1, 0, -1, ?)", (self.dim,))
        elif row[0] != self.dim:
            if cur.execute("select count(*) from knowledge_note_index").fetchone()[0]:
                raise NotesUnavailable(
                    f"the stored notes have vectors of dimension {row[0]}, this embedder makes {self.dim}. Fix: "
                    "serve with the embedder they were saved with, or point --store at another file")
            cur.execute("update knowledge_note_state set dim = ?, vec_generation = -1", (self.dim,))
        missing = cur.execute(f"select {', '.join('n.' + c for c in NOTE_COLUMNS)} from knowledge_notes n left join"
                              " knowledge_note_index i on i.note_id = n.id where i.id is null").fetchall()
        gone = [r[0] for r in cur.execute("select i.note_id from knowledge_note_index i left join knowledge_notes n"
                                          " on n.id = i.note_id where n.id is null")]
        if missing or gone:
            log.info("indexing %d notes for search (%d index entries of deleted notes dropped)", len(missing),
                     len(gone))
            self.remove(cur, gone, rows_kept=False)
            self._index(cur, missing)
            if gone:  # their tokens went with their rows: count every note's again
                cur.execute("delete from knowledge_note_terms")
                count_terms(cur, "knowledge_note_terms",
                            [json.loads(r[0]) for r in cur.execute("select tokens from knowledge_notes")], +1)

    def _state(self, cur) -> tuple[int, int]:
        return cur.execute("select generation, vec_generation from knowledge_note_state").fetchone()

    def _bump(self, cur) -> bool:
        """A new generation; True when the vec0 table follows this write (it was up to date)."""
        generation, vec_generation = self._state(cur)
        in_sync = self.vector_index == "sqlite-vec" and vec_generation == generation
        cur.execute("update knowledge_note_state set generation = ?, vec_generation = ?",
                    (generation + 1, generation + 1 if in_sync else vec_generation))
        return in_sync

    def insert(self, cur, rows: list[tuple]) -> None:
        """Store notes (rows in NOTE_COLUMNS order) and index them, inside the caller's transaction."""
        if rows:
            cur.executemany(_INSERT, rows)
            self._index(cur, rows)

    def _index(self, cur, rows: list[tuple]) -> None:
        if not rows:
            return
        vec = self._bump(cur)
        count_terms(cur, "knowledge_note_terms", [json.loads(row[-1]) for row in rows], +1)
        for row in rows:
            note = dict(zip(NOTE_COLUMNS, row))
            cur.execute("insert into knowledge_note_index (note_id) values (?)", (note["id"],))
            rowid = cur.lastrowid
            filters = _filter_values(note["kind"], note["category"], note["document_id"])
            cur.execute(f"insert into knowledge_note_fts (rowid, {', '.join(FIELDS + FILTERS)}) values"
                        f" ({', '.join('?' * (1 + len(FIELDS) + len(FILTERS)))})",
                        (rowid, *fts_document(json.loads(note["tokens"])), *filters))
            if vec:
                cur.execute("insert into knowledge_note_vec (rowid, embedding, kind, category, document_id)"
                            " values (?, ?, ?, ?, ?)", (rowid, bytes(note["embedding"]), *filters))

    def remove(self, cur, note_ids: list[str], rows_kept: bool = True) -> None:
        """Take notes out of the indexes (the caller deletes the rows afterwards, in the same transaction)."""
        if not note_ids:
            return
        vec = self._bump(cur)
        for start in range(0, len(note_ids), 500):
            part = note_ids[start:start + 500]
            ids = f"select id from knowledge_note_index where note_id in ({', '.join('?' * len(part))})"
            if rows_kept:
                count_terms(cur, "knowledge_note_terms", [json.loads(r[0]) for r in cur.execute(
                    f"select tokens from knowledge_notes where id in ({', '.join('?' * len(part))})", part)], -1)
            cur.execute(f"delete from knowledge_note_fts where rowid in ({ids})", part)
            if vec:
                cur.execute(f"delete from knowledge_note_vec where rowid in ({ids})", part)
            cur.execute(f"delete from knowledge_note_index where note_id in ({', '.join('?' * len(part))})", part)

    def stale(self, cur) -> bool:
        """Whether the vec0 table must be rebuilt (sync_vec, in a write transaction) before a search."""
        generation, vec_generation = self._state(cur)
        return self.vector_index == "sqlite-vec" and vec_generation != generation

    def sync_vec(self, cur) -> None:
        """Rebuild the vec0 table when a writer without sqlite-vec (or another dimension) left it behind."""
        if not self.stale(cur):
            return
        log.info("rebuilding the notes' vector index")
        cur.execute("drop table if exists knowledge_note_vec")
        cur.execute(f"create virtual table knowledge_note_vec using vec0(embedding float[{self.dim}]"
                    " distance_metric=cosine, kind text, category text, document_id text)")
        cur.execute("insert into knowledge_note_vec (rowid, embedding, kind, category, document_id) select i.id,"
                    " n.embedding, n.kind, n.category, coalesce(n.document_id, '') from knowledge_note_index i"
                    " join knowledge_notes n on n.id = i.note_id")
        cur.execute("update knowledge_note_state set vec_generation = generation")

    def candidates(self, cur, qvec: np.ndarray, tokens: dict, n: int, filters: dict) -> tuple[dict, dict, dict]:
        """({note id: cosine} of the n nearest, {note id: BM25} of the n best lexical, {note id: row}),
        among the notes matching `filters` ({column: value} of FILTERS)."""
        where = "".join(f" and {column} = ?" for column in filters)
        values = list(filters.values())
        if not qvec.any():  # a query without a vector (no text the embedder reads) has no neighbours
            dense = {}
        elif self.vector_index == "sqlite-vec" and n <= VEC0_MAX_K:
            dense = {r[0]: 1.0 - float(r[1]) for r in cur.execute(
                f"select rowid, distance from knowledge_note_vec where embedding match ? and k = ?{where}",
                (qvec.tobytes(), n, *values))}
        else:
            dense = self._scan(cur, qvec, n, filters)
        total = cur.execute("select count(*) from knowledge_note_index").fetchone()[0]
        lexical, match = {}, fts_match(selective(cur, "knowledge_note_terms", tokens, total))
        if match:
            weights = ", ".join(str(float(self.settings.field_weights.get(f, 0.0))) for f in FIELDS + FILTERS)
            lexical = {r[0]: -float(r[1]) for r in cur.execute(
                f"select rowid, bm25(knowledge_note_fts, {weights}) as s from knowledge_note_fts"
                f" where knowledge_note_fts match ?{where} order by s limit ?", (match, *values, n))}
        rows = self._rows(cur, sorted(set(dense) | set(lexical)))
        return ({rows[i]["id"]: s for i, s in dense.items() if i in rows},
                {rows[i]["id"]: s for i, s in lexical.items() if i in rows}, {r["id"]: r for r in rows.values()})

    @staticmethod
    def _rows(cur, rowids: list[int]) -> dict[int, dict]:
        rows = {}
        for start in range(0, len(rowids), 500):
            part = rowids[start:start + 500]
            for r in cur.execute(f"select i.id, {', '.join('n.' + c for c in NOTE_COLUMNS)} from knowledge_note_index"
                                 f" i join knowledge_notes n on n.id = i.note_id where i.id in"
                                 f" ({', '.join('?' * len(part))})", part):
                rows[r[0]] = dict(zip(NOTE_COLUMNS, r[1:]))
        return rows

    def _scan(self, cur, qvec: np.ndarray, n: int, filters: dict) -> dict:
        """The exact nearest n by numpy, over vectors read again only when the generation changed."""
        generation = self._state(cur)[0]
        if self._matrix is None or self._matrix[0] != generation:
            pairs = cur.execute("select i.id, n.embedding, n.kind, n.category, coalesce(n.document_id, '')"
                                " from knowledge_note_index i join knowledge_notes n on n.id = i.note_id"
                                " order by i.id").fetchall()
            matrix = (np.frombuffer(b"".join(bytes(p[1]) for p in pairs), dtype=np.float32).reshape(len(pairs), -1)
                      if pairs else np.zeros((0, self.dim), np.float32))
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            columns = {name: np.array([p[2 + k] for p in pairs], dtype=object) for k, name in enumerate(FILTERS)}
            self._matrix = (generation, np.array([p[0] for p in pairs], dtype=np.int64),
                            matrix / np.where(norms > 0, norms, 1.0), columns)
        _, ids, matrix, columns = self._matrix
        if filters:  # only then a copy of the matching rows
            keep = np.ones(len(ids), dtype=bool)
            for column, value in filters.items():
                keep &= columns[column] == value
            ids, matrix = ids[keep], matrix[keep]
        cosine = matrix @ qvec
        top = np.argpartition(-cosine, n - 1)[:n] if len(ids) > n else np.arange(len(ids))
        return {int(ids[i]): float(cosine[i]) for i in top}


_TSVECTOR = ("setweight(array_to_tsvector(%s::text[]), 'A') || setweight(array_to_tsvector(%s::text[]), 'B') ||"
             " setweight(array_to_tsvector(%s::text[]), 'C') || setweight(array_to_tsvector(%s::text[]), 'D')")


class PostgresNotesIndex:
    vector_index = "pgvector"

    def __init__(self, dim: int, settings: SearchSettings):
        self.dim, self.settings = dim, settings

    def setup(self, conn) -> None:
        """Add the index columns to knowledge_notes and fill them for notes without (the migration);
        `conn` is inside a transaction holding the schema lock."""
        from pgvector.psycopg import register_vector

        conn.execute("create extension if not exists vector")
        register_vector(conn)
        conn.execute(f"alter table knowledge_notes add column if not exists dense vector({int(self.dim)})")
        conn.execute("alter table knowledge_notes add column if not exists lexemes tsvector")
        conn.execute("create index if not exists knowledge_notes_lexemes on knowledge_notes using gin (lexemes)")
        row = conn.execute("select atttypmod from pg_attribute where attrelid = to_regclass('knowledge_notes')"
                           " and attname = 'dense'").fetchone()
        if row and row[0] != self.dim:
            raise NotesUnavailable(
                f"the stored notes have vectors of dimension {row[0]}, this embedder makes {self.dim}. Fix: serve "
                "with the embedder they were saved with, or use another database")
        missing = conn.execute("select id, embedding, tokens from knowledge_notes where dense is null or lexemes"
                               " is null").fetchall()
        if missing:
            log.info("indexing %d notes for search", len(missing))
            with conn.cursor() as cur:
                cur.executemany(f"update knowledge_notes set dense = %s, lexemes = {_TSVECTOR} where id = %s",
                                [(np.frombuffer(bytes(r[1]), dtype=np.float32), *self._lexemes(r[2]), r[0])
                                 for r in missing])

    @staticmethod
    def _lexemes(tokens: str) -> list[list[str]]:
        from .sources_pg import lexemes

        return list(lexemes(json.loads(tokens)).values())

    def insert(self, cur, rows: list[tuple]) -> None:
        if rows:
            cur.executemany(f"insert into knowledge_notes ({', '.join(NOTE_COLUMNS)}, dense, lexemes) values"
                            f" ({', '.join(['%s'] * (len(NOTE_COLUMNS) + 1))}, {_TSVECTOR})",
                            [(*row, np.frombuffer(row[-2], dtype=np.float32), *self._lexemes(row[-1]))
                             for row in rows])

    def remove(self, cur, note_ids: list[str]) -> None:
        """Nothing to do: the index columns go with the rows."""

    def stale(self, cur) -> bool:
        return False

    def candidates(self, cur, qvec: np.ndarray, tokens: dict, n: int, filters: dict) -> tuple[dict, dict, dict]:
        """As SqliteNotesIndex.candidates (the caller holds a repeatable-read transaction)."""
        from .sources_pg import tsquery

        where = "".join(f" and {column} = %s" for column in filters)
        values = list(filters.values())
        w = self.settings.field_weights
        weights = [w.get("reading", 0.0), w.get("kana2", 0.0), max(w.get("page", 0.0), w.get("heading", 0.0)),
                   w.get("lemma", 0.0)]  # ts_rank's {D, C, B, A}, as sources_pg.lexemes assigns them
        dense = {} if not qvec.any() else {r[0]: 1.0 - float(r[1]) for r in cur.execute(
            f"select id, dense <=> %s as d from knowledge_notes where dense is not null{where} order by d limit %s",
            (qvec, *values, n))}
        query, lexical = tsquery(tokens), {}
        if query:
            lexical = {r[0]: float(r[1]) for r in cur.execute(
                f"select id, ts_rank(%s::real[], lexemes, q) as s from knowledge_notes, cast(%s as tsquery) q"
                f" where lexemes @@ q{where} order by s desc limit %s", (weights, query, *values, n))}
        rows = {r[0]: dict(zip(NOTE_COLUMNS, r)) for r in cur.execute(
            f"select {', '.join(NOTE_COLUMNS)} from knowledge_notes where id = any(%s)",
            (sorted(set(dense) | set(lexical)),))}
        return dense, lexical, rows
