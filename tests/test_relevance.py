"""Calibrated relevance with the fake embedder: the fields on every result, min_relevance, the
lexical coverage it rests on, and how the CLI and the MCP server say that nothing is relevant."""

import asyncio
import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, NoteStore, SearchService
from knowledge_build.cli import main
from knowledge_build.index.postings import from_token_lists
from knowledge_build.ranking.settings import SearchSettings
from knowledge_build.ranking.relevance import idf, lexical_coverage, relevances


def _postings(docs, reference):
    return from_token_lists({"lemma": docs}, np.array(reference))


def _bm25s(docs):
    import bm25s

    model = bm25s.BM25()
    model.index(docs, create_empty_token=False, show_progress=False)
    return model

from .conftest import FakeEmbedder


@pytest.fixture(scope="module")
def index(fake_index_dir):
    return KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())


def test_every_result_has_a_relevance_between_0_and_1_and_relevant_follows_the_threshold(index):
    for mode in ("hybrid", "dense", "lexical"):
        results = index.search("二次方程式の解の公式", k=10, mode=mode)
        assert results, mode
        for r in results:
            assert 0.0 <= r.relevance <= 1.0 and r.relevant == (r.relevance >= 0.5)
            assert {"relevance", "relevant"} <= set(r.to_dict())


def test_min_relevance_drops_results_below_it_and_keeps_the_rest_in_order(index):
    everything = index.search("二次方程式の解の公式", k=20)
    cut = max(r.relevance for r in everything)
    assert cut > min(r.relevance for r in everything)
    kept = index.search("二次方程式の解の公式", k=20, min_relevance=cut)
    assert [r.id for r in kept] == [r.id for r in everything if r.relevance >= cut]
    assert 0 < len(kept) < len(everything)
    assert index.search("二次方程式の解の公式", k=20, min_relevance=1.0) == []


def test_min_relevance_from_the_settings_applies_when_the_call_gives_none(fake_index_dir):
    strict = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder(), settings=SearchSettings(min_relevance=1.0))
    assert strict.search("二次方程式の解の公式") == []
    assert strict.search("二次方程式の解の公式", min_relevance=0.0)


def test_coverage_is_the_chunks_bm25_over_the_idf_the_query_could_reach_and_unknown_tokens_lower_it():
    docs = [["二次", "方程式", "公式"], ["一次", "関数"], ["円", "面積"]]
    reference = _postings(docs, [True] * 3)
    full = lexical_coverage(reference, {"lemma": ["二次", "方程式"]}, [0, 1, 2])
    reachable = 2 * idf(1, 3)
    assert full[0] == pytest.approx(float(_bm25s(docs).get_scores(["二次", "方程式"])[0]) / reachable)
    assert full[1] == full[2] == 0.0
    diluted = lexical_coverage(reference, {"lemma": ["二次", "方程式", "カレー", "玉ねぎ"]}, [0])
    assert diluted[0] == pytest.approx(full[0] * reachable / (reachable + 2 * idf(0, 3)))  # unknown: highest idf


def test_long_sections_added_to_an_index_leave_a_boxs_coverage_as_it_was():
    boxes = [["二次", "方程式", "公式"], ["一次", "関数"], ["円", "面積"]]
    sections = [["二次", "方程式", "解く", *["説明"] * 60], ["関数", "グラフ", *["例"] * 80]]
    query = {"lemma": ["二次", "方程式", "解く"]}
    alone = lexical_coverage(_postings(boxes, [True] * 3), query, [0])
    mixed = _postings(boxes + sections, [True] * 3 + [False] * 2)
    assert lexical_coverage(mixed, query, [0])[0] == pytest.approx(alone[0])
    # The long section holds every word of the query, but is measured against the boxes' length.
    section, box = lexical_coverage(mixed, query, [3, 0])
    assert section < 0.5 and box > section


def test_a_sections_cosine_is_read_against_the_part_centre_and_a_boxs_against_the_box_centre():
    settings = SearchSettings()
    shift = settings.relevance_part_cosine_centre - settings.relevance_cosine_centre
    assert shift > 0
    coverage = np.array([0.3, 0.3, 0.3])
    scores, best = relevances([0.86, 0.86, 0.86 + shift], coverage, settings, query_best=0.0,
                              parts=[False, True, True])
    assert scores[0] > scores[1]  # the same cosine is weaker evidence from long page text
    assert scores[2] == pytest.approx(scores[0])


def test_the_query_relevance_is_its_best_evidence_among_the_first_candidates():
    settings = SearchSettings()
    scores, best = relevances([0.95, 0.70, 0.70], np.array([0.9, 0.0, 0.0]), settings)
    assert best > 0.99 and scores[0] > scores[1] == scores[2] >= 0.5  # a weak answer to a clear query
    low, best_low = relevances([0.70, 0.70], np.array([0.0, 0.0]), settings)
    assert best_low < 0.01 and max(low) < 0.01  # an off-topic query: nothing is relevant
    assert relevances([None], np.array([0.9]), settings)[0][0] > 0.9  # no query vector: coverage decides


