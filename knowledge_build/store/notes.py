"""The tutor's writable knowledge: saved notes and imported documents, searchable by meaning.

Kept in SQLite (a local file, WAL, safe for concurrent writers) or, when a database is
configured, in Postgres (tables `knowledge_notes` and `knowledge_documents`). Each item keeps its
vector and its Japanese lexical tokens, and is ranked with the same fusion as the site's chunks;
the candidates come from indexes that grow with the store (notes_index.py), never from every row.
"""

from __future__ import annotations

import json
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import ContentTooLarge
from ..ranking.settings import check_query
from ..ranking.fusion import fuse
from ..ranking.settings import SearchSettings
from ..text.ja import analyze, analyze_query, nfkc
from ..text.windows import split_text
from .common import NotesUnavailable, NotFound, revoke_hosted_roles, utc_now
from .sqlite_transaction import sqlite_transaction

_SCHEMA = [
    """create table if not exists knowledge_documents (
        id text primary key, title text not null, source text not null default '', category text not null default '',
        metadata text not null default '{}', chunks integer not null default 0, user_id text not null,
        created_at text not null)""",
    """create table if not exists knowledge_notes (
        id text primary key, kind text not null, document_id text, chunk_index integer, title text not null,
        content text not null, tags text not null default '[]', category text not null default '',
        user_id text not null, created_at text not null, updated_at text not null,
        embedding bytea not null, tokens text not null)""",
]


# Limits on what one call may store (documented in the README's MCP section): each is far above
# a tutor's real use and keeps one call's embedding work to minutes, not hours.
MAX_TITLE_CHARS = 500
MAX_NOTE_CHARS = 20_000
MAX_DOCUMENT_CHARS = 200_000
MAX_IMPORT_CHUNKS = 1_000


def _open_sqlite(path: Path, index, vector_index: str):
    """The notes file with its tables and indexes, or NotesUnavailable naming the file and the fix."""
    from .sources_sqlite import sqlite_module

    module, sqlite_vec = sqlite_module(vector_index)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = module.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("pragma journal_mode=wal")
        if sqlite_vec is not None:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        index.vector_index = "sqlite-vec" if sqlite_vec is not None else "numpy"
        conn.execute("begin immediate")  # the tables, and the indexes of an older file, all or nothing
        try:
            for statement in _SCHEMA:
                conn.execute(statement.replace("bytea", "blob"))
            index.setup(conn.cursor())
            index.sync_vec(conn.cursor())
        except BaseException:
            conn.execute("rollback")
            raise
        conn.execute("commit")
    except (OSError, module.Error) as exc:
        try:
            shown = path.absolute()
        except OSError:  # the working directory itself is gone
            shown = path
        raise NotesUnavailable(
            f"cannot create or write the notes file {shown} ({exc}). Fix: run from a writable directory, "
            "or [[pass --notes or ]]set KB_NOTES to a path of a writable file") from exc
    return conn


