"""Web sources in the writable store: pages from other sites, their chunks, vectors and tokens.

Kept next to the notes (store/notes.py), in the same SQLite file or Postgres database, in tables of
their own: `knowledge_sources` (one row per page) and `knowledge_source_chunks`. Both indexes grow
with the store, so a query reads neither every row nor rebuilds a model:
- lexical: SQLite FTS5 over the analysed Japanese tokens (fields lemma, reading, kana2, page,
  heading, weighted as SearchSettings.field_weights), Postgres full text (sources_pg.py);
- dense: a sqlite-vec `vec0` table (exact KNN) or pgvector. Where sqlite-vec cannot be loaded the
  store still works: an exact numpy search over the vectors, read again only when the store changed.
Re-ingesting a page writes the new chunks and deletes the old ones in one transaction.
"""

from __future__ import annotations

import json
import logging
import threading
import unicodedata
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import KnowledgeBuildError
from ..ranking import SearchSettings, fuse
from ..search import check_query
from ..web.chunk import WebChunk
from .notes import NotFound

log = logging.getLogger("knowledge_build.store")

FIELDS = ("lemma", "reading", "kana2", "page", "heading")
_COLUMNS = ("id", "source_url", "chunk_index", "url", "title", "heading", "parents", "kind", "text", "crawled_at",
            "embedding")
_warned_fallback = False


class SourcesUnavailable(KnowledgeBuildError):
    """The sources store cannot be opened or used as asked; the message says how to fix it."""


class InvalidChunks(KnowledgeBuildError):
    """Chunks handed to replace_source do not belong to the source named."""


class SourceStore:
    """Web sources with hybrid search. `target`: a SQLite file path or a postgresql:// URL.
    `vector_index` (SQLite only): "auto" (sqlite-vec when it loads, else numpy), "sqlite-vec", "numpy"."""

    def __init__(self, embedder, target: str | Path, *, vector_index: str = "auto",
                 settings: SearchSettings | None = None):
        self.embedder = embedder
        self.settings = settings or SearchSettings()
        dim = int(getattr(embedder, "dim", 0) or len(embedder.embed_query("dim")))
        if str(target).startswith(("postgresql://", "postgres://")):
            from .sources_pg import PostgresSources

            self._db = PostgresSources(str(target), dim, self.settings)
            self.backend = "postgres"
        else:
            self._db = SqliteSources(Path(target), dim, self.settings, vector_index)
            self.backend = "sqlite"

    @property
    def vector_index(self) -> str:
        """How the dense channel is searched: "sqlite-vec", "numpy" or "pgvector"."""
        return self._db.vector_index

    def replace_source(self, source_url: str, title: str, chunks: list[WebChunk]) -> int:
        """Store a page's chunks in place of its previous ones (one transaction). Returns chunks stored."""
        for chunk in chunks:
            if chunk.source_url != source_url:
                raise InvalidChunks(f"chunk {chunk.chunk_index} belongs to {chunk.source_url}, not {source_url}. "
                                    "Fix: store each page's chunks under the page's own URL.")
        rows = prepare(self.embedder, chunks)  # the slow part, before any lock or transaction
        crawled_at = max((c.crawled_at for c in chunks), default=None) or _now()
        return self._db.replace(source_url, title, crawled_at, rows)

    def delete_source(self, source_url: str) -> int:
        """Delete a page and its chunks; returns the chunks deleted. NotFound for an unknown URL."""
        deleted = self._db.delete(source_url)
        if deleted is None:
            raise NotFound(f"no source {source_url}. Fix: 'sources status' lists the stored URLs.")
        return deleted

    def status(self) -> dict:
        return self._db.status()

    def sources(self) -> list[dict]:
        return self._db.sources()

    def query(self, text: str, k: int = 5, threshold: float | None = None) -> list[dict]:
        """The k best chunks for a question (dense + lexical, fused as the site's search does).
        threshold: the minimum cosine similarity between the query's and a chunk's vectors; a chunk
        below it is left out even when its words match (None keeps every candidate)."""
        from ..text_ja import analyze_query, nfkc

        text = check_query(text)
        if not text:
            return []
        vector = self.embedder.embed_query(nfkc(text))
        return self.query_vector(vector, analyze_query(text), k, threshold)

    def query_vector(self, vector, tokens: list[str] | dict, k: int = 5, threshold: float | None = None) -> list[dict]:
        """query() with the embedding and analysis done: `tokens` is analyze_query's dict, or a
        list of lemmas (which then also stand for the page and heading fields)."""
        if k <= 0:
            return []
        if not isinstance(tokens, dict):
            lemmas = [str(t) for t in tokens]
            tokens = {"lemma": lemmas, "page": list(dict.fromkeys(lemmas)), "heading": list(dict.fromkeys(lemmas))}
        qvec = _unit(np.asarray(vector, dtype=np.float32))
        dense, lexical, rows = self._db.candidates(qvec, tokens, self.settings.candidates)
        fused = fuse({"dense": dense, "lexical": lexical}, self.settings)
        results = []
        for row_id in sorted(fused, key=lambda i: (-fused[i], rows[i]["source_url"], rows[i]["chunk_index"])):
            row = rows[row_id]
            similarity = float(np.dot(qvec, row["embedding"]))
            if threshold is not None and similarity < threshold:
                continue
            results.append(_result(row, similarity, fused[row_id]))
            if len(results) == k:
                break
        return results

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def prepare(embedder, chunks: list[WebChunk]) -> list[dict]:
    """Each chunk's row: its fields, unit vector (float32) and tokens per field."""
    from ..text_ja import analyze

    if not chunks:
        return []
    texts = [embed_text(c) for c in chunks]
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    rows = []
    for chunk, text, vector in zip(chunks, texts, vectors):
        tokens = analyze(text)
        page = list(dict.fromkeys(analyze(chunk.title)["lemma"]))
        heading = " ".join([*chunk.parents, chunk.heading])
        tokens["page"] = page
        tokens["heading"] = list(dict.fromkeys(page + analyze(heading)["lemma"]))
        rows.append({"chunk_index": chunk.chunk_index, "url": chunk.url, "title": chunk.title,
                     "heading": chunk.heading, "parents": list(chunk.parents), "kind": chunk.kind,
                     "text": chunk.text, "crawled_at": chunk.crawled_at, "embedding": _unit(vector),
                     "tokens": tokens})
    return rows


