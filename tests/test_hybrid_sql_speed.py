"""The faster paths of the database's lexical publish give what the slow ones gave: an incremental
publish patches the posting lists and the statistics (knowledge_lexical_stats) instead of reading
every bag again, and must still leave what a full publish of the same set writes, also when chunks
go (those with the highest numbers, which new chunks then take again, and others, whose numbers stay
free) and new ones come."""

import shutil

import psycopg
import pytest

from knowledge_build.store.postgres import connect, publish

from .test_hybrid_sql import _lexical_state, _published

pytestmark = pytest.mark.db


def test_an_incremental_publish_that_drops_and_adds_pages_leaves_what_a_full_publish_writes(
        tmp_path, fresh_db, pg_server):
    _published(tmp_path, fresh_db)
    with psycopg.connect(fresh_db) as conn:
        top_id, top = conn.execute("select id, num from knowledge_chunks order by num desc limit 1").fetchone()
        total = conn.execute("select count(*) from knowledge_chunks").fetchone()[0]
    dropped = top_id.split("#")[0]

    def edit(root):
        pages = {p.stem: p for p in root.rglob("*.html")}
        next(p for stem, p in pages.items() if dropped.endswith(stem)).unlink()
        pages["一次関数"].unlink()
        copy = pages["平方根"]
        shutil.copy(copy, copy.with_name("平方根の練習.html"))

    index = _published(tmp_path, fresh_db, edit)
    with psycopg.connect(fresh_db) as conn:
        assert conn.execute("select count(*) from knowledge_chunks where id = %s", (top_id,)).fetchone()[0] == 0
        new_top, count = conn.execute("select max(num), count(*) from knowledge_chunks").fetchone()
        added = conn.execute("select count(*) from knowledge_chunks where num > %s", (top,)).fetchone()[0]
    assert new_top > top and 0 < added  # numbers past the old top
    assert new_top - count > 0  # and free numbers below it
    assert added < 0.2 * total  # below the share that rebuilds the lists
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute('create database "kb_full_after_drop"')
    full = pg_server["url"].replace("/postgres?", "/kb_full_after_drop?")
    with connect(full) as conn:
        publish(conn, index)
    assert _lexical_state(fresh_db) == _lexical_state(full)
