"""The Postgres side of the web sources store (sources.py): pgvector for the dense channel (exact
KNN, cosine) and full text over the analysed tokens (a tsvector of field-marked lexemes with a GIN
index; each field one of the four tsvector weights). Tables are created by the store itself, like
the notes' (store/notes.py), not by the publish migrations, whose dimension is the site's."""

from __future__ import annotations

import json
import threading

import numpy as np

from ..ranking.settings import SearchSettings
from .common import SourcesUnavailable, revoke_hosted_roles, utc_now
from .source_relevance import StoreStatistics

# Field -> (lexeme mark, tsvector weight class); ts_rank's weights are given as {D, C, B, A}.
_MARKS = {"lemma": ("l", "A"), "page": ("p", "B"), "heading": ("h", "B"), "kana2": ("k", "C"), "reading": ("r", "D")}
_COLUMNS = ("id", "source_url", "chunk_index", "url", "title", "heading", "parents", "kind", "text", "crawled_at",
            "embedding", "language", "tokens")


def _schema(dim: int) -> list[str]:
    return [
        "create extension if not exists vector",
        """create table if not exists knowledge_sources (url text primary key, title text not null,
            chunks integer not null, crawled_at text not null, updated_at text not null)""",
        f"""create table if not exists knowledge_source_chunks (id bigserial primary key, source_url text not null,
            generation bigint not null, chunk_index integer not null, url text not null, title text not null,
            heading text not null, parents jsonb not null, kind text not null, text text not null,
            crawled_at text not null, embedding vector({int(dim)}) not null, tokens jsonb not null,
            lexemes tsvector not null)""",
        "create index if not exists knowledge_source_chunks_source on knowledge_source_chunks (source_url, generation)",
        "create index if not exists knowledge_source_chunks_lexemes on knowledge_source_chunks using gin (lexemes)",
        # Added after the tables were first shipped: a database made before gets them here.
        "alter table knowledge_sources add column if not exists language text not null default ''",
        "alter table knowledge_source_chunks add column if not exists language text not null default ''",
        "create sequence if not exists knowledge_source_generation",
        # Sources are the tutor's own: no policy, so Supabase's anon/authenticated roles see nothing.
        "alter table knowledge_sources enable row level security",
        "alter table knowledge_source_chunks enable row level security",
    ]


def lexemes(tokens: dict) -> dict[str, list[str]]:
    """Each weight class's lexemes: the field's mark, ':', the token (no parsing, so any token)."""
    out: dict[str, list[str]] = {"A": [], "B": [], "C": [], "D": []}
    for field, (mark, weight) in _MARKS.items():
        out[weight] += [f"{mark}:{t}" for t in dict.fromkeys(tokens.get(field) or []) if t]
    return out


def tsquery(tokens: dict) -> str:
    """A tsquery text: any of the query's field-marked tokens (quotes and backslashes doubled)."""
    words = [w for weight in lexemes(tokens).values() for w in weight]
    return " | ".join(_quoted(w) for w in dict.fromkeys(words))


