"""Postgres/pgvector (Supabase): migrations, one-transaction publish, and the RPC reads.

Every statement is parameterised; identifiers are fixed in the SQL files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import KnowledgeBuildError
from ..model import FACET_FIELDS
from .common import DatabaseError
from . import db_functions
from .db_functions import DIM_TOKEN, render, table_dimension  # noqa: F401 (DIM_TOKEN: re-exported)

PUBLISH_LOCK = 7_305_001  # pg_advisory_xact_lock key: one publisher at a time
FROZEN_AT = "010_repeatable_functions"  # from here on no migration is edited (tests/test_migrations_frozen.py)
EDITED_BEFORE_FREEZE = ("006_hybrid",)  # 13 texts in its history; a database that lacks 010 runs today's again
_FIELDS = ("id", "material", "anchor", "url", "title", "content", "excerpt", "learns", "learns_source", "type",
           "category", "level", "prerequisites", "content_hash")
# What publish writes: the chunk's fields and its facets (migration 011; "" on a site without them).
_WRITTEN = (*_FIELDS, *FACET_FIELDS)


def connect(url: str, connect_timeout: float = 5.0, statement_timeout_ms: int | None = None):
    import psycopg
    from pgvector.psycopg import register_vector

    options = f"-c statement_timeout={int(statement_timeout_ms)}" if statement_timeout_ms else ""
    try:
        conn = psycopg.connect(url, connect_timeout=max(1, round(connect_timeout)), options=options or None)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to the database ({str(exc).strip()}). Check [[--database-url / ]][[--store / ]]"
                            "KB_DATABASE_URL / KB_STORE, or start a local one with 'knowledge-build db start'.") from exc
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        conn.rollback()  # the vector extension is not installed yet: migrations will create it
    return conn


# --- migrations ----------------------------------------------------------------------------


def migration_sql(dim: int) -> list[tuple[str, str]]:
    """(version, SQL) of every shipped migration, in order, with the vector dimension filled in. The
    migrations are frozen; the functions are in store/functions (db_functions.py)."""
    folder = resources.files("knowledge_build.store").joinpath("migrations")
    files = sorted((f.name, f.read_text(encoding="utf-8")) for f in folder.iterdir() if f.name.endswith(".sql"))
    return [(name.removesuffix(".sql"), render(text, dim)) for name, text in files]


def migrate(conn, dim: int, progress: bool = False) -> list[str]:
    """Apply the migrations not yet recorded, then the function files (store/functions) whose rendered
    text the database has not recorded, in one transaction. Returns what was applied (versions, then
    `functions/<name>`). `progress`: a line on stderr as each starts (one may rebuild an index: minutes
    on a large table)."""
    import sys

    applied_now = []
    with conn.transaction():
        conn.execute("select pg_advisory_xact_lock(%s)", (PUBLISH_LOCK,))
        # Created only when missing: `create table if not exists` needs the right to create in the
        # schema even when the table is there, which a member of knowledge_publisher lacks.
        if conn.execute("select to_regclass('knowledge_migrations')").fetchone()[0] is None:
            conn.execute("create table knowledge_migrations ("
                         " version text primary key, applied_at timestamptz not null default now())")
        done = {row[0] for row in conn.execute("select version from knowledge_migrations")}
        existing = table_dimension(conn)
        if existing is not None and existing != dim:
            raise DatabaseError(
                f"knowledge_chunks stores vectors of dimension {existing}, the artifacts have {dim}. "
                "Migrate by hand: drop table knowledge_chunks (or alter column embedding type "
                f"vector({dim}) after deleting its rows), delete the '002_chunks' and '003_functions' rows "
                "of knowledge_migrations, then publish again.")
        shipped = migration_sql(dim)
        pending = [(version, sql) for version, sql in shipped if version not in done]
        if FROZEN_AT not in done:
            # Migrations edited in place before they were frozen (010) run again, today's text, before the
            # pending ones: a database may have applied any earlier text (their statements are idempotent).
            pending = [(version, sql) for version, sql in shipped if version in EDITED_BEFORE_FREEZE
                       and version in done] + pending
        for version, sql in pending:
            if progress:
                print(f"migrating: applying {version}", file=sys.stderr, flush=True)
            _run_migration(conn, version, sql)
            if version not in done:
                conn.execute("insert into knowledge_migrations (version) values (%s)", (version,))
            applied_now.append(version)
        # A migration that writes functions (003, 006, 009) may have replaced today's: then every file again.
        every = any(db_functions.touches_functions(sql) for _, sql in pending)
        applied_now += db_functions.apply(conn, dim, every=every, progress=progress)
    from pgvector.psycopg import register_vector

    register_vector(conn)
    return applied_now


def _run_migration(conn, version: str, sql: str) -> None:
    import psycopg

    try:
        conn.execute(sql)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise DatabaseError(f"migration {version} needs the database owner's rights ({str(exc).strip()}); nothing "
                            "was applied. Fix: run 'knowledge-build db migrate' (or publish) once as the owner; "
                            "members of knowledge_publisher publish after that") from exc
    except psycopg.Error as exc:
        raise DatabaseError(f"migration {version} failed in the database ({db_functions.first_line(exc)}); "
                            "nothing was applied: the migrations are one transaction. Fix: check that the database is"
                            " PostgreSQL with pgvector and holds only what knowledge-build made, then migrate again") \
            from exc


def meta(conn) -> dict[str, str]:
    if conn.execute("select to_regclass('knowledge_meta')").fetchone()[0] is None:
        return {}
    return dict(conn.execute("select key, value from knowledge_meta").fetchall())


# --- publish -------------------------------------------------------------------------------


@dataclass
class PublishPlan:
    build_id: str
    embedder: dict
    dim: int
    insert: list[str] = field(default_factory=list)
    update: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    unchanged: int = 0
    previous_build: str | None = None
    rows: dict[str, int] = field(default_factory=dict, repr=False)  # id -> row of the set, of the rows to write
    terms: int = 0  # chunks whose lexical terms were (re)written (store/lexical.py)
    site: object = None  # the set's PublishedSite (store/published_site.py)
    database_site: object = None  # the one the database records, None before any was recorded
    refusal: DatabaseError | None = None  # AnotherSite: the database holds another site's chunks

    @property
    def changes(self) -> int:
        return len(self.insert) + len(self.update) + len(self.delete)

    def to_dict(self) -> dict:
        return {"build_id": self.build_id, "previous_build": self.previous_build, "insert": self.insert,
                "update": self.update, "delete": self.delete, "unchanged": self.unchanged,
                "site": self.site.to_dict() if self.site else None,
                "database_site": self.database_site.to_dict() if self.database_site else None}


def plan_publish(conn, source, replace: bool = False) -> PublishPlan:
    """The difference between the set (store/publishable.py) and the table, by fingerprint: only the
    rows whose fingerprint the table lacks are decoded. A row without one (published before 007) is
    written again. `refusal`, unless `replace`: the table holds another site's chunks."""
    from .published_site import PublishedSite, refusal

    manifest = source.manifest
    embedder = manifest["embedder"]
    plan = PublishPlan(manifest["build_id"], embedder, int(embedder["dim"]))
    current = meta(conn)
    plan.previous_build = current.get("build_id")
    plan.site, plan.database_site = PublishedSite.of(manifest), PublishedSite.recorded(current)
    if current.get("embedder") and json.loads(current["embedder"]) != embedder:
        raise DatabaseError(
            f"the database holds vectors from embedder {current['embedder']}, the artifacts come from "
            f"{json.dumps(embedder, ensure_ascii=False)}; their vectors are not comparable. Rebuild the artifacts "
            "with the database's embedder, or start over: delete from knowledge_chunks; delete from knowledge_meta;"
            " then publish.")
    existing = {}
    if table_dimension(conn) is not None:
        column = "fingerprint" if _has_fingerprints(conn) else "null::text"
        existing = dict(conn.execute(f"select id, {column} from knowledge_chunks").fetchall())
    published = set(existing.values())
    local = set(source.fingerprints)
    plan.rows = {source.chunk(row)["id"]: row for row, print_ in enumerate(source.fingerprints)
                 if print_ not in published}
    plan.insert = sorted(plan.rows.keys() - existing.keys())
    plan.update = sorted(plan.rows.keys() & existing.keys())
    plan.delete = sorted(i for i, print_ in existing.items() if print_ not in local and i not in plan.rows)
    plan.unchanged = len(source) - len(plan.rows)
    if not replace:
        plan.refusal = refusal(conn, manifest, current, len(existing), plan.unchanged + len(plan.update))
    return plan


