"""Web sources' relevance (store/source_relevance.py) and one result per place in the source store.

The fake embedder's cosines say nothing of topic, so these tests read relevance with the cosine's
slope at 0: the lexical coverage, measured against the store's own chunks, decides. The real
model's test is test_sources_model.py."""

from __future__ import annotations

import numpy as np
import pytest

from knowledge_build.ranking.places import MAX_SUB_RESULTS
from knowledge_build.ranking.settings import SearchSettings
from knowledge_build.store.source_relevance import StoreStatistics, coverage
from knowledge_build.store.sources import SourceStore
from tests.conftest import FakeEmbedder
from tests.test_sources_store import INDEXES, TOPICS, fill, table_page

COVERAGE_ONLY = SearchSettings(relevance_cosine_slope=0.0)
OFF_TOPIC = "今日の天気とサッカーの試合結果"
CHARACTERS_URL = "https://game.example/characters"


@pytest.fixture(params=INDEXES)
def store(tmp_path, request):
    with SourceStore(FakeEmbedder(), tmp_path / "store.sqlite", vector_index=request.param,
                     settings=COVERAGE_ONLY) as opened:
        fill(opened)
        opened.replace_source(CHARACTERS_URL, "キャラクター一覧", table_page(CHARACTERS_URL, rows_per_chunk=2))
        yield opened


def test_every_web_result_has_relevance_and_relevant_at_the_sites_threshold(store):
    for query in ("ユークリッドの互除法で最大公約数", OFF_TOPIC):
        results = store.query(query, k=10)
        assert results and all(0.0 <= r["relevance"] <= 1.0 for r in results)
        assert all(r["relevant"] == (r["relevance"] >= COVERAGE_ONLY.relevance_threshold) for r in results)


def test_an_on_topic_question_is_relevant_and_an_off_topic_one_is_not(store):
    best = store.query("ユークリッドの互除法で最大公約数を求める")[0]
    assert best["source"] == "https://math.example/6" and best["relevant"] and best["relevance"] > 0.8
    assert not any(r["relevant"] for r in store.query(OFF_TOPIC, k=10))
    assert store.query(OFF_TOPIC, k=10, min_relevance=0.5) == []


def test_the_store_counts_its_own_chunks_for_idf_and_mean_length(store):
    stats = store._db.statistics({"lemma": ["求める", "ユークリッド", "存在しない語"]})
    assert stats.chunks == store.status()["chunks"] == 2 * len(TOPICS) + 12
    holding = [t for t, text in TOPICS if "求め" in text]  # 求める, 求め (導関数を求め)
    assert stats.df[("lemma", "求める")] == len(holding) and stats.df[("lemma", "ユークリッド")] == 1
    assert ("lemma", "存在しない語") not in stats.df
    assert stats.mean_length["lemma"] > 0
    store.delete_source(CHARACTERS_URL)  # a write: the lengths are summed again
    after = store._db.statistics({"lemma": ["ユークリッド"]})
    assert after.chunks == 2 * len(TOPICS) and after.mean_length["lemma"] != stats.mean_length["lemma"]


def test_a_rare_token_covers_more_than_one_every_chunk_holds():
    stats = StoreStatistics(chunks=100, mean_length={"lemma": 4.0}, df={("lemma", "の"): 100, ("lemma", "ユークリッド"): 1})
    found = coverage({"lemma": ["ユークリッド", "の"]}, [{"lemma": ["ユークリッド", "a", "b", "c"]}, {"lemma": ["の", "a", "b", "c"]},
                                                 {"lemma": ["a", "b", "c", "d"]}], stats)
    assert found[0] > 0.35 and found[1] < 0.01 and found[2] == 0.0
    never = coverage({"lemma": ["ユークリッド", "未知語"]}, [{"lemma": ["ユークリッド", "a", "b", "c"]}], stats)
    assert never[0] < found[0]  # a token the store never holds counts with the highest idf


def test_a_tables_row_chunks_are_one_place_and_k_counts_places(store):
    results = store.query("ヒトカゲ ゼニガメ ピカチュウ ロコン ガーディ HP", k=3)
    assert len(results) == 3 and len({r["url"] for r in results}) == 3
    table = results[0]
    assert table["url"] == f"{CHARACTERS_URL}#table" and 1 <= len(table["sub_results"]) <= MAX_SUB_RESULTS
    assert all(s["url"] == table["url"] and s["kind"] == "table" for s in table["sub_results"])
    assert {"id", "text", "relevance", "relevant", "similarity", "score"} <= set(table["sub_results"][0])
    named = " ".join([table["text"], *(s["text"] for s in table["sub_results"])])
    assert all(name in named for name in ("ヒトカゲ", "ゼニガメ", "ピカチュウ"))
    assert [s["score"] for s in table["sub_results"]] == sorted((s["score"] for s in table["sub_results"]),
                                                                reverse=True)


def test_both_vector_indexes_give_the_same_relevance(tmp_path):
    found = []
    for name in INDEXES:
        with SourceStore(FakeEmbedder(), tmp_path / f"{name}.sqlite", vector_index=name,
                         settings=COVERAGE_ONLY) as store:
            fill(store)
            found.append([(r["id"], r["relevance"]) for r in store.query("等差数列の和を求める", k=5)])
    assert found[0] == found[1]
    assert np.isclose(found[0][0][1], found[1][0][1])


def test_the_mixed_search_shows_web_places_with_relevance_and_drops_those_below_min_relevance(store):
    from knowledge_build.serve.mcp_sources import web_results

    shown = web_results(store, "ヒトカゲ ゼニガメ ピカチュウ ロコン ガーディ HP", 3)
    assert shown[0]["url"] == f"{CHARACTERS_URL}#table" and shown[0]["sub_results"]
    assert all(len(s["excerpt"]) <= 300 and s["url"] == shown[0]["url"] for s in shown[0]["sub_results"])
    assert all(isinstance(r["relevant"], bool) and 0 <= r["relevance"] <= 1 for r in shown)
    assert web_results(store, OFF_TOPIC, 3) and web_results(store, OFF_TOPIC, 3, min_relevance=0.5) == []
