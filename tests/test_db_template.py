"""The `published_db` fixture: a copy of the session's template database (tests/conftest.py), not a
database migrated and published again for each test, and as good as one that was."""

import json

import psycopg
import pytest

from knowledge_build.store import postgres
from knowledge_build.store.postgres import connect, publish

from .conftest import TEMPLATE_MARK, new_database

pytestmark = pytest.mark.db

# The published set, as rows with nothing that differs between two databases (row numbers, times).
TABLES = {
    "knowledge_chunks": "select id, content_hash, title, content from knowledge_chunks order by id",
    "knowledge_meta": "select key, value from knowledge_meta order by key",
    "knowledge_migrations": "select version from knowledge_migrations order by version",
    "knowledge_expansions": "select * from knowledge_expansions order by 1, 2, 3",
    "knowledge_chunk_terms": "select id, lengths, terms, tfs from knowledge_chunk_terms order by id",
}


def _rows(url, table):
    with psycopg.connect(url) as conn:
        return conn.execute(TABLES[table]).fetchall()


@pytest.fixture
def store_calls(monkeypatch):
    """The migrations and publishes made from here on (the session's template is made before this
    fixture: pytest sets up session fixtures first)."""
    calls = []
    for name in ("migrate", "publish"):
        original = getattr(postgres, name)

        def counting(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(postgres, name, counting)
    return calls


def test_a_published_db_is_a_copy_of_the_template_and_nothing_is_migrated_or_published_for_it(
        store_calls, published_db, fake_index_dir):
    assert store_calls == []
    with psycopg.connect(published_db) as conn:
        mark = conn.execute("select obj_description('knowledge_migrations'::regclass, 'pg_class')").fetchone()[0]
        build_id = conn.execute("select value from knowledge_meta where key = 'build_id'").fetchone()[0]
        rows = conn.execute("select count(*) from knowledge_chunks").fetchone()[0]
    manifest = json.loads((fake_index_dir / "manifest.json").read_text())
    assert mark == TEMPLATE_MARK
    assert build_id == manifest["build_id"] and rows == manifest["counts"]["chunks"]


def test_a_published_db_holds_what_a_publish_of_the_same_set_leaves(published_db, fresh_db, fake_index_dir):
    with connect(fresh_db) as conn:
        publish(conn, fake_index_dir)
    copied, published = ({table: _rows(url, table) for table in TABLES} for url in (published_db, fresh_db))
    assert copied == published
    with connect(published_db) as conn:
        assert postgres.migrate(conn, 64) == [] and publish(conn, fake_index_dir).changes == 0


def test_a_change_to_a_published_db_leaves_the_template_and_the_next_copy_as_they_were(
        published_template, pg_server, published_db):
    with psycopg.connect(published_db) as conn:
        conn.execute("delete from knowledge_chunks")
    again = new_database(pg_server["url"], template=published_template)
    with psycopg.connect(again) as conn:
        assert conn.execute("select count(*) from knowledge_chunks").fetchone()[0] > 0
