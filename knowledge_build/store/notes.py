"""The tutor's writable knowledge: saved notes and imported documents, searchable by meaning.

Kept in SQLite (a local file, WAL, safe for concurrent writers) or, when a database is
configured, in Postgres (tables `knowledge_notes` and `knowledge_documents`). Each item keeps its
vector and its Japanese lexical tokens, and is ranked with the same fusion as the site's chunks.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import ContentTooLarge, KnowledgeBuildError
from ..ranking import SearchSettings, fuse
from ..search import check_query
from ..text_ja import analyze, analyze_query, nfkc
from ..windows import split_text  # noqa: F401  (also this module's public name)

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


class NotFound(KnowledgeBuildError):
    pass


class NotesUnavailable(KnowledgeBuildError):
    """The notes file cannot be created or opened for writing."""


def _open_sqlite(path: Path) -> sqlite3.Connection:
    """The notes file with its tables, or NotesUnavailable naming the file and the fix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30, check_same_thread=False, isolation_level=None)
        conn.execute("pragma journal_mode=wal")
        for statement in _SCHEMA:
            conn.execute(statement.replace("bytea", "blob"))
    except (OSError, sqlite3.Error) as exc:
        try:
            shown = path.absolute()
        except OSError:  # the working directory itself is gone
            shown = path
        raise NotesUnavailable(
            f"cannot create or write the notes file {shown} ({exc}). Fix: run from a writable directory, "
            "or pass --notes with a path to a writable file") from exc
    return conn


