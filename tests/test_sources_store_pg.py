"""The web sources store (store/sources.py) in a real PostgreSQL with pgvector."""

from __future__ import annotations

import threading

import pytest

from knowledge_build.store.common import NotFound, SourcesUnavailable
from knowledge_build.store.sources import SourceStore
from tests.conftest import FakeEmbedder
from tests.test_sources_store import TOPICS, _chunks_of, fill, page, table_page

pytestmark = pytest.mark.db


@pytest.fixture
def store(fresh_db):
    with SourceStore(FakeEmbedder(), fresh_db) as opened:
        yield opened


def test_postgres_store_lists_finds_and_deletes_sources(store):
    assert store.backend == "postgres" and store.vector_index == "pgvector"
    fill(store)
    assert store.status()["chunks"] == 2 * len(TOPICS) and store.status()["sources"] == len(TOPICS)
    assert store.query("ユークリッドの互除法")[0]["source"] == "https://math.example/6"
    url = "https://game.example/characters"
    store.replace_source(url, "キャラクター一覧", table_page(url))
    best = store.query("メノクラゲ")[0]
    assert best["source"] == url and "メノクラゲ | みず | 40" in best["text"]
    assert store.delete_source("https://math.example/3") == 2
    assert all(r["source"] != "https://math.example/3" for r in store.query("等差数列の和", k=50))
    with pytest.raises(NotFound, match="no source https://nowhere.example/"):
        store.delete_source("https://nowhere.example/")


@pytest.mark.parametrize("query", ['"', "'", "\\", "a & b", "!", ":*", "--", "^2", "l:x | y"])
def test_postgres_query_with_tsquery_syntax_does_not_crash(store, query):
    fill(store)
    assert isinstance(store.query(query), list)


def test_postgres_reingest_never_shows_a_reader_zero_chunks_or_two_versions(fresh_db):
    url = "https://news.example/live"

    def version(n: int):
        return page(url, "速報", [(f"第{n}版 {i}", f"第{n}版の速報記事 その{i}。天気と交通の情報。")
                                 for i in range(3 if n % 2 else 5)])

    writer, reader = SourceStore(FakeEmbedder(), fresh_db), SourceStore(FakeEmbedder(), fresh_db)
    writer.replace_source(url, "速報", version(0))
    seen, problems, done = [], [], threading.Event()

    def read():
        try:
            while not done.is_set() or not seen:
                results = [r for r in reader.query("速報記事 天気 交通", k=20) if r["source"] == url]
                versions = {r["heading"].split()[0] for r in results}
                if len(versions) != 1 or len(results) != _chunks_of(next(iter(versions))):
                    problems.append((versions, len(results)))
                seen.append(versions)
        except Exception as exc:  # noqa: BLE001  (reported by the assertion below)
            problems.append(exc)

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for n in range(1, 21):
            writer.replace_source(url, "速報", version(n))
    finally:
        done.set()
        thread.join(timeout=120)
    assert problems == [] and seen
    writer.close()
    reader.close()


def test_postgres_store_refuses_another_dimension(fresh_db):
    with SourceStore(FakeEmbedder(64), fresh_db) as first:
        first.replace_source("https://a.example/", "A", page("https://a.example/", "A", [("h", "本文です")]))
    with pytest.raises(SourcesUnavailable, match="dimension 64, this embedder makes 32"):
        SourceStore(FakeEmbedder(32), fresh_db)


def test_postgres_store_made_before_the_language_column_gets_it(fresh_db):
    import psycopg

    from knowledge_build.web.chunk import WebChunk

    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute("create extension if not exists vector")
        conn.execute("create table knowledge_sources (url text primary key, title text not null, chunks integer not null,"
                     " crawled_at text not null, updated_at text not null)")
        conn.execute("insert into knowledge_sources values ('https://old.example/', '古いページ', 0, 'x', 'x')")
    with SourceStore(FakeEmbedder(), fresh_db) as opened:
        assert opened.sources()[0]["language"] == ""
        url = "https://docs.example/en/install"
        opened.replace_source(url, "Install", [WebChunk(url, url, "Install", "Steps", (), "section",
                                                        "Run the installer.", 0, "2026-11-01T10:00:00+00:00", "en")])
        assert {s["url"]: s["language"] for s in opened.sources()}[url] == "en"
        assert opened.query("installer")[0]["language"] == "en"


def test_postgres_relevance_and_places_are_those_of_sqlite(fresh_db, tmp_path):
    """The store's own statistics (chunks, mean length, chunks holding each token) read from the GIN
    index and the tokens' JSON give the numbers SQLite's terms table gives: the same relevance."""
    from knowledge_build.ranking.settings import SearchSettings

    settings = SearchSettings(relevance_cosine_slope=0.0)  # the fake cosines say nothing: coverage decides
    found = []
    for target in (fresh_db, tmp_path / "store.sqlite"):
        with SourceStore(FakeEmbedder(), target, settings=settings) as store:
            fill(store)
            url = "https://game.example/characters"
            store.replace_source(url, "キャラクター一覧", table_page(url, rows_per_chunk=2))
            stats = store._db.statistics({"lemma": ["求める", "ユークリッド"], "kana2": ["ユー"]})
            results = store.query("ヒトカゲ ゼニガメ ピカチュウ HP", k=3) + store.query("最大公約数を求める", k=3)
            found.append((stats, [(r["url"], r["relevance"], [s["url"] for s in r["sub_results"]]) for r in results]))
    (pg_stats, pg), (lite_stats, lite) = found
    assert pg_stats.chunks == lite_stats.chunks and pg_stats.df == lite_stats.df
    assert pg_stats.mean_length == pytest.approx(lite_stats.mean_length)
    assert [(u, s) for u, _, s in pg] == [(u, s) for u, _, s in lite]
    assert [r for _, r, _ in pg] == pytest.approx([r for _, r, _ in lite], abs=1e-6)
    assert any(s for _, _, s in pg)  # a table's rows are one place
