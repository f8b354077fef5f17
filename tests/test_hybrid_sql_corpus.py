"""The database's hybrid search on the reference corpus, real model, real PostgreSQL: the RPC alone
finds the たすき掛け box by every spelling, and `search --database-url` (SearchService) is within
0.02 of the artifacts path on the dev set and above the embedding-only RPC (README, "Hybrid search
in the database")."""

import pytest

from knowledge_build import KnowledgeIndex
from knowledge_build.evaluation.evaluate import evaluate, load_dataset
from knowledge_build.serve.service import SearchService
from knowledge_build.store.postgres import connect, dense_search, hybrid_search, publish

pytestmark = [pytest.mark.model, pytest.mark.corpus, pytest.mark.db, pytest.mark.xdist_group("corpus-sql")]


@pytest.fixture(scope="module")
def published(corpus_real_index, pg_server):
    import uuid

    import psycopg

    name = "kb_corpus_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    url = pg_server["url"].replace("/postgres?", f"/{name}?")
    with connect(url) as conn:
        publish(conn, corpus_real_index)
    return url, KnowledgeIndex.open(corpus_real_index)


@pytest.mark.parametrize("query", ["たすきがけ", "タスキガケ", "tasukigake", "襷掛け"])
def test_the_rpc_alone_finds_a_tasukigake_box_by_every_spelling(published, query):
    """As a tutor's own server calls it: the text and the model's vector of the query as typed (no
    rewording on the way), and the text alone."""
    url, index = published
    vector = index.embedder.embed_query(query)
    with connect(url) as conn:
        for rows in (hybrid_search(conn, query, vector, 5), hybrid_search(conn, query, None, 5)):
            titles = [index.get(chunk_id).title for chunk_id, *_ in rows]
            assert any("たすき掛け" in title for title in titles), (query, titles)


class _DenseRpc:
    """The embedding-only search_knowledge as a tutor called it before: its ids in its order."""

    def __init__(self, index, conn):
        self.index, self.conn, self.chunks = index, conn, index.chunks

    def search(self, query, k=5, mode=None):
        class Found:
            sub_results = ()

            def __init__(self, chunk_id):
                self.id = chunk_id

        return [Found(row[0]) for row in dense_search(self.conn, self.index.analyser.embed(query), k)]


def test_the_database_hybrid_is_within_002_of_the_artifacts_and_above_the_dense_rpc(published, dev_queries):
    url, index = published
    queries = load_dataset(dev_queries)
    service = SearchService(index, url, statement_timeout_ms=60_000)
    try:
        service.chunks = index.chunks  # evaluate() checks the labelled ids against them
        through_database = evaluate(service, queries).metrics
        assert {r.source for q in queries[:5] for r in service.search(q.query)} == {"database"}
    finally:
        service.close()
    artifacts = evaluate(index, queries).metrics
    with connect(url) as conn:
        dense = evaluate(_DenseRpc(index, conn), queries).metrics
    for metric in ("hit@5", "mrr@10"):
        assert through_database[metric] >= artifacts[metric] - 0.02, (metric, through_database, artifacts)
        assert through_database[metric] > dense[metric], (metric, through_database, dense)
