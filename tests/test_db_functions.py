"""The database's functions reach every database (issue 39): they live in repeatable files
(store/functions/*.sql) that migrate and publish apply again whenever their rendered text differs from
the sha256 the database records, and `health` and `validate --database-url` say when a database's
functions are older than the code. The databases here applied earlier texts of 006, the first (834b9f6)
among them (tests/data/006_history, from git history: CI may clone shallowly; 001-005 have not changed
since and are pinned)."""

from __future__ import annotations

import json
import logging
import string
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, SearchService
from knowledge_build.cli import main
from knowledge_build.ranking import settings as ranking_settings
from knowledge_build.store import db_functions, lexical
from knowledge_build.store.postgres import connect, hybrid_search, migrate, migration_sql, publish, render

from .conftest import FakeEmbedder

pytestmark = pytest.mark.db

HISTORY = Path(__file__).parent / "data" / "006_history"
DIM = 64  # the fake embedder's
# What a database at each earlier 006 lacks (tests/data/006_history/README.md), by catalog query.
MISSING = {"knowledge_expansions": "select to_regclass('knowledge_expansions')",
           "knowledge_cut": "select to_regproc('knowledge_cut')",
           "df": "select attname from pg_attribute where attrelid = 'knowledge_terms'::regclass and attname = 'df'",
           "knowledge_passes": "select to_regproc('knowledge_passes')"}
LACKS = {"834b9f6": ["knowledge_expansions", "knowledge_cut", "df", "knowledge_passes"],
         "a089026": ["knowledge_cut", "df", "knowledge_passes"], "5a6cf97": ["df", "knowledge_passes"],
         "362b0c8": ["knowledge_passes"], "cda4a58": []}


def _lacking(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [name for name, query in MISSING.items() if (conn.execute(query).fetchone() or (None,))[0] is None]


def _migrate_at_006(url: str, commit: str = "834b9f6") -> None:
    """001-005 as shipped and 006 as it was at `commit`, rendered as that version did (its fold was one
    table, `__FOLD_FROM__`/`__FOLD_TO__`, until 5a6cf97), each recorded by name: a database left by it."""
    old_fold = {"__FOLD_FROM__": lexical._e_string(string.ascii_uppercase + lexical._KATAKANA + lexical.SEPARATORS),
                "__FOLD_TO__": lexical._e_string(string.ascii_lowercase + lexical._HIRAGANA
                                                 + " " * len(lexical.SEPARATORS))}
    first_006 = (HISTORY / f"006_hybrid_at_{commit}.sql").read_text(encoding="utf-8")
    for token, value in old_fold.items():
        first_006 = first_006.replace(token, value)
    steps = [(v, sql) for v, sql in migration_sql(DIM) if v < "006"] + [("006_hybrid", render(first_006, DIM))]
    with psycopg.connect(url) as conn:
        for version, sql in steps:
            conn.execute(sql)
            conn.execute("insert into knowledge_migrations (version) values (%s)", (version,))


def _health(index_dir: Path, url: str) -> dict:
    """health() after two searches, and the warnings about functions logged meanwhile."""
    service = SearchService(KnowledgeIndex.open(index_dir, embedder=FakeEmbedder()), url, build_check_interval=0)
    handler = _Collect()
    logging.getLogger("knowledge_build.service").addHandler(handler)
    try:
        service.search("たすきがけ")
        service.search("判別式")
        return {**service.health(), "warnings": [m for m in handler.messages if "functions are older" in m]}
    finally:
        logging.getLogger("knowledge_build.service").removeHandler(handler)
        service.close()


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _recorded(url: str) -> dict[str, tuple[str, object]]:
    with psycopg.connect(url) as conn:
        return {name: (digest, at) for name, digest, at in
                conn.execute("select name, sha256, applied_at from knowledge_functions")}


def test_a_database_at_the_first_006_gets_todays_functions_on_one_publish(fresh_db, fake_index_dir, site_dir):
    _migrate_at_006(fresh_db)
    long_query = "あ" * 2001
    with psycopg.connect(fresh_db) as conn:
        # that version's hybrid RPC: no input checks (009), so a 2,001-character query is just run
        assert conn.execute("select count(*) from search_knowledge(query_text => %s)", (long_query,)).fetchone()
    before = _health(fake_index_dir, fresh_db)
    assert before["database_functions"] == "outdated"
    assert before["database_functions_outdated"] == ["checks", "gaps", "lexical", "search"]
    assert len(before["warnings"]) == 1 and before["warnings"][0].endswith(before["database_functions_fix"])
    assert before["database_functions_fix"].startswith("run 'knowledge-build db migrate --dim 64' or "
                                                       "'knowledge-build publish' as the database's owner")
    checked = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--database-url", fresh_db,
                                        "--format", "json"])
    found = [d for d in json.loads(checked.stdout)["diagnostics"] if d["rule"] == "database-functions"]
    assert len(found) == 1 and found[0]["severity"] == "warning", checked.output
    assert ("functions/checks.sql, functions/gaps.sql, functions/lexical.sql, functions/search.sql"
            in found[0]["message"])
    assert "knowledge-build db migrate --dim 64" in found[0]["fix"]

    published = CliRunner().invoke(main, ["publish", "--index", str(fake_index_dir), "--database-url", fresh_db])
    assert published.exit_code == 0, published.output
    assert "migrating: applying functions/search" in published.stderr.splitlines()

    expected = {f.name: f.sha256 for f in db_functions.function_files(DIM)}
    assert {name: digest for name, (digest, _) in _recorded(fresh_db).items()} == expected
    with connect(fresh_db) as conn:
        rows = hybrid_search(conn, "たすきがけ", FakeEmbedder().embed_query("たすきがけ"), 5)
        assert rows[0][0] == "因数分解#method-tasukigake"
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="the limit is 2,000"):
            hybrid_search(conn, long_query, None, 5)
    after = _health(fake_index_dir, fresh_db)
    assert after["database_functions"] == "current" and after["database_functions_fix"] is None
    assert after["warnings"] == []
    assert after["backend"] == "database"
    checked = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--database-url", fresh_db])
    assert "database-functions" not in checked.output