def embed_text(chunk: WebChunk) -> str:
    """What a chunk's vector is made from: its page title, heading path and text."""
    path = " / ".join(p for p in (*chunk.parents, chunk.heading) if p)
    return "\n".join(p for p in (chunk.title, path, chunk.text) if p)


def fts_token(token: str) -> str:
    """A token as one FTS word: letters and digits stay; any other token (「--」, 「^2」) becomes
    a hex spelling behind 'ˣ', which analysed text never holds (NFKC makes it 'x'), so that the
    tokenizer neither splits it nor matches it to a part of another token."""
    if all(unicodedata.category(c)[0] in "LN" for c in token):
        return token
    return "ˣ" + token.encode("utf-8").hex()


def fts_document(tokens: dict) -> list[str]:
    return [" ".join(fts_token(t) for t in tokens.get(name) or [] if t) for name in FIELDS]


def fts_match(tokens: dict) -> str:
    """An FTS5 MATCH expression: any of the query's tokens, each in its own field."""
    parts = []
    for name in FIELDS:
        words = dict.fromkeys(fts_token(t) for t in tokens.get(name) or [] if t)
        if words:
            parts.append(f"{name} : ({' OR '.join(chr(34) + w + chr(34) for w in words)})")
    return " OR ".join(parts)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm).astype(np.float32) if norm else vector.astype(np.float32)


def _result(row: dict, similarity: float, score: float) -> dict:
    return {"id": f"web-{row['id']}", "source": row["source_url"], "url": row["url"], "title": row["title"],
            "heading": row["heading"], "parents": row["parents"], "kind": row["kind"], "text": row["text"],
            "chunk_index": row["chunk_index"], "crawled_at": row["crawled_at"],
            "similarity": round(float(np.clip(similarity, 0, 1)), 6), "score": round(float(score), 6)}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --- SQLite --------------------------------------------------------------------------------

_SQLITE_SCHEMA = [
    """create table if not exists knowledge_sources (url text primary key, title text not null,
        chunks integer not null, crawled_at text not null, updated_at text not null)""",
    """create table if not exists knowledge_source_chunks (id integer primary key autoincrement,
        source_url text not null, generation integer not null, chunk_index integer not null, url text not null,
        title text not null, heading text not null, parents text not null, kind text not null, text text not null,
        crawled_at text not null, embedding blob not null, tokens text not null)""",
    "create index if not exists knowledge_source_chunks_source on knowledge_source_chunks (source_url, generation)",
    # One row: the store's generation (bumped by every write), the generation the vec0 table
    # holds (a writer without sqlite-vec leaves it behind; a reader with it rebuilds), the dimension.
    """create table if not exists knowledge_source_state (id integer primary key check (id = 1),
        generation integer not null, vec_generation integer not null, dim integer not null)""",
    f"""create virtual table if not exists knowledge_source_fts using fts5({', '.join(FIELDS)},
        tokenize='unicode61 remove_diacritics 0')""",
]


