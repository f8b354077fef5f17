"""SearchService: database first, artifacts when it fails or holds another build; one probe at a
time; a pool for concurrent callers; parity between the two paths."""

import json
import logging
import os
import shutil
import signal
import threading
import time

import psycopg
import pytest

from knowledge_build import CircuitBreaker, KnowledgeIndex, SearchService, build, load_config
from knowledge_build.store import postgres, server
from knowledge_build.store.postgres import connect, publish

from .conftest import SITE, FakeEmbedder, wait_until_gone

CLOSED_PORT = "postgresql://nobody@127.0.0.1:1/none"


def _fake_index(tmp_path, name="site", edit=None):
    root = tmp_path / name
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    if edit:
        edit(root)
    output = build(load_config(site=root, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder()).output
    return output


def _open(path):
    return KnowledgeIndex.open(path, embedder=FakeEmbedder())


@pytest.fixture
def count_connects(monkeypatch):
    """Counts every connection attempt (direct or from a pool); `hold` makes each one wait for an event."""
    state = {"attempts": 0, "hold": None}
    original = psycopg.Connection.connect.__func__

    def counting(cls, *args, **kwargs):
        state["attempts"] += 1
        if state["hold"] is not None:
            state["hold"].wait(60)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "connect", classmethod(counting))
    monkeypatch.setattr(psycopg, "connect", psycopg.Connection.connect)
    return state