@pytest.mark.parametrize("commit", sorted(LACKS))
def test_a_database_at_an_earlier_006_gets_todays_schema_and_functions_on_one_publish(fresh_db, fake_index_dir,
                                                                                      commit):
    _migrate_at_006(fresh_db, commit)
    assert _lacking(fresh_db) == LACKS[commit]
    with connect(fresh_db) as conn:
        publish(conn, fake_index_dir)
        expected = {f.name: f.sha256 for f in db_functions.function_files(DIM)}
        assert db_functions.outdated(conn) == [] and dict(db_functions.recorded(conn)) == expected
        assert hybrid_search(conn, "tasukigake", None, 5)[0][0] == "因数分解#method-tasukigake"
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="the limit is 2,000"):
            hybrid_search(conn, "あ" * 2001, None, 5)
    assert _lacking(fresh_db) == []


def test_publishing_again_with_the_same_code_applies_no_function(published_db, fake_index_dir):
    before = _recorded(published_db)
    assert set(before) == {"checks", "gaps", "lexical", "search"}
    again = CliRunner().invoke(main, ["publish", "--index", str(fake_index_dir), "--database-url", published_db])
    assert again.exit_code == 0, again.output
    assert "migrating" not in again.stderr
    assert _recorded(published_db) == before
    migrated = CliRunner().invoke(main, ["db", "migrate", "--dim", "64", "--database-url", published_db])
    assert migrated.output == "Nothing to apply: the schema and its functions are up to date.\n"
    assert _recorded(published_db) == before


def _grants(conn):
    """(function, role, may execute) of every function of the tool and the three roles."""
    return conn.execute("select p.oid::regprocedure::text, r.rolname, has_function_privilege(r.oid, p.oid, 'execute')"
                            " from pg_proc p cross join pg_roles r where (p.proname like 'knowledge\\_%' or"
                            " p.proname in ('search_knowledge', 'get_chunk_by_id', 'list_concepts'))"
                            " and r.rolname in ('anon', 'authenticated', 'knowledge_publisher') order by 1, 2").fetchall()


