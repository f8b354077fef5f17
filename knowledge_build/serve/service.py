"""`SearchService`: the database first, the artifacts whenever the database is down, slow or
holds another build.

The query is embedded once. A hybrid (or lexical) query is answered by the database's hybrid
`search_knowledge(query_text, query_embedding, ...)` RPC (migration 006: BM25 over character
bigrams, the HNSW ranking, fusion and relevance in SQL; connect timeout, statement_timeout), whose
ranked rows become results here (places, sub-results, locations). A dense query takes the dense
ranking from the embedding-only RPC and fuses it locally. On any failure the artifacts answer
(KnowledgeIndex), so either path returns the same kind of result, marked with its `source`.

Concurrent callers borrow connections from a pool (psycopg_pool), so one slow query does not
hold up the others. A circuit breaker skips the database for a while after a failure; then
exactly one caller probes it over a fresh connection while the others keep answering from the
artifacts, and only a successful probe opens a new pool. A database that answers but holds a
different build than the loaded artifacts is not an outage: the breaker stays closed, the
artifacts answer, and `health()` names the database's build.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ChunkNotFound, KnowledgeBuildError, MissingExtra
from ..ranking.settings import MAX_MATCH_COUNT
from ..search import KnowledgeIndex, SearchResult

log = logging.getLogger("knowledge_build.service")
HYBRID_DEPTH_CAP = MAX_MATCH_COUNT  # the most rows one hybrid RPC call is asked for (the RPC refuses more)
_NO_HYBRID = object()  # the database answered but has no hybrid RPC (published by an older version)


class AnotherBuild(KnowledgeBuildError):
    """The database answers but holds other chunks than the loaded artifacts."""


@dataclass
class CircuitBreaker:
    """Closed: use the database. Open: skip it until `reset_after` seconds passed, then half-open:
    one probe decides while every other caller skips the database."""

    failure_threshold: int = 1
    reset_after: float = 10.0
    clock: Callable[[], float] = time.monotonic
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def acquire(self) -> str | None:
        """'closed': use the database; 'probe': you are the one probe (report with probe=True);
        None: skip the database."""
        with self._lock:
            if self.opened_at is None:
                return "closed"
            if self.probing or self.clock() - self.opened_at < self.reset_after:
                return None
            self.probing = True
            return "probe"

    def allow(self) -> bool:
        """Would a call reach the database now (without claiming the probe)?"""
        with self._lock:
            return self.opened_at is None or (not self.probing and self.clock() - self.opened_at >= self.reset_after)

    def success(self, probe: bool = False) -> None:
        with self._lock:
            was_open = self.opened_at is not None
            self.failures, self.opened_at = 0, None
            if probe:
                self.probing = False
        if was_open:
            log.info("database is back: leaving the artifact fallback")

    def failure(self, probe: bool = False) -> bool:
        """Count a failure; True when this one opened the breaker (callers log only then)."""
        with self._lock:
            if probe:
                self.probing = False
            was_open = self.opened_at is not None
            self.failures += 1
            if self.failures >= self.failure_threshold:
                self.opened_at = self.clock()
            return self.opened_at is not None and not was_open

    @property
    def state(self) -> str:
        with self._lock:
            if self.opened_at is None:
                return "closed"
            return "half-open" if self.probing or self.clock() - self.opened_at >= self.reset_after else "open"


@dataclass
class _BuildCheck:
    """Which build the database holds, re-read at most every `interval` seconds."""

    local: str
    interval: float
    database: str | None = None
    checked_at: float | None = None
    warned: str | None = None
    functions: dict | None = None  # store/db_functions.py report(): are the database's functions this version's?
    warned_functions: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def matches(self) -> bool | None:
        return None if self.checked_at is None else self.database == self.local

    def fresh(self) -> bool:
        return self.checked_at is not None and time.monotonic() - self.checked_at < self.interval

    def record(self, database: str | None, functions: dict | None = None) -> None:
        self._record_functions(functions)
        with self._lock:
            self.database, self.checked_at = database, time.monotonic()
            if database == self.local:
                if self.warned is not None:
                    log.info("the database holds build %s again: searching it", database)
                self.warned = None
                return
            if self.warned == (database or ""):
                return  # said once; repeating it per query would flood the log
            self.warned = database or ""
        log.warning("the database holds %s, the artifacts build %s: answering from the artifacts until "
                    "they match (publish these artifacts, or load the published ones)",
                    f"build {database}" if database else "no published build", self.local)

    def _record_functions(self, functions: dict | None) -> None:
        from ..store.db_functions import message

        with self._lock:
            self.functions = functions
            outdated = bool(functions and functions["functions"] == "outdated")
            said, self.warned_functions = self.warned_functions, outdated
        if outdated and not said:
            log.warning("%s. Fix: %s", message(functions), functions["fix"])


class SearchService:
    def __init__(self, index: KnowledgeIndex, database_url: str | None = None, connect_timeout: float = 2.0,
                 statement_timeout_ms: int = 2000, breaker: CircuitBreaker | None = None, pool_size: int = 4,
                 build_check_interval: float = 30.0):
        self.index = index
        self.database_url = database_url
        self.connect_timeout = connect_timeout
        self.statement_timeout_ms = statement_timeout_ms
        self.pool_size = pool_size
        self.breaker = breaker or CircuitBreaker()
        self._build = _BuildCheck(index.build_id, build_check_interval)
        self._pool = None
        self._pool_lock = threading.Lock()
        self._hybrid_available = True  # False once the database turned out to lack the hybrid RPC

    @classmethod
    def open(cls, index_dir, database_url: str | None = None, **options) -> "SearchService":
        return cls(KnowledgeIndex.open(index_dir), database_url, **options)

    def search(self, query: str, k: int = 5, type=None, category=None, material=None, level=None,
               mode: str = "hybrid", min_similarity: float | None = None,
               min_relevance: float | None = None, version=None, language=None) -> list[SearchResult]:
        """`version`, `language`: the site's facets (ranking/facets.py: left out, the newest version)."""
        if mode in ("hybrid", "lexical") and self.database_url and self._hybrid_available:
            found = self._hybrid(query, k, dict(type=type, category=category, material=material, level=level,
                                                version=version, language=language), mode,
                                 min_similarity, min_relevance)
            if found is not None:
                return found

        def from_database(qvec, filters):
            return self._with_database("search", lambda conn: self._dense_rows(conn, qvec, filters))

        return self.index.search(query, k, type, category, material, level, mode, min_similarity, from_database,
                                 min_relevance=min_relevance, version=version, language=language)

    def get(self, chunk_id: str, part: str | None = None) -> dict:
        """The full chunk as a dict, with `absolute_url` and `source`; `part` "problem" or "solution": only that part
        of a box whose answer is marked (part_of). An old id that moved (index/aliases.py) gives the chunk it moved
        to, with `moved_from` (the id asked); ChunkNotFound for an id the set never had."""
        from ..store.postgres import get_chunk

        try:
            chunk, moved = self.index.resolve(chunk_id)  # an old id (an alias): the chunk it moved to
        except ChunkNotFound:
            chunk, moved = None, None
        said = {"moved_from": moved} if moved else {}
        if part is not None:
            if chunk is None:
                raise ChunkNotFound(chunk_id)
            return {**part_of(chunk, part, self.index.absolute_url), **said}
        current = chunk.id if chunk is not None else chunk_id
        row = self._with_database("get_chunk_by_id", lambda conn: get_chunk(conn, current) or False)
        if not row and chunk is None:
            raise ChunkNotFound(chunk_id)
        row, source = (row, "database") if row else (chunk.to_dict(), "artifacts")
        return {**row, "absolute_url": self.index.absolute_url(row["url"]), "source": source, **said}

    def concepts(self, type: str | None = None, category: str | None = None) -> list[dict]:
        """Every concept (id, title, type, url, absolute_url, learns, material, category, source) of
        the type and category, in id order; display names are accepted (UnknownFilterValue for a
        value no chunk has, before the database is asked)."""
        from ..store.postgres import list_concepts

        filters = self.index.filters.resolve_all(type=type, category=category)
        rows = self._with_database("list_concepts",
                                   lambda conn: list_concepts(conn, filters["category"], filters["type"]))
        if rows is None:
            return [self._concept(c.to_dict(), "artifacts") for c in self.index.concepts(**filters)]
        # Code-point order, as the artifacts: the database's collation may sort Japanese ids
        # otherwise, and a page must not depend on which backend answered it.
        return [self._concept(r, "database") for r in sorted(rows, key=lambda r: r["id"])]

    def outline(self, material: str | None = None) -> list[dict]:
        """The site's pages (or one) → sections → boxes, in page order, each link also absolute (teaching.outline;
        from the artifacts, which hold every chunk's place in its page)."""
        def absolute(entry: dict) -> dict:
            return {**entry, "absolute_url": self.index.absolute_url(entry["url"]),
                    **({"items": [absolute(e) for e in entry["items"]]} if "items" in entry else {})}

        return [absolute(page) for page in self.index.outline(material)]

    def learning_path(self, target: str | None = None, query: str | None = None) -> dict:
        """The learning path (teaching.learning_path) of a page, named by `target` (its name or a chunk id) or by
        `query` (the page of the search's first result, said in `found_by`), each page's link also absolute."""
        found_by = None
        if target is None:
            if not (query or "").strip():
                raise KnowledgeBuildError("give a page, a chunk id or a query")
            results = self.search(query, k=1)
            if not results:
                raise KnowledgeBuildError(f"nothing on the site matches {query!r}; give a page or a chunk id instead")
            target = results[0].id
            found_by = {"query": query, "id": target, "relevant": results[0].relevant}
        path = self.index.learning_path(target).to_dict()
        for key in ("before", "after"):
            path[key] = [{**p, "absolute_url": self.index.absolute_url(p["url"])} for p in path[key]]
        path["page"] = {**path["page"], "absolute_url": self.index.absolute_url(path["page"]["url"])}
        return {**path, **({"found_by": found_by} if found_by else {})}

    def concept_page(self, type: str | None = None, category: str | None = None, limit: int = 100,
                     offset: int = 0) -> dict:
        """`limit` concepts from `offset` on, with `total` (all that match) and `next_offset` (None
        on the last page)."""
        if limit < 1 or offset < 0:
            raise KnowledgeBuildError(f"limit must be at least 1 and offset at least 0 (got {limit}, {offset})")
        found = self.concepts(type=type, category=category)
        page = found[offset:offset + limit]
        following = offset + len(page)
        return {"concepts": page, "total": len(found), "offset": offset, "limit": limit,
                "next_offset": following if following < len(found) else None}

    def _concept(self, row: dict, source: str) -> dict:
        concept = {key: row[key] for key in _CONCEPT_FIELDS}
        concept["learns"] = list(concept["learns"])
        return {**concept, "absolute_url": self.index.absolute_url(row["url"]), "source": source}

    def health(self) -> dict:
        """Which backend answers now: the database while its breaker is closed and it holds the
        artifacts' build, else the artifacts. `database_build` is the build the database held when
        last asked (None before the first call); `database_functions` whether its functions are this
        version's ("current", "outdated" with `database_functions_fix`, None: not known)."""
        state, matches = self.breaker.state, self._build.matches
        live = "database" if self.database_url and state == "closed" and matches is not False else "artifacts"
        functions = self._build.functions or {}
        return {"backend": live, "database_configured": bool(self.database_url), "breaker": state,
                "build_id": self.index.build_id, "database_build": self._build.database,
                "database_build_matches": matches, "database_functions": functions.get("functions"),
                "database_functions_outdated": functions.get("outdated", []),
                "database_functions_fix": functions.get("fix"), "chunks": len(self.index)}

    def close(self) -> None:
        self._drop_pool()

    # --- the database path ---------------------------------------------------------------

    def _hybrid(self, query: str, k: int, filters: dict, mode: str, min_similarity, min_relevance):
        """The database's hybrid RPC (search_knowledge with the query text): its ranked rows become
        results here (places, sub-results, other locations), with its scores and relevance. None when
        the database cannot answer (the caller then answers from the artifacts)."""
        prepared = self.index.prepared(query, k, mode, **filters)
        if prepared is None:
            return []
        query, filters, qvec, _ = prepared
        # Enough rows for k places: a place may hold several chunks (a table's rows), and a page part
        # may be lifted from up to 20 places further down (places.py).
        depth = min(HYBRID_DEPTH_CAP, 3 * k + 20)
        rows = self._with_database("search", lambda conn: self._hybrid_rows(conn, query, qvec, depth, min_similarity,
                                                                           filters))
        if rows is None or rows is _NO_HYBRID:
            return None
        relevant = self.index.settings.min_relevance if min_relevance is None else min_relevance
        passing = (row for row in rows if relevant is None or row[3] >= relevant)
        return self.index.ranker.places(passing, k, filters, "database")

    def _hybrid_rows(self, conn, query, qvec, depth, min_similarity, filters):
        import psycopg

        from ..store.postgres import hybrid_search

        try:
            rows = hybrid_search(conn, query, qvec, depth, min_similarity, **filters)
        except psycopg.errors.UndefinedFunction:
            conn.rollback()
            log.warning("the database has no hybrid search_knowledge(query_text, ...) yet: publish the artifacts "
                        "with this version to add it; until then the database gives the dense ranking only")
            self._hybrid_available = False
            return _NO_HYBRID
        found = []
        for chunk_id, score, similarity, relevance in rows:
            row = self.index.row_of(chunk_id)
            if row is None:  # a chunk the local artifacts lack: another build
                raise AnotherBuild("the database and the artifacts hold different builds; publish the artifacts")
            found.append((row, float(score), float(similarity), float(relevance)))
        return found

    def _dense_rows(self, conn, qvec, filters) -> dict[int, float]:
        from ..store.postgres import dense_search

        rows = dense_search(conn, qvec, self.index.channels.dense_depth, **filters)
        dense = {}
        for chunk_id, similarity, *_ in rows:
            row = self.index.row_of(chunk_id)
            if row is not None:  # a chunk the local artifacts lack (another build) cannot be fused
                dense[row] = float(similarity)
        if rows and not dense:
            raise AnotherBuild("the database and the artifacts hold different builds; publish the artifacts")
        return dense

    def _with_database(self, what: str, action):
        """Run `action(conn)`; None when there is no database, it failed (then the breaker opens),
        or it holds another build (then it stays closed)."""
        if not self.database_url or (self._build.fresh() and not self._build.matches):
            return None
        ticket = self.breaker.acquire()
        if ticket is None:
            return None
        probe = ticket == "probe"
        import psycopg

        pool = self._pool
        try:
            if pool is not None and not probe:
                result = self._pooled(pool, action)
            else:
                result = self._on_fresh_connection(action, probe)
        except _Skip:
            return None
        except AnotherBuild as exc:
            self.breaker.success(probe)  # it answered: not an outage
            if self._build.matches:  # same build id, yet unknown rows: someone edited the table
                log.warning("database %s: %s", what, exc)
            return None
        except (psycopg.Error, OSError, KnowledgeBuildError) as exc:
            self._failed(what, exc, probe)
            return None
        self.breaker.success(probe)
        return result

    def _pooled(self, pool, action):
        # A closed pool (another caller just failed) raises PoolClosed: counted like any failure.
        with pool.connection(timeout=self.connect_timeout + self.statement_timeout_ms / 1000) as conn:
            return self._run(conn, action)

    def _on_fresh_connection(self, action, probe: bool):
        """The probe, or the first call: one direct connection (one attempt, with its own error
        message); once one connected, later calls borrow from a pool. Callers that find the first
        call under way wait for it instead of connecting too."""
        from ..store.postgres import connect

        with self._pool_lock:
            if not probe and self.breaker.opened_at is not None:
                raise _Skip  # the first call we waited for failed: the breaker now says skip
            pool = None if probe else self._pool
            if pool is None:
                conn = connect(self.database_url, self.connect_timeout, self.statement_timeout_ms)
                try:
                    self._open_pool()
                except KnowledgeBuildError:
                    conn.close()
                    raise
        if pool is not None:
            return self._pooled(pool, action)
        try:
            conn.autocommit = True
            return self._run(conn, action)
        finally:
            conn.close()

    def _run(self, conn, action):
        if not self._build.fresh():
            from ..store.db_functions import report
            from ..store.postgres import meta

            self._build.record(meta(conn).get("build_id"), report(conn))
        if not self._build.matches:
            raise AnotherBuild(f"the database holds build {self._build.database}")
        return action(conn)

    def _open_pool(self) -> None:
        """With `_pool_lock` held."""
        if self._pool is not None:
            return
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise MissingExtra("psycopg_pool", "searching the database") from exc
        options = f"-c statement_timeout={int(self.statement_timeout_ms)}"
        # min_size 0: the pool connects only when asked; after a failure it is closed, so its
        # background reconnection never competes with the breaker's single probe.
        self._pool = ConnectionPool(
            self.database_url, min_size=0, max_size=max(1, self.pool_size), open=True, name="knowledge-build",
            timeout=self.connect_timeout, configure=_configure, reconnect_timeout=self.connect_timeout,
            kwargs={"connect_timeout": max(1, round(self.connect_timeout)), "options": options, "autocommit": True})

    def _drop_pool(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close(timeout=self.connect_timeout)  # workers stop at once unless mid-connect

    def _failed(self, what: str, exc: Exception, probe: bool) -> None:
        self._drop_pool()  # its connections may all be dead; the next probe opens a new one
        opened = self.breaker.failure(probe)
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = "database %s failed (%s); answering from the artifacts for the next %.0f s"
        log.log(logging.WARNING if opened else logging.INFO, message, what, reason, self.breaker.reset_after)


class _Skip(Exception):
    """Internal: answer from the artifacts without counting a failure."""


def _configure(conn) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


PARTS = ("problem", "solution")


def part_of(chunk, part: str, absolute_url) -> dict:
    """One part of a box (html/box_text.answer_parts): "problem", its text outside the marked answer (the whole text
    when no answer is marked: nothing to hide), or "solution", the answer's text; with the box's id, title, type,
    level, material and links, and an excerpt of that part alone: no field of a problem holds the answer."""
    from ..model import excerpt

    if part not in PARTS:
        raise KnowledgeBuildError(f"part must be one of {', '.join(PARTS)}, not {part!r}")
    marked = bool(chunk.problem or chunk.solution)
    if part == "solution" and not marked:
        raise KnowledgeBuildError(f"the box '{chunk.id}' has no marked answer (a <details> element or a heading "
                                  "such as 解答, 解説 or 答え); its whole text is its problem")
    text = (chunk.problem if marked else chunk.content) if part == "problem" else chunk.solution
    return {"id": chunk.id, "title": chunk.title, "type": chunk.type, "level": chunk.level, "material": chunk.material,
            "url": chunk.url, "absolute_url": absolute_url(chunk.url), "part": part, "answer_marked": marked,
            "content": text, "excerpt": excerpt(text, chunk.title) if text else "", "source": "artifacts"}


_CONCEPT_FIELDS = ("id", "title", "type", "url", "learns", "material", "category")


def open_search(config, use_database: bool = True) -> "KnowledgeIndex | SearchService":
    """What a reading command searches, resolved from one Config: the artifact set (`index_dir`), its
    query embedder with the configured base URL and timeout, and, when a database URL is configured,
    the database first with the artifacts as fallback (connect and statement timeout: database_timeout)."""
    from ..config import index_dir
    from ..ranking.settings import SearchSettings

    options = {"base_url": config.base_url, "timeout": config.embedding_timeout}
    settings = SearchSettings(thesaurus_file=config.thesaurus) if config.thesaurus else None
    index = KnowledgeIndex.open(index_dir(config), settings=settings, embedder_options=options)
    if not (use_database and config.database_url):
        return index
    return service_for(index, config)


def service_for(index: KnowledgeIndex, config) -> SearchService:
    """A SearchService over `index` with the configured database (none: the artifacts answer)."""
    return SearchService(index, config.database_url, connect_timeout=config.database_timeout,
                         statement_timeout_ms=int(config.database_timeout * 1000))