class NoteStore:
    """Notes and imported documents with hybrid search over indexes that grow with the store
    (notes_index.py). `vector_index` (SQLite only): "auto", "sqlite-vec" or "numpy", as SourceStore's."""

    def __init__(self, embedder, path: Path | None = None, database_url: str | None = None,
                 vector_index: str = "auto"):
        from .notes_index import PostgresNotesIndex, SqliteNotesIndex

        self.embedder = embedder
        self._lock = threading.Lock()
        self.settings = SearchSettings()
        dim = int(getattr(embedder, "dim", 0) or len(embedder.embed_query("dim")))
        if database_url:
            from .postgres import connect

            self._conn = connect(database_url)
            self._conn.commit()  # connect() may have read the vector type: end that implicit transaction
            self._conn.autocommit = True
            self._mark = "%s"
            self.backend = "postgres"
            self._index = PostgresNotesIndex(dim, self.settings)
            with self._conn.transaction():
                self._conn.execute("select pg_advisory_xact_lock(7305015)")  # one schema creator at a time
                for statement in _SCHEMA:
                    self._conn.execute(statement)
                # Notes are the tutor's own: no policy, so Supabase's anon/authenticated roles see nothing.
                for table in ("knowledge_notes", "knowledge_documents"):
                    self._conn.execute(f"alter table {table} enable row level security")
                revoke_hosted_roles(self._conn, ("knowledge_notes", "knowledge_documents"))
                self._index.setup(self._conn)
        else:
            self._index = SqliteNotesIndex(dim, self.settings, vec=False)
            self._conn = _open_sqlite(Path(path or ".knowledge-notes.sqlite"), self._index, vector_index)
            self._mark = "?"
            self.backend = "sqlite"

    @property
    def vector_index(self) -> str:
        """How the dense channel is searched: "sqlite-vec", "numpy" or "pgvector"."""
        return self._index.vector_index

    def _sql(self, sql: str, params=()):
        with self._lock:
            return self._conn.execute(sql.replace("?", self._mark), params)

    # --- writes ------------------------------------------------------------------------

    def save(self, content: str, title: str | None = None, tags=None, user_id: str = "anonymous") -> dict:
        _check_size("note", content, MAX_NOTE_CHARS, "Import it with knowledge_import, which splits it into chunks.")
        _check_size("title", title or "", MAX_TITLE_CHARS, "Give a shorter title.")
        item = self._item("note", content, title or content.strip()[:30], tags=tags or [], user_id=user_id)
        rows = self._rows([item])
        with self._transaction() as cur:
            self._index.insert(cur, rows)
        return _public(item)

    def delete(self, item_id: str) -> None:
        """Delete a note, or a document with its chunks, from the table and the indexes at once."""
        with self._transaction() as cur:
            ids = [r[0] for r in self._run(cur, "select id from knowledge_notes where id = ? or document_id = ?",
                                           (item_id, item_id)).fetchall()]
            if not ids:
                raise NotFound("knowledge not found")
            self._index.remove(cur, ids)
            self._run(cur, "delete from knowledge_notes where id = ? or document_id = ?", (item_id, item_id))
            self._run(cur, "delete from knowledge_documents where id = ?", (item_id,))

    def import_document(self, title: str, content: str, source: str = "", category: str = "", chunk_size: int = 500,
                        chunk_overlap: int = 50, metadata: dict | None = None, user_id: str = "anonymous") -> dict:
        """Split, embed and store a document with its chunks in one transaction: all or nothing."""
        _check_size("document", content, MAX_DOCUMENT_CHARS, "Import it in parts.")
        _check_size("title", title, MAX_TITLE_CHARS, "Give a shorter title.")
        document_id = "doc-" + uuid.uuid4().hex[:16]
        pieces = split_text(content, chunk_size, chunk_overlap, max_chunks=MAX_IMPORT_CHUNKS)
        items = [self._item("chunk", piece, f"{title} ({i + 1})", category=category, document_id=document_id,
                            chunk_index=i, user_id=user_id) for i, piece in enumerate(pieces)]
        created = items[0]["created_at"] if items else utc_now()
        rows = self._rows(items)
        with self._transaction() as cur:
            self._run(cur, "insert into knowledge_documents (id, title, source, category, metadata, chunks, user_id,"
                      " created_at) values (?, ?, ?, ?, ?, ?, ?, ?)",
                      (document_id, title, source, category, json.dumps(metadata or {}, ensure_ascii=False),
                       len(items), user_id, created))
            self._index.insert(cur, rows)
        return {"document_id": document_id, "title": title, "chunks_created": len(items), "created_at": created}

    def _item(self, kind, content, title, tags=(), category="", document_id=None, chunk_index=None, user_id="anonymous"):
        now = utc_now()
        return {"id": ("note-" if kind == "note" else "chunk-") + uuid.uuid4().hex[:16], "kind": kind,
                "document_id": document_id, "chunk_index": chunk_index, "title": title, "content": content,
                "tags": list(tags), "category": category, "user_id": user_id, "created_at": now, "updated_at": now}

    def _rows(self, items: list[dict]) -> list[tuple]:
        """Embed and analyse items (the slow part, done before any write)."""
        if not items:
            return []
        vectors = self.embedder.embed_documents([f"{i['title']}\n{i['content']}" for i in items])
        return [(i["id"], i["kind"], i["document_id"], i["chunk_index"], i["title"], i["content"],
                 json.dumps(i["tags"], ensure_ascii=False), i["category"], i["user_id"], i["created_at"],
                 i["updated_at"], np.asarray(v, dtype=np.float32).tobytes(),
                 json.dumps(analyze(f"{i['title']}\n{i['content']}"), ensure_ascii=False))
                for i, v in zip(items, vectors)]

    def _run(self, cur, sql: str, params=()):
        return cur.execute(sql.replace("?", self._mark), params)

    @contextmanager
    def _transaction(self, write: bool = True):
        """A cursor whose statements commit together or not at all; a reader sees one committed state."""
        with self._lock:
            if self.backend == "postgres":
                with self._conn.transaction(), self._conn.cursor() as cur:
                    if not write:
                        cur.execute("set transaction isolation level repeatable read")
                    yield cur
                return
            with sqlite_transaction(self._conn, write) as cur:
                yield cur

    # --- reads -------------------------------------------------------------------------

    def search(self, query: str, top_k: int = 5, kind: str | None = None, category: str | None = None,
               document_id: str | None = None) -> list[dict]:
        """The top_k notes and chunks for a question among those matching the filters (dense + lexical
        candidates from the indexes, fused as the site's search does)."""
        query = check_query(query)
        if not query.strip() or top_k <= 0:
            return []
        filters = {column: value for column, value in (("kind", kind), ("category", category),
                                                       ("document_id", document_id)) if value}
        qvec = _unit(np.asarray(self.embedder.embed_query(nfkc(query)), dtype=np.float32))
        dense, lexical, rows = self._candidates(qvec, analyze_query(query), max(self.settings.candidates, top_k),
                                                filters)
        # Every candidate's cosine from its stored vector: the same numbers whichever index found it.
        cosine = {i: float(np.dot(qvec, _unit(np.frombuffer(bytes(row["embedding"]), dtype=np.float32))))
                  for i, row in rows.items()}
        fused = fuse({"dense": {i: cosine[i] for i in dense}, "lexical": lexical}, self.settings)
        ordered = sorted(fused, key=lambda i: (-round(fused[i], 6), i))[:top_k]
        return [{**_row(rows[i]), "similarity": round(float(np.clip(cosine[i], 0, 1)), 6),
                 "score": round(fused[i], 6)} for i in ordered]

    def _candidates(self, qvec, tokens: dict, n: int, filters: dict) -> tuple[dict, dict, dict]:
        with self._transaction(write=False) as cur:
            if not self._index.stale(cur):
                return self._index.candidates(cur, qvec, tokens, n, filters)
        with self._transaction() as cur:  # rare: a writer without sqlite-vec wrote since
            self._index.sync_vec(cur)
        return self._candidates(qvec, tokens, n, filters)

    def document(self, document_id: str) -> dict | None:
        row = self._sql("select id, title, source, category, metadata, chunks, created_at from knowledge_documents"
                        " where id = ?", (document_id,)).fetchone()
        if row is None:
            return None
        return {"id": row[0], "title": row[1], "source": row[2], "category": row[3], "metadata": json.loads(row[4]),
                "chunks": row[5], "created_at": row[6]}

    def close(self) -> None:
        self._conn.close()


def _check_size(what: str, text: str, limit: int, fix: str) -> None:
    if len(text) > limit:
        raise ContentTooLarge(what, len(text), limit, fix)


def _row(row: dict) -> dict:
    return {**{k: row[k] for k in ("id", "kind", "document_id", "chunk_index", "title", "content", "category",
                                   "user_id", "created_at", "updated_at")}, "tags": json.loads(row["tags"])}


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm else vector.astype(np.float32)


def _public(item: dict) -> dict:
    return {k: item[k] for k in ("id", "title", "content", "tags", "user_id", "created_at", "updated_at")}