def _sqlite_module(vector_index: str):
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
        log.warning("sqlite-vec cannot be used (%s): web sources are searched with an exact in-memory "
                    "scan instead (same results, more memory). Fix: pip install 'knowledge-build[web]'.", reason)
        _warned_fallback = True
    return sqlite3, None


class SqliteSources:
    def __init__(self, path: Path, dim: int, settings: SearchSettings, vector_index: str = "auto"):
        self.dim, self.settings, self.path = dim, settings, path
        module, sqlite_vec = _sqlite_module(vector_index)
        self._lock = threading.RLock()
        self._matrix: tuple[int, np.ndarray, np.ndarray] | None = None  # (generation, ids, vectors)
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
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("begin immediate" if write else "begin")
            try:
                yield cur
            except BaseException:
                cur.execute("rollback")
                raise
            cur.execute("commit")

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
                            " heading, parents, kind, text, crawled_at, embedding, tokens)"
                            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (source_url, generation, row["chunk_index"], row["url"], row["title"], row["heading"],
                             json.dumps(row["parents"], ensure_ascii=False), row["kind"], row["text"],
                             row["crawled_at"], row["embedding"].tobytes(),
                             json.dumps(row["tokens"], ensure_ascii=False)))
                row_id = cur.lastrowid
                cur.execute(f"insert into knowledge_source_fts (rowid, {', '.join(FIELDS)}) values (?, ?, ?, ?, ?, ?)",
                            (row_id, *fts_document(row["tokens"])))
                if vec:
                    cur.execute("insert into knowledge_source_vec (rowid, embedding) values (?, ?)",
                                (row_id, row["embedding"].tobytes()))
            self._delete_chunks(cur, source_url, generation, vec)
            cur.execute("insert into knowledge_sources (url, title, chunks, crawled_at, updated_at)"
                        " values (?, ?, ?, ?, ?) on conflict (url) do update set title = excluded.title,"
                        " chunks = excluded.chunks, crawled_at = excluded.crawled_at, updated_at = excluded.updated_at",
                        (source_url, title, len(rows), crawled_at, _now()))
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
        cur.execute(f"delete from knowledge_source_fts where rowid in ({old})", (source_url, below))
        if vec:
            cur.execute(f"delete from knowledge_source_vec where rowid in ({old})", (source_url, below))
        cur.execute("delete from knowledge_source_chunks where source_url = ? and generation < ?", (source_url, below))
        return cur.rowcount

    # --- reads -----------------------------------------------------------------------------

    def status(self) -> dict:
        with self._transaction(write=False) as cur:
            sources, last = cur.execute("select count(*), max(crawled_at) from knowledge_sources").fetchone()
            chunks = cur.execute("select count(*) from knowledge_source_chunks").fetchone()[0]
        return {"sources": sources, "chunks": chunks, "last_crawl": last}

    def sources(self) -> list[dict]:
        with self._transaction(write=False) as cur:
            rows = cur.execute("select url, title, chunks, crawled_at from knowledge_sources order by url").fetchall()
        return [{"url": r[0], "title": r[1], "chunks": r[2], "crawled_at": r[3]} for r in rows]

    def candidates(self, qvec: np.ndarray, tokens: dict, n: int) -> tuple[dict, dict, dict]:
        """({id: cosine} of the n nearest, {id: BM25} of the n best lexical, {id: row}) from one snapshot."""
        if self.vector_index == "sqlite-vec":
            self._sync_vec()
        with self._transaction(write=False) as cur:
            if self.vector_index == "sqlite-vec":
                dense = {r[0]: 1.0 - float(r[1]) for r in cur.execute(
                    "select rowid, distance from knowledge_source_vec where embedding match ? and k = ?",
                    (qvec.tobytes(), n))}
            else:
                dense = self._scan(cur, qvec, n)
            lexical = {}
            match = fts_match(tokens)
            if match:
                weights = ", ".join(str(float(self.settings.field_weights.get(f, 0.0))) for f in FIELDS)
                lexical = {r[0]: -float(r[1]) for r in cur.execute(
                    f"select rowid, bm25(knowledge_source_fts, {weights}) as s from knowledge_source_fts"
                    " where knowledge_source_fts match ? order by s limit ?", (match, n))}
            ids = sorted(set(dense) | set(lexical))
            rows = {}
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                for r in cur.execute(f"select {', '.join(_COLUMNS)} from knowledge_source_chunks where id in"
                                     f" ({', '.join('?' * len(part))})", part):
                    row = dict(zip(_COLUMNS, r))
                    row["parents"] = json.loads(row["parents"])
                    row["embedding"] = np.frombuffer(row["embedding"], dtype=np.float32)
                    rows[row["id"]] = row
        return dense, lexical, rows

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
