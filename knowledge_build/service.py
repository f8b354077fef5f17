"""`SearchService`: the database first, the artifacts whenever the database is down or slow.

The query is embedded once. The dense ranking comes from the database's `search_knowledge`
RPC (connect timeout, statement_timeout) or, on any failure, from the local FAISS index; the
Japanese lexical channel is always computed locally from the artifacts, and both are fused the
same way, so either path returns the same kind of result, marked with its `source`. A circuit
breaker skips the database for a while after a failure and then lets one probe through.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from .chunks import Chunk
from .errors import KnowledgeBuildError
from .search import KnowledgeIndex, SearchResult

log = logging.getLogger("knowledge_build.service")


@dataclass
class CircuitBreaker:
    """Closed: use the database. Open: skip it until `reset_after` seconds passed, then half-open:
    one probe decides."""

    failure_threshold: int = 1
    reset_after: float = 10.0
    failures: int = 0
    opened_at: float | None = None

    def allow(self) -> bool:
        if self.opened_at is None:
            return True
        return time.monotonic() - self.opened_at >= self.reset_after

    def success(self) -> None:
        if self.opened_at is not None:
            log.info("database is back: leaving the artifact fallback")
        self.failures, self.opened_at = 0, None

    def failure(self) -> None:
        self.failures += 1
        if self.failures >= self.failure_threshold:
            self.opened_at = time.monotonic()

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half-open" if self.allow() else "open"


class SearchService:
    def __init__(self, index: KnowledgeIndex, database_url: str | None = None, connect_timeout: float = 2.0,
                 statement_timeout_ms: int = 2000, breaker: CircuitBreaker | None = None):
        self.index = index
        self.database_url = database_url
        self.connect_timeout = connect_timeout
        self.statement_timeout_ms = statement_timeout_ms
        self.breaker = breaker or CircuitBreaker()
        self._conn = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, index_dir, database_url: str | None = None, **options) -> "SearchService":
        return cls(KnowledgeIndex.open(index_dir), database_url, **options)

    def search(self, query: str, k: int = 5, type=None, category=None, material=None, level=None,
               mode: str = "hybrid", min_similarity: float | None = None) -> list[SearchResult]:
        def from_database(qvec, filters):
            return self._with_database("search", lambda conn: self._dense_rows(conn, qvec, filters))

        return self.index.search(query, k, type, category, material, level, mode, min_similarity, from_database)

    def get(self, chunk_id: str) -> dict:
        """The full chunk as a dict, with `source`."""
        from .store.postgres import get_chunk

        row = self._with_database("get_chunk_by_id", lambda conn: get_chunk(conn, chunk_id) or False)
        if row:
            return {**row, "source": "database"}
        return {**self.index.get(chunk_id).to_dict(), "source": "artifacts"}

    def concepts(self, type: str | None = None, category: str | None = None) -> list[dict]:
        from .store.postgres import list_concepts

        rows = self._with_database("list_concepts", lambda conn: list_concepts(conn, category, type))
        if rows is not None:
            return [{**r, "learns": list(r["learns"]), "source": "database"} for r in rows]
        return [_concept(c) for c in self.index.concepts(type=type, category=category)]

    def health(self) -> dict:
        """Which backend answers now: the database while its breaker is closed, else the artifacts."""
        live = "database" if self.database_url and self.breaker.state == "closed" else "artifacts"
        return {"backend": live,
                "database_configured": bool(self.database_url), "breaker": self.breaker.state,
                "build_id": self.index.build_id, "chunks": len(self.index)}

    def close(self) -> None:
        with self._lock:
            self._drop_connection()

    # --- the database path ---------------------------------------------------------------

    def _dense_rows(self, conn, qvec, filters) -> dict[int, float]:
        from .store.postgres import dense_search

        rows = dense_search(conn, qvec, self.index.settings.candidates, **filters)
        dense = {}
        for chunk_id, similarity, *_ in rows:
            row = self.index.row_of(chunk_id)
            if row is not None:  # a chunk the local artifacts lack (another build) cannot be fused
                dense[row] = float(similarity)
        if rows and not dense:
            raise KnowledgeBuildError("the database and the artifacts hold different builds; publish the artifacts")
        return dense

    def _with_database(self, what: str, action):
        """Run `action(conn)`; None when there is no database or it failed (then the breaker opens)."""
        if not self.database_url or not self.breaker.allow():
            return None
        import psycopg

        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    from .store.postgres import connect

                    self._conn = connect(self.database_url, self.connect_timeout, self.statement_timeout_ms)
                    self._conn.autocommit = True
                result = action(self._conn)
            except (psycopg.Error, OSError, KnowledgeBuildError) as exc:
                self._drop_connection()
                self.breaker.failure()
                log.warning("database %s failed (%s); answering from the artifacts for the next %.0f s",
                            what, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                            self.breaker.reset_after)
                return None
        self.breaker.success()
        return result

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - a dead connection may fail to close; it is gone either way
                pass
            self._conn = None


def _concept(chunk: Chunk) -> dict:
    return {"id": chunk.id, "title": chunk.title, "type": chunk.type, "url": chunk.url, "learns": list(chunk.learns),
            "material": chunk.material, "category": chunk.category, "source": "artifacts"}