def _has_fingerprints(conn) -> bool:
    return conn.execute("select exists (select from pg_attribute where attrelid = to_regclass('knowledge_chunks')"
                        " and attname = 'fingerprint' and not attisdropped)").fetchone()[0]


def publish(conn, index_dir: Path, dry_run: bool = False, progress: bool = False, thesaurus: Path | None = None,
            replace: bool = False, gap_settings=None) -> PublishPlan:
    """Diff the artifacts against the table and apply the difference in one transaction; the lexical
    terms and the query expansions (the shipped thesaurus and glossary, plus the site's `thesaurus`
    file) of the hybrid RPC with them (store/lexical.py). AnotherSite (with its `plan`), and nothing
    written, when the table holds another site's chunks, unless `replace` (store/published_site.py);
    a dry run returns the plan with its `refusal`. `gap_settings` (a Config): the box's gap log settings row
    (store/gaps_pg.py) written with them; None leaves it as it is."""
    from ..index.aliases import read_aliases
    from .lexical import publish_expansions, publish_terms
    from .published_site import META_KEY
    from .publishable import Publishable

    source = Publishable.open(Path(index_dir))
    manifest = source.manifest
    if dry_run:
        return plan_publish(conn, source, replace)
    migrate(conn, int(manifest["embedder"]["dim"]), progress)
    with conn.transaction():
        conn.execute("select pg_advisory_xact_lock(%s)", (PUBLISH_LOCK,))
        plan = plan_publish(conn, source, replace)
        if plan.refusal:
            plan.refusal.plan = plan
            raise plan.refusal
        written = [plan.rows[i] for i in plan.insert + plan.update]
        source.check_rows(written)
        _upsert(conn, source, written, progress)
        if plan.delete:
            conn.execute("delete from knowledge_chunks where id = any(%s)", (plan.delete,))
        plan.terms = publish_terms(conn, source, plan, progress)
        publish_expansions(conn, thesaurus)
        publish_aliases(conn, read_aliases(source.path, manifest))
        if gap_settings is not None:
            from .gaps_pg import configure

            configure(conn, gap_settings)
        for key, value in (("build_id", manifest["build_id"]),
                           ("embedder", json.dumps(manifest["embedder"], ensure_ascii=False, sort_keys=True)),
                           ("chunks", str(len(source))), (META_KEY, plan.site.to_json())):
            conn.execute("insert into knowledge_meta (key, value) values (%s, %s) on conflict (key) do update"
                         " set value = excluded.value, updated_at = now()", (key, value))
    return plan