def _quoted(lexeme: str) -> str:
    """One lexeme as tsquery text: quoted, its quotes and backslashes doubled (so any token)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class PostgresSources:
    vector_index = "pgvector"

    def __init__(self, url: str, dim: int, settings: SearchSettings):
        from .postgres import connect

        self.dim, self.settings = dim, settings
        self._lock = threading.Lock()
        self._lengths: tuple[tuple, dict] | None = None  # ((generation, chunks), mean tokens per field)
        self._conn = connect(url)
        self._conn.commit()  # connect() may have read the vector type: end that implicit transaction
        self._conn.autocommit = True  # every read and write below is an explicit transaction
        with self._conn.transaction():
            self._conn.execute("select pg_advisory_xact_lock(7305014)")  # one schema creator at a time
            for statement in _schema(dim):
                self._conn.execute(statement)
            revoke_hosted_roles(self._conn, ("knowledge_sources", "knowledge_source_chunks"),
                                ("knowledge_source_generation",))
            row = self._conn.execute("select a.atttypmod from pg_attribute a where a.attrelid ="
                                     " to_regclass('knowledge_source_chunks') and a.attname = 'embedding'").fetchone()
        from pgvector.psycopg import register_vector

        register_vector(self._conn)
        if row and row[0] != dim:
            raise SourcesUnavailable(
                f"the stored web sources have vectors of dimension {row[0]}, this embedder makes {dim}. Fix: use "
                "the embedder they were stored with, or drop table knowledge_source_chunks and add the sources again.")

    def replace(self, source_url: str, title: str, crawled_at: str, rows: list[dict]) -> int:
        with self._lock, self._conn.transaction():
            self._conn.execute("select pg_advisory_xact_lock(hashtext(%s))", (source_url,))
            generation = self._conn.execute("select nextval('knowledge_source_generation')").fetchone()[0]
            with self._conn.cursor() as cur:
                cur.executemany(
                    "insert into knowledge_source_chunks (source_url, generation, chunk_index, url, title, heading,"
                    " parents, kind, text, crawled_at, embedding, tokens, language, lexemes) values (%s, %s, %s, %s,"
                    " %s, %s, %s, %s, %s, %s, %s, %s, %s, setweight(array_to_tsvector(%s::text[]), 'A') ||"
                    " setweight(array_to_tsvector(%s::text[]), 'B') || setweight(array_to_tsvector(%s::text[]), 'C')"
                    " || setweight(array_to_tsvector(%s::text[]), 'D'))",
                    [(source_url, generation, r["chunk_index"], r["url"], r["title"], r["heading"],
                      json.dumps(r["parents"], ensure_ascii=False), r["kind"], r["text"], r["crawled_at"],
                      r["embedding"], json.dumps(r["tokens"], ensure_ascii=False), r.get("language", ""),
                      *lexemes(r["tokens"]).values())
                     for r in rows])
            self._conn.execute("delete from knowledge_source_chunks where source_url = %s and generation < %s",
                               (source_url, generation))
            self._conn.execute(
                "insert into knowledge_sources (url, title, chunks, crawled_at, updated_at, language)"
                " values (%s, %s, %s, %s, %s, %s) on conflict (url) do update set title = excluded.title,"
                " chunks = excluded.chunks, crawled_at = excluded.crawled_at, updated_at = excluded.updated_at,"
                " language = excluded.language",
                (source_url, title, len(rows), crawled_at, utc_now(), rows[0].get("language", "") if rows else ""))
        return len(rows)

    def delete(self, source_url: str) -> int | None:
        with self._lock, self._conn.transaction():
            self._conn.execute("select pg_advisory_xact_lock(hashtext(%s))", (source_url,))
            if self._conn.execute("delete from knowledge_sources where url = %s", (source_url,)).rowcount == 0:
                return None
            return self._conn.execute("delete from knowledge_source_chunks where source_url = %s",
                                      (source_url,)).rowcount

    def status(self) -> dict:
        with self._lock, self._conn.transaction():
            sources, last = self._conn.execute("select count(*), max(crawled_at) from knowledge_sources").fetchone()
            chunks = self._conn.execute("select count(*) from knowledge_source_chunks").fetchone()[0]
        return {"sources": sources, "chunks": chunks, "last_crawl": last}

    def sources(self) -> list[dict]:
        with self._lock, self._conn.transaction():
            rows = self._conn.execute("select url, title, chunks, crawled_at, language from knowledge_sources"
                                      " order by url").fetchall()
        return [{"url": r[0], "title": r[1], "chunks": r[2], "crawled_at": r[3], "language": r[4]} for r in rows]

    def candidates(self, qvec: np.ndarray, tokens: dict, n: int) -> tuple[dict, dict, dict]:
        """As SqliteSources.candidates, in one repeatable-read snapshot."""
        w = self.settings.field_weights
        weights = [w.get("reading", 0.0), w.get("kana2", 0.0), max(w.get("page", 0.0), w.get("heading", 0.0)),
                   w.get("lemma", 0.0)]  # {D, C, B, A}
        with self._lock, self._conn.transaction():
            self._conn.execute("set transaction isolation level repeatable read")
            dense = {} if not qvec.any() else {r[0]: 1.0 - float(r[1]) for r in self._conn.execute(
                "select id, embedding <=> %s as d from knowledge_source_chunks order by d limit %s", (qvec, n))}
            query, lexical = tsquery(tokens), {}
            if query:
                lexical = {r[0]: float(r[1]) for r in self._conn.execute(
                    "select id, ts_rank(%s::real[], lexemes, q) as s from knowledge_source_chunks, cast(%s as tsquery) q"
                    " where lexemes @@ q order by s desc limit %s", (weights, query, n))}
            ids = sorted(set(dense) | set(lexical))
            rows = {}
            for r in self._conn.execute(f"select {', '.join(_COLUMNS)} from knowledge_source_chunks"
                                        " where id = any(%s)", (ids,)):
                row = dict(zip(_COLUMNS, r))
                row["embedding"] = np.asarray(row["embedding"].to_numpy(), dtype=np.float32)  # a pgvector Vector
                rows[row["id"]] = row
        return dense, lexical, rows

    def statistics(self, tokens: dict) -> StoreStatistics:
        """As SqliteSources.statistics: document frequencies from the GIN index of the field-marked
        lexemes; the mean lengths summed again only when the chunks changed (a write takes a new
        generation, a delete lowers the count)."""
        marked = {(name, t): _quoted(f"{_MARKS[name][0]}:{t}") for name, words in tokens.items() if name in _MARKS
                  for t in dict.fromkeys(words) if t}
        with self._lock, self._conn.transaction():
            self._conn.execute("set transaction isolation level repeatable read")
            key = self._conn.execute("select (select last_value from knowledge_source_generation),"
                                     " (select count(*) from knowledge_source_chunks)").fetchone()
            if self._lengths is None or self._lengths[0] != key:
                sums = ", ".join(f"coalesce(sum(jsonb_array_length(tokens -> '{name}')), 0)" for name in _MARKS)
                totals = self._conn.execute(f"select {sums} from knowledge_source_chunks").fetchone()
                self._lengths = (key, {name: float(total) / key[1] if key[1] else 0.0
                                       for name, total in zip(_MARKS, totals)})
            found = dict(self._conn.execute(
                "select q, (select count(*) from knowledge_source_chunks where lexemes @@ q::tsquery)"
                " from unnest(%s::text[]) q", (list(marked.values()),)).fetchall()) if marked else {}
            (_, chunks), mean = self._lengths
        return StoreStatistics(chunks, {name: mean.get(name, 0.0) for name in tokens},
                               {pair: int(found.get(query, 0)) for pair, query in marked.items()})

    def close(self) -> None:
        self._conn.close()
