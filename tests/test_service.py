"""SearchService: database first, artifacts when it fails; parity between the two paths."""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from knowledge_build import CircuitBreaker, KnowledgeIndex, SearchService, build, load_config
from knowledge_build.store import server
from knowledge_build.store.postgres import connect, publish

from .conftest import SHARED

pytestmark = [pytest.mark.db, pytest.mark.model]


@pytest.fixture(scope="module")
def corpus_real_index(corpus_dir, tmp_path_factory):
    """The reference corpus built with the real model (about 2 minutes on 2 cores)."""
    base = tmp_path_factory.mktemp("corpus-real")
    config = load_config(site=corpus_dir, output=base / "v1", cache_dir=base / "cache", env={})
    return build(config).output


def test_database_and_artifacts_paths_agree_on_50_corpus_queries(corpus_real_index, fresh_db):
    with connect(fresh_db) as conn:
        publish(conn, corpus_real_index)
    index = KnowledgeIndex.open(corpus_real_index)
    service = SearchService(index, fresh_db)
    queries = [json.loads(line)["query"] for line in
               (SHARED / "eval" / "dev_queries.jsonl").read_text(encoding="utf-8").splitlines()][:50]
    for query in queries:
        for mode in ("dense", "hybrid"):
            from_db = service.search(query, k=5, mode=mode)
            local = index.search(query, k=5, mode=mode)
            assert {r.source for r in from_db} == {"database"}, query
            assert [r.id for r in from_db] == [r.id for r in local], (mode, query)
            for a, b in zip(from_db, local):
                assert abs(a.similarity - b.similarity) < 1e-4
    assert service.search("解の公式", k=3, type="rule", category="equations")[0].source == "database"


def test_killing_the_database_mid_run_loses_no_query(real_index_dir, tmp_path):
    data = tmp_path / "pg" / "data"
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
                _wait_until_gone(data)
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


def _wait_until_gone(data: Path) -> None:
    for _ in range(200):
        number = server.pid(data)
        if number is None:
            return
        try:
            os.kill(number, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def test_health_names_the_live_backend(real_index_dir):
    index = KnowledgeIndex.open(real_index_dir)
    assert SearchService(index).health()["backend"] == "artifacts"
    service = SearchService(index, "postgresql://nobody@127.0.0.1:1/none", connect_timeout=1)
    assert service.health()["backend"] == "database"
    assert service.search("たすきがけ")[0].source == "artifacts"
    assert service.health()["backend"] == "artifacts" and service.health()["breaker"] == "open"