def publish_aliases(conn, aliases: dict[str, str]) -> None:
    """The set's aliases (index/aliases.py) replace the table's: get_chunk_by_id resolves an old id with them."""
    conn.execute("delete from knowledge_aliases")
    if aliases:
        with conn.cursor().copy("copy knowledge_aliases (old_id, new_id) from stdin") as copy:
            for old, new in sorted(aliases.items()):
                copy.write_row((old, new))


def _upsert(conn, source, rows: list[int], progress: bool) -> None:
    """Insert new chunks and update changed ones (the set's `rows`). A new chunk gets its number in
    the posting lists (store/lexical.py) here, the next ones in id order, so no row is written twice
    (every write of a row also writes it into the HNSW index)."""
    if not rows:
        return
    from ..progress import Progress

    chunks = {row: source.chunk(row) for row in rows}
    known = {r[0] for r in conn.execute("select id from knowledge_chunks where id = any(%s)",
                                        ([chunk["id"] for chunk in chunks.values()],))}
    start = conn.execute("select coalesce(max(num), 0) from knowledge_chunks").fetchone()[0]
    numbers = {chunk_id: start + i for i, chunk_id in
               enumerate(sorted(chunk["id"] for chunk in chunks.values() if chunk["id"] not in known), start=1)}
    conn.execute("create temporary table knowledge_incoming (like knowledge_chunks including defaults) on commit drop")
    columns = ", ".join((*_WRITTEN, "embedding", "num", "fingerprint"))
    with Progress("publishing", len(rows), "row", progress) as bar, \
            conn.cursor().copy(f"copy knowledge_incoming ({columns}) from stdin") as copy:
        for start_at in range(0, len(rows), 2000):
            batch = rows[start_at:start_at + 2000]
            for row, vector in zip(batch, source.vectors(batch)):
                chunk = chunks[row]
                copy.write_row([*(list(chunk[k]) if k in ("learns", "prerequisites") else chunk.get(k, "")
                                  for k in _WRITTEN),
                                np.asarray(vector, dtype=np.float32), numbers.get(chunk["id"]),
                                source.fingerprints[row]])
                bar.update(1)
    updates = ", ".join(f"{c} = excluded.{c}" for c in (*_WRITTEN[1:], "embedding", "fingerprint"))  # a number stays
    conn.execute(f"insert into knowledge_chunks ({columns}) select {columns} from knowledge_incoming"
                 f" on conflict (id) do update set {updates}, updated_at = now()")