def test_half_open_breaker_lets_exactly_one_of_six_concurrent_callers_probe(tmp_path, count_connects):
    now = [0.0]
    breaker = CircuitBreaker(reset_after=10, clock=lambda: now[0])
    service = SearchService(_open(_fake_index(tmp_path)), CLOSED_PORT, connect_timeout=1, breaker=breaker)
    assert service.search("移項")[0].source == "artifacts" and breaker.state == "open"
    assert count_connects["attempts"] == 1
    now[0] = 10.0
    assert breaker.state == "half-open"
    # The probe's connect waits until the five others have answered: with one shared lock (the old
    # behaviour) they would queue behind it and then connect too.
    count_connects["attempts"], count_connects["hold"] = 0, threading.Event()
    barrier, answered, sources = threading.Barrier(6), [], []

    def caller():
        barrier.wait(30)
        sources.append(service.search("移項")[0].source)
        answered.append(1)
        if len(answered) == 5:
            count_connects["hold"].set()

    threads = [threading.Thread(target=caller) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert count_connects["attempts"] == 1
    assert sources == ["artifacts"] * 6
    assert breaker.state == "open"  # the probe failed: skip again for reset_after


def test_after_a_failed_probe_nothing_connects_until_the_next_one_is_due(tmp_path, count_connects, caplog):
    now = [0.0]
    breaker = CircuitBreaker(reset_after=5, clock=lambda: now[0])
    service = SearchService(_open(_fake_index(tmp_path)), CLOSED_PORT, connect_timeout=1, breaker=breaker)
    with caplog.at_level(logging.INFO, logger="knowledge_build.service"):
        for _ in range(20):
            service.search("移項")
        now[0] = 4.0
        for _ in range(20):
            service.search("移項")
        assert count_connects["attempts"] == 1
        now[0] = 5.0
        for _ in range(20):
            assert service.search("移項")[0].source == "artifacts"
    assert count_connects["attempts"] == 2
    # The outage is a warning once; the failed probe only a note.
    assert [r.levelno for r in caplog.records if r.name == "knowledge_build.service"] == [logging.WARNING,
                                                                                          logging.INFO]


@pytest.mark.db
def test_concurrent_database_searches_use_separate_connections(published_db, fake_index_dir, monkeypatch):
    service = SearchService(_open(fake_index_dir), published_db, pool_size=4)
    barrier, backends = threading.Barrier(4), []
    original = postgres.hybrid_search  # a hybrid query goes to the hybrid RPC

    def inside_the_barrier(conn, *args, **kwargs):
        # Every caller holds its connection here until all four arrived: one shared connection
        # would never let the second one in, and the barrier would break.
        barrier.wait(60)
        backends.append(conn.execute("select pg_backend_pid()").fetchone()[0])
        return original(conn, *args, **kwargs)

    monkeypatch.setattr(postgres, "hybrid_search", inside_the_barrier)
    sources = []
    threads = [threading.Thread(target=lambda: sources.append(service.search("移項")[0].source)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    service.close()
    assert not barrier.broken and len(set(backends)) == 4
    assert sources == ["database"] * 4 and service.breaker.state == "closed"


@pytest.mark.db
def test_a_database_holding_another_build_is_not_an_outage(tmp_path, fresh_db, caplog):
    def edit(root):
        page = root / "junior" / "一次方程式.html"
        page.write_text(page.read_text(encoding="utf-8").replace("<strong>📌 移項</strong>",
                                                                "<strong>📌 移項の規則</strong>"), encoding="utf-8")

    ours, theirs = _fake_index(tmp_path), _fake_index(tmp_path, "other", edit)
    with connect(fresh_db) as conn:
        publish(conn, theirs)
    service = SearchService(_open(ours), fresh_db, build_check_interval=0)
    with caplog.at_level(logging.INFO, logger="knowledge_build.service"):
        for _ in range(30):
            assert service.search("移項")[0].source == "artifacts"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "answering from the artifacts until they match" in warnings[0].getMessage()
    their_build = json.loads((theirs / "manifest.json").read_text())["build_id"]
    health = service.health()
    assert health["breaker"] == "closed" and health["backend"] == "artifacts"
    assert health["database_build"] == their_build and health["database_build_matches"] is False
    assert service.concepts(type="rule")[0]["source"] == "artifacts"

    with connect(fresh_db) as conn:
        publish(conn, ours)
    assert service.search("移項")[0].source == "database"
    assert service.health()["backend"] == "database" and service.health()["database_build_matches"] is True
    service.close()


@pytest.mark.db
@pytest.mark.model
@pytest.mark.corpus
def test_database_and_artifacts_paths_agree_on_50_corpus_queries(dev_queries, corpus_real_index, fresh_db):
    with connect(fresh_db) as conn:
        publish(conn, corpus_real_index)
    index = KnowledgeIndex.open(corpus_real_index)
    service = SearchService(index, fresh_db)
    queries = [json.loads(line)["query"] for line in
               dev_queries.read_text(encoding="utf-8").splitlines()][:50]
    same_first, shared = 0, 0
    for query in queries:
        # dense: the database's ranking fused locally, exactly as offline
        from_db, local = service.search(query, k=5, mode="dense"), index.search(query, k=5, mode="dense")
        assert {r.source for r in from_db} == {"database"}, query
        assert [r.id for r in from_db] == [r.id for r in local], query
        for a, b in zip(from_db, local):
            assert abs(a.similarity - b.similarity) < 1e-4
            # relevance's cosine slope is 50: a 1e-4 cosine difference moves it by at most 1.25e-3
            assert abs(a.relevance - b.relevance) < 2e-3, query
            assert a.relevant == b.relevant or abs(b.relevance - 0.5) < 2e-3, query
        # hybrid: the database's own lexical channel (bigrams and the site's words, README "Hybrid
        # search in the database"), so the lists differ in places: 45/50 first results and 3.86 of 5
        # shared when measured (2026-11-27); the bars leave room for the fusion's near-ties.
        from_db, local = service.search(query, k=5), index.search(query, k=5)
        assert {r.source for r in from_db} == {"database"}, query
        assert all(0 <= a.similarity <= 1 and 0 <= a.relevance <= 1 for a in from_db), query
        same_first += from_db[0].id == local[0].id
        shared += len({r.id for r in from_db} & {r.id for r in local})
    assert same_first >= 40 and shared >= 3.5 * len(queries), (same_first, shared)
    assert service.search("解の公式", k=3, type="rule", category="equations")[0].source == "database"


@pytest.mark.db
@pytest.mark.model
def test_killing_the_database_mid_run_loses_no_query(real_index_dir, pg_data_dir):
    data = pg_data_dir
    url = server.start(data)
    with connect(url) as conn:
        publish(conn, real_index_dir)
    service = SearchService(KnowledgeIndex.open(real_index_dir), url, connect_timeout=1,
                            breaker=CircuitBreaker(reset_after=0.2))
    queries = ["たすきがけ", "解の公式", "移項", "三平方の定理", "傾きとは", "平方根の計算", "判別式", "sin とは"]
    sources, failures_at = [], []
    try:
        for i in range(1000):
            if i == 300:
                os.kill(server.pid(data), signal.SIGKILL)
                failures_at.append(i)
            if i == 600:
                wait_until_gone(data, tries=200)
                server.start(data)
            started = time.perf_counter()
            results = service.search(queries[i % len(queries)], k=5)
            assert len(results) == 5, i
            sources.append((results[0].source, time.perf_counter() - started))
            if i >= 600 and sources[-1][0] == "artifacts":
                time.sleep(0.01)  # give the restarted server and the breaker's probe a moment
    finally:
        server.stop(data)
    assert {s for s, _ in sources[:300]} == {"database"}
    assert {s for s, _ in sources[301:600]} == {"artifacts"}
    assert sources[-1][0] == "database" and service.breaker.state == "closed"


def test_health_names_the_live_backend(tmp_path):
    index = _open(_fake_index(tmp_path))
    assert SearchService(index).health()["backend"] == "artifacts"
    service = SearchService(index, CLOSED_PORT, connect_timeout=1)
    assert service.health()["backend"] == "database"
    assert service.search("たすきがけ")[0].source == "artifacts"
    assert service.health()["backend"] == "artifacts" and service.health()["breaker"] == "open"


@pytest.fixture
def fake_cli(fake_open):
    """The CLI with the fake embedder behind KnowledgeIndex.open."""
    from click.testing import CliRunner

    return CliRunner()


def test_serve_where_the_default_notes_file_cannot_be_created_says_so(tmp_path, fake_cli, monkeypatch):
    from knowledge_build.cli import main

    index = _fake_index(tmp_path)
    workdir = tmp_path / "work"
    (workdir / ".knowledge-notes.sqlite").mkdir(parents=True)  # something that is not a writable file is in the way
    monkeypatch.chdir(workdir)
    result = fake_cli.invoke(main, ["serve", "--index", str(index)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"Error: cannot create or write the notes file {workdir}/.knowledge-notes.sqlite (")
    assert "Fix: run from a writable directory, or pass --notes" in result.output

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the working directory no longer exists: nothing can be created in it
    result = fake_cli.invoke(main, ["serve", "--index", str(index)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "Error: the current directory no longer exists" in result.output