class NoteStore:
    def __init__(self, embedder, path: Path | None = None, database_url: str | None = None):
        self.embedder = embedder
        self._lock = threading.Lock()
        self.settings = SearchSettings()
        if database_url:
            from .postgres import connect

            self._conn = connect(database_url)
            self._conn.autocommit = True
            self._mark = "%s"
            self.backend = "postgres"
        else:
            self._conn = _open_sqlite(Path(path or ".knowledge-notes.sqlite"))
            self._mark = "?"
            self.backend = "sqlite"
        if self.backend == "postgres":
            for statement in _SCHEMA:
                self._sql(statement)
            # Notes are the tutor's own: no policy, so Supabase's anon/authenticated roles see nothing.
            for table in ("knowledge_notes", "knowledge_documents"):
                self._sql(f"alter table {table} enable row level security")

    def _sql(self, sql: str, params=()):
        with self._lock:
            return self._conn.execute(sql.replace("?", self._mark), params)

    # --- writes ------------------------------------------------------------------------

    def save(self, content: str, title: str | None = None, tags=None, user_id: str = "anonymous") -> dict:
        _check_size("note", content, MAX_NOTE_CHARS, "Import it with knowledge_import, which splits it into chunks.")
        _check_size("title", title or "", MAX_TITLE_CHARS, "Give a shorter title.")
        item = self._item("note", content, title or content.strip()[:30], tags=tags or [], user_id=user_id)
        rows = self._rows([item])
        with self._transaction() as write:
            write(_INSERT_NOTE, rows, many=True)
        return _public(item)

    def delete(self, item_id: str) -> None:
        rows = self._sql("select id from knowledge_notes where id = ? or document_id = ?", (item_id, item_id)).fetchall()
        if not rows:
            raise NotFound("knowledge not found")
        self._sql("delete from knowledge_notes where id = ? or document_id = ?", (item_id, item_id))
        self._sql("delete from knowledge_documents where id = ?", (item_id,))

    def import_document(self, title: str, content: str, source: str = "", category: str = "", chunk_size: int = 500,
                        chunk_overlap: int = 50, metadata: dict | None = None, user_id: str = "anonymous") -> dict:
        """Split, embed and store a document with its chunks in one transaction: all or nothing."""
        _check_size("document", content, MAX_DOCUMENT_CHARS, "Import it in parts.")
        _check_size("title", title, MAX_TITLE_CHARS, "Give a shorter title.")
        document_id = "doc-" + uuid.uuid4().hex[:16]
        pieces = split_text(content, chunk_size, chunk_overlap, max_chunks=MAX_IMPORT_CHUNKS)
        items = [self._item("chunk", piece, f"{title} ({i + 1})", category=category, document_id=document_id,
                            chunk_index=i, user_id=user_id) for i, piece in enumerate(pieces)]
        created = items[0]["created_at"] if items else _now()
        rows = self._rows(items)
        with self._transaction() as write:
            write("insert into knowledge_documents (id, title, source, category, metadata, chunks, user_id, created_at)"
                  " values (?, ?, ?, ?, ?, ?, ?, ?)", (document_id, title, source, category,
                                                       json.dumps(metadata or {}, ensure_ascii=False), len(items),
                                                       user_id, created))
            write(_INSERT_NOTE, rows, many=True)
        return {"document_id": document_id, "title": title, "chunks_created": len(items), "created_at": created}

    def _item(self, kind, content, title, tags=(), category="", document_id=None, chunk_index=None, user_id="anonymous"):
        now = _now()
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

    @contextmanager
    def _transaction(self):
        """A writer `write(sql, params, many=False)` whose statements commit together or not at all."""
        with self._lock:
            cursor = self._conn.cursor()

            def write(sql, params=(), many=False):
                sql = sql.replace("?", self._mark)
                if many:
                    if params:
                        cursor.executemany(sql, params)
                else:
                    cursor.execute(sql, params)

            if self.backend == "postgres":
                with self._conn.transaction():
                    yield write
                return
            cursor.execute("begin immediate")
            try:
                yield write
            except BaseException:
                cursor.execute("rollback")
                raise
            cursor.execute("commit")

    # --- reads -------------------------------------------------------------------------

    def search(self, query: str, top_k: int = 5, kind: str | None = None, category: str | None = None,
               document_id: str | None = None) -> list[dict]:
        where, params = ["1 = 1"], []
        for column, value in (("kind", kind), ("category", category), ("document_id", document_id)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        query = check_query(query)
        rows = self._sql("select id, kind, document_id, chunk_index, title, content, tags, category, user_id, created_at,"
                         f" updated_at, embedding, tokens from knowledge_notes where {' and '.join(where)}",
                         params).fetchall()
        if not rows or not query.strip():
            return []
        qvec = self.embedder.embed_query(nfkc(query))
        matrix = np.stack([np.frombuffer(bytes(r[11]), dtype=np.float32) for r in rows])
        cosine = matrix @ qvec
        dense = {i: float(cosine[i]) for i in np.argsort(-cosine)[: self.settings.candidates]}
        fused = fuse({"dense": dense, "lexical": _bm25_scores(query, [json.loads(r[12]) for r in rows], self.settings)},
                     self.settings)
        ordered = sorted(fused, key=lambda i: (-fused[i], rows[i][0]))[:top_k]
        return [{**_row(rows[i]), "similarity": round(float(np.clip(cosine[i], 0, 1)), 6),
                 "score": round(fused[i], 6)} for i in ordered]

    def document(self, document_id: str) -> dict | None:
        row = self._sql("select id, title, source, category, metadata, chunks, created_at from knowledge_documents"
                        " where id = ?", (document_id,)).fetchone()
        if row is None:
            return None
        return {"id": row[0], "title": row[1], "source": row[2], "category": row[3], "metadata": json.loads(row[4]),
                "chunks": row[5], "created_at": row[6]}

    def close(self) -> None:
        self._conn.close()


_INSERT_NOTE = ("insert into knowledge_notes (id, kind, document_id, chunk_index, title, content, tags, category,"
                " user_id, created_at, updated_at, embedding, tokens) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def _check_size(what: str, text: str, limit: int, fix: str) -> None:
    if len(text) > limit:
        raise ContentTooLarge(what, len(text), limit, fix)


def _bm25_scores(query: str, docs: list[dict], settings: SearchSettings) -> dict[int, float]:
    from ..search import bm25_models, field_scores

    models = bm25_models({name: [d.get(name) or [] for d in docs] for name in settings.field_weights})
    total = field_scores(models, analyze_query(query), settings.field_weights, len(docs))
    return {i: float(s) for i, s in enumerate(total) if s > 0}


def _row(r) -> dict:
    return {"id": r[0], "kind": r[1], "document_id": r[2], "chunk_index": r[3], "title": r[4], "content": r[5],
            "tags": json.loads(r[6]), "category": r[7], "user_id": r[8], "created_at": r[9], "updated_at": r[10]}


def _public(item: dict) -> dict:
    return {k: item[k] for k in ("id", "title", "content", "tags", "user_id", "created_at", "updated_at")}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")