# --- reads ---------------------------------------------------------------------------------


class InvalidQueryVector(KnowledgeBuildError):
    """A query vector that matches nothing: zero (no direction) or with NaN or infinite values."""


def query_vector(vector) -> np.ndarray:
    """The vector as float32; InvalidQueryVector when it is zero or not finite (migration 009 refuses
    it too: the cosine of a zero vector would read as a perfect match for every chunk)."""
    vector = np.asarray(vector, dtype=np.float32)
    if not np.all(np.isfinite(vector)) or not np.any(vector):
        raise InvalidQueryVector("the query vector is zero or holds NaN or infinite values, so it matches nothing. "
                                 "Fix: check the query embedder (a failed call must not give a vector), or search "
                                 "without one (the lexical channel alone)")
    return vector


def dense_search(conn, vector: np.ndarray, count: int, category=None, type=None, material=None,
                 level=None, version=None, language=None) -> list[tuple]:
    """(id, similarity, url, title, learns, excerpt, type, material, anchor) rows from the RPC."""
    return conn.execute(
        "select id, similarity, url, title, learns, excerpt, type, material, anchor"
        " from search_knowledge(%s, %s, null, %s, %s, %s, %s, %s, %s)",
        (query_vector(vector), count, category, type, material, level, version, language)).fetchall()


def hybrid_search(conn, query: str, vector: np.ndarray | None, count: int, min_similarity: float | None = None,
                  category=None, type=None, material=None, level=None, version=None, language=None) -> list[tuple]:
    """(id, score, similarity, relevance) rows, best first, from the hybrid RPC (store/functions/search.sql);
    `vector` None: its lexical channel alone."""
    return conn.execute(
        "select id, score, similarity, relevance from search_knowledge(query_text => %s, query_embedding => %s,"
        " match_count => %s, match_threshold => %s, filter_category => %s, filter_type => %s,"
        " filter_material => %s, filter_level => %s, filter_version => %s, filter_language => %s)",
        (query, None if vector is None else query_vector(vector), count, min_similarity,
         category, type, material, level, version, language)).fetchall()


def get_chunk(conn, chunk_id: str) -> dict | None:
    """The chunk's fields, and its version and language when it has them (as Chunk.to_dict leaves them out)."""
    cur = conn.execute(f"select {', '.join(_WRITTEN)} from get_chunk_by_id(%s)", (chunk_id,))
    row = cur.fetchone()
    if not row:
        return None
    chunk = dict(zip(_WRITTEN, row))
    return {k: v for k, v in chunk.items() if k not in FACET_FIELDS or v}


def list_concepts(conn, category=None, type=None) -> list[dict]:
    cur = conn.execute("select id, title, type, url, learns, material, category from list_concepts(%s, %s)",
                       (category, type))
    names = [d.name for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def published_chunks(url: str) -> dict[str, dict]:
    """id -> {id, material, anchor, url, content_hash} of every published chunk (for validate);
    DatabaseError when the database holds no published set or cannot be read."""
    import psycopg

    with connect(url) as conn:
        try:
            if table_dimension(conn) is None:
                raise DatabaseError(
                    "the database holds no published chunks (no knowledge_chunks table). Fix: publish an artifact set "
                    "first with 'knowledge-build publish --index DIR', or check that --database-url names the "
                    "database you published to")
            cur = conn.execute("select id, material, anchor, url, content_hash from knowledge_chunks")
            names = [d.name for d in cur.description]
            return {row[0]: dict(zip(names, row)) for row in cur.fetchall()}
        except psycopg.Error as exc:
            raise DatabaseError(f"cannot read the published chunks ({str(exc).strip()}). Fix: use a role that may "
                                "read knowledge_chunks, or publish the artifacts again") from exc