def test_the_database_path_gives_the_same_relevance_as_the_artifacts(index):
    local = index.search("連立方程式の解き方", k=5)
    from_store = index.search("連立方程式の解き方", k=5,
                              dense_source=lambda qvec, filters: index.channels.dense(qvec, None))
    assert {r.source for r in from_store} == {"database"}
    assert [(r.id, r.relevance, r.relevant) for r in from_store] == [(r.id, r.relevance, r.relevant) for r in local]


def test_search_table_shows_relevance_and_marks_results_that_are_not_relevant(fake_index_dir, fake_open):
    result = CliRunner().invoke(main, ["search", "二次方程式", "--index", str(fake_index_dir), "-k", "3"])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert " relevance " in first and " similarity " in first


def test_search_with_min_relevance_says_no_relevant_results_and_the_best_score(fake_index_dir, fake_open):
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    best = index.search("二次方程式", k=1)[0].relevance
    args = ["search", "二次方程式", "--index", str(fake_index_dir), "--min-relevance", "1"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert text.output == f"No relevant results. (best relevance {best:.3f}, below --min-relevance 1)\n"
    data = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).output)
    assert data == {"query": "二次方程式", "relevant": False, "results": [], "best_relevance": best}


def test_search_json_says_whether_anything_is_relevant(fake_index_dir, fake_open):
    out = CliRunner().invoke(main, ["search", "二次方程式", "--index", str(fake_index_dir), "--format", "json"])
    data = json.loads(out.output)
    assert data["relevant"] == any(r["relevant"] for r in data["results"]) and data["results"]
    assert all(0 <= r["relevance"] <= 1 for r in data["results"])


@pytest.mark.parametrize("value", ["nan", "-0.1", "1.5"])
def test_min_relevance_outside_0_to_1_is_a_usage_error(fake_index_dir, value):
    result = CliRunner().invoke(main, ["search", "x", "--index", str(fake_index_dir), "--min-relevance", value])
    assert result.exit_code == 2 and "--min-relevance" in result.output


def test_mcp_search_knowledge_reports_relevance_and_an_empty_answer_when_nothing_is_relevant(index, tmp_path):
    from mcp import Client

    from knowledge_build.serve.mcp_server import create_server

    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            found = (await client.call_tool("search_knowledge", {"query": "二次方程式"})).structured_content
            assert found["results"] and found["relevant"] == any(r["relevant"] for r in found["results"])
            assert all({"relevance", "relevant", "similarity"} <= set(r) for r in found["results"])
            none = (await client.call_tool("search_knowledge", {"query": "二次方程式", "min_relevance": 1.0}))
            assert none.structured_content == {"results": [], "total": 0, "relevant": False}
            bad = await client.call_tool("search_knowledge", {"query": "二次方程式", "min_relevance": 2})
            assert bad.is_error and bad.content[0].text == "min_relevance must be between 0 and 1"

    asyncio.run(session())


def test_relevance_does_not_depend_on_k(index):
    five = index.search("三平方の定理", k=5)
    one = index.search("三平方の定理", k=1)
    assert (one[0].id, one[0].relevance) == (five[0].id, five[0].relevance)


def test_changing_the_centre_moves_relevance_not_the_ranking(index):
    """The fused ranking never reads relevance; only the lift of a page part (part_place) asks whether
    the part is relevant, so with a lower centre a part may be lifted where it was not, and nothing else moves."""
    def searcher(**settings):
        return KnowledgeIndex(index.artifacts, replace(index.settings, **settings))

    before = searcher(part_place=0).search("因数分解", k=5)
    after = searcher(part_place=0, relevance_cosine_centre=0.0).search("因数分解", k=5)
    assert [r.id for r in after] == [r.id for r in before]
    assert all(a.relevance >= b.relevance for a, b in zip(after, before))
    lifted = searcher(relevance_cosine_centre=0.0).search("因数分解", k=5)
    boxes = [r.id for r in lifted if r.type not in ("section", "table")]
    assert boxes == [r.id for r in before if r.type not in ("section", "table")][:len(boxes)]
    assert any(r.type in ("section", "table") and r.relevant for r in lifted[:3])


def test_bm25_from_the_postings_equals_bm25s_on_the_same_documents():
    """The lexical channel computes BM25 at query time from term frequencies; v1 sets were scored by
    bm25s at index time, so the two must agree (repeated query tokens, empty and long documents)."""
    from knowledge_build.search.channels import field_scores

    docs = [["二次", "方程式", "公式", "公式"], [], ["一次", "関数", *["例"] * 40], ["円", "面積", "二次"], ["x"] * 3]
    postings = from_token_lists({"lemma": docs}, np.ones(len(docs), dtype=bool))
    model = _bm25s([d or ["\x00"] for d in docs])
    for query in (["二次"], ["公式", "二次", "公式"], ["例", "x", "円"], ["関数"]):
        ours = field_scores(postings, {"lemma": query}, {"lemma": 1.0}, len(docs))
        assert ours.tolist() == pytest.approx(model.get_scores(query).tolist(), rel=1e-6), query