def test_a_changed_function_file_is_applied_again_by_db_migrate(published_db, monkeypatch):
    """A rule the functions render (here the common-terms share) changes their text: migrate applies
    that file again, and the public roles keep exactly their grants."""

    with psycopg.connect(published_db) as conn:
        granted = _grants(conn)
    before = _recorded(published_db)
    monkeypatch.setattr(ranking_settings, "COMMON_SHARE", 0.5)
    migrated = CliRunner().invoke(main, ["db", "migrate", "--dim", "64", "--database-url", published_db])
    assert migrated.output == "Applied functions/search.\n"
    after = _recorded(published_db)
    assert after["search"][0] != before["search"][0] and after["lexical"] == before["lexical"]
    with psycopg.connect(published_db) as conn:
        assert _grants(conn) == granted
        source = conn.execute("select prosrc from pg_proc where proname = 'search_knowledge' and pronargs = 10")
        assert "greatest(0.5 * docs" in source.fetchone()[0]


def test_a_publisher_cannot_replace_outdated_functions_and_is_told_who_can(published_db, fake_index_dir):
    role = "kb_fn_" + published_db.split("/kb_", 1)[1][:8]
    with psycopg.connect(published_db, autocommit=True) as conn:
        conn.execute(f'create role "{role}" login in role knowledge_publisher')
        conn.execute("update knowledge_functions set sha256 = 'older' where name = 'lexical'")
    as_publisher = published_db.replace("postgresql://postgres:@", f"postgresql://{role}:@")
    result = CliRunner().invoke(main, ["publish", "--index", str(fake_index_dir), "--database-url", as_publisher])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert ("Error: the database's functions (functions/lexical.sql) are older than this version of knowledge-build,"
            " and this role may not replace them") in result.output
    assert "Fix: ask the database's owner to run 'knowledge-build db migrate --dim 64', then publish again" in result.output
    assert _recorded(published_db)["lexical"][0] == "older"


def test_a_function_whose_return_type_changed_is_replaced_with_its_grants(published_db, monkeypatch):
    """`create or replace` cannot change a return type: the file's functions are dropped first."""
    with psycopg.connect(published_db) as conn:
        granted = _grants(conn)
    rendered = db_functions.render

    def with_a_new_column(text, dim):
        return rendered(text, dim).replace("relevance float, relevant boolean\n)", "relevance float, relevant boolean,"
                                           " probe int\n)")

    monkeypatch.setattr(db_functions, "render", with_a_new_column)
    migrated = CliRunner().invoke(main, ["db", "migrate", "--dim", "64", "--database-url", published_db])
    assert migrated.output == "Applied functions/search.\n", migrated.output
    with psycopg.connect(published_db) as conn:
        result = conn.execute("select pg_get_function_result(p.oid) from pg_proc p where proname = 'search_knowledge'"
                              " and pronargs = 10").fetchall()
        assert len(result) == 1 and result[0][0].endswith("relevant boolean, probe integer)")
        assert _grants(conn) == granted


def test_a_function_file_that_fails_leaves_every_function_and_record_as_it_was(published_db, monkeypatch):
    """One transaction: the file before the failing one is not left applied either."""
    with psycopg.connect(published_db) as conn:
        conn.execute("update knowledge_functions set sha256 = 'older'")
        sources = conn.execute("select p.oid::regprocedure::text, prosrc from pg_proc p order by 1").fetchall()
    before = _recorded(published_db)
    rendered = db_functions.render

    def broken_search(text, dim):
        out = rendered(text, dim)
        return out.replace("returns setof knowledge_chunks", "returns setof no_such_table") if "get_chunk_by_id" in out \
            else out

    monkeypatch.setattr(db_functions, "render", broken_search)
    migrated = CliRunner().invoke(main, ["db", "migrate", "--dim", "64", "--database-url", published_db])
    assert migrated.exit_code == 1 and "no_such_table" in migrated.output and "Traceback" not in migrated.output
    assert _recorded(published_db) == before
    with psycopg.connect(published_db) as conn:
        assert conn.execute("select p.oid::regprocedure::text, prosrc from pg_proc p order by 1").fetchall() == sources


def test_the_sql_for_the_editor_leaves_a_fresh_database_with_current_functions(fresh_db):
    """`db sql` (pasted into Supabase's SQL editor) records the functions as migrate does."""
    printed = CliRunner().invoke(main, ["db", "sql", "--dim", "64"])
    assert printed.exit_code == 0
    with psycopg.connect(fresh_db) as conn:
        conn.execute(printed.output)
        assert db_functions.outdated(conn) == []
    with connect(fresh_db) as conn:
        assert migrate(conn, DIM) == []
