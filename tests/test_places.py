"""One result per place (ranking/places.py): chunks whose links land on the same spot (the same url)
are one result, the others travel with it as `sub_results`, and `k` counts places, in the site's
search (artifacts and a dense ranking another store supplies), the CLI and `eval`."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace

import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build.cli import main
from knowledge_build.evaluation.evaluate import place_id
from knowledge_build.ranking.places import MAX_SUB_RESULTS, by_place

from .conftest import FakeEmbedder

TABLE_PAGE = "/math-note/junior/平方数と立方数.html"
ROW_QUESTION = "17の2乗はいくつ"  # a row of the sample site's table of squares and cubes


@pytest.fixture(scope="module")
def index(fake_index_dir):
    return kb.KnowledgeIndex.open(fake_index_dir, FakeEmbedder())


def test_the_first_item_of_a_place_leads_and_its_later_items_follow_it():
    ranked = [("a", 1), ("b", 1), ("a", 2), ("c", 1), ("a", 3), ("b", 2), ("d", 1), ("a", 4)]
    assert by_place(ranked, lambda item: item[0], 3) == [
        (("a", 1), [("a", 2), ("a", 3)]), (("b", 1), [("b", 2)]), (("c", 1), [])]


def test_k_counts_places_and_the_walk_stops_where_a_place_beyond_the_kth_begins():
    ranked = ["a", "a", "b", "c", "b"]
    assert [lead for lead, _ in by_place(ranked, str, 2)] == ["a", "b"]
    assert by_place(ranked, str, 2)[1] == ("b", [])  # the "b" after "c" is past the third place's start
    assert by_place(ranked, str, 0) == [] and by_place([], str, 5) == []


def test_a_place_keeps_at_most_max_sub_results_others():
    assert MAX_SUB_RESULTS == 5
    lead, others = by_place([("t", n) for n in range(20)], lambda item: item[0], 1)[0]
    assert lead == ("t", 0) and others == [("t", n) for n in range(1, MAX_SUB_RESULTS + 1)]


def test_the_first_promoted_place_moves_up_to_place_within_when_none_of_the_first_is_promoted():
    part = lambda item: item.startswith("s")  # noqa: E731
    # "s1" is the fifth place: it moves up to the third, and "s1"'s later chunk travels with it
    ranked = ["b1", "b2", "b3", "b4", "s1", "s1", "b5"]
    assert [lead for lead, _ in by_place(ranked, str, 5, promote=part, within=3)] == ["b1", "b2", "s1", "b3", "b4"]
    # beyond the k-th place: found further down the ranking, the k-th place gives way
    ranked = ["b1", "b2", "b3", "b4", "b5", "s1", "s2"]
    assert [lead for lead, _ in by_place(ranked, str, 4, promote=part, within=3)] == ["b1", "b2", "s1", "b3"]
    # a promoted place already among the first `within`, none at all, or k below `within`: unchanged
    for ranked, k in ((["b1", "s1", "b2", "s2"], 3), (["b1", "b2", "b3", "b4"], 3), (["b1", "b2", "s1"], 2)):
        assert by_place(ranked, str, k, promote=part, within=3) == by_place(ranked, str, k)


@pytest.mark.model
def test_the_best_relevant_page_part_of_a_mixed_index_is_among_the_first_three_results(real_index):
    """The sample site with the real model: boxes alone fill the first three places for this query;
    the best section the query is relevant to is lifted to the third, the first result unchanged."""
    query = "二次方程式の解の公式"
    settings = real_index.settings
    try:
        real_index.settings = replace(settings, part_place=0)
        unlifted = real_index.search(query, k=5)
    finally:
        real_index.settings = settings
    results = real_index.search(query, k=5)
    assert not any(r.type in ("section", "table") for r in unlifted[:3])  # what the rule changes
    assert results[0].id == unlifted[0].id and results[2].type in ("section", "table") and results[2].relevant
    assert [r.id for r in results if r.type not in ("section", "table")] == [r.id for r in unlifted][:4]
    filtered = real_index.search(query, k=5, type="rule")  # a type filter: nothing is lifted
    assert all(r.type == "rule" for r in filtered)


def test_a_tables_row_chunks_share_one_url_and_the_text_before_the_first_heading_has_the_page_alone(index):
    on_page = [c for c in index.chunks if c.url.split("#")[0] == TABLE_PAGE]
    rows = [c for c in on_page if c.type == "table"]
    assert len(rows) > MAX_SUB_RESULTS and len({c.url for c in rows}) == 1  # one place: the table's section
    assert [c.url for c in on_page if c.anchor == "sec-top"] == [TABLE_PAGE]
    boxes = [c for c in index.chunks if c.type not in ("section", "table")]
    assert all(n == 1 for n in Counter(c.url for c in boxes).values())  # each box is a place of its own


def test_search_returns_one_result_per_place_with_the_places_other_chunks_under_it(index):
    results = index.search(ROW_QUESTION, k=5)
    assert len(results) == 5 and len({r.url for r in results}) == 5
    table = next(r for r in results if r.url.startswith(TABLE_PAGE + "#"))
    assert table.sub_results and all(s["url"] == table.url for s in table.sub_results)
    assert {s["id"] for s in table.sub_results}.isdisjoint({r.id for r in results})
    assert [s["score"] for s in table.sub_results] == sorted((s["score"] for s in table.sub_results), reverse=True)
    assert table.score >= table.sub_results[0]["score"]  # the best chunk of the place leads
    assert set(table.sub_results[0]) == {"id", "url", "title", "excerpt", "score", "similarity", "relevance",
                                         "relevant"}
    assert all(r.to_dict()["sub_results"] == [] for r in results if r is not table)


def test_the_grouping_holds_when_another_store_supplies_the_dense_ranking(index):
    """The database path (SearchService.search) hands its ranking to the same rank()."""
    local = index.search(ROW_QUESTION, k=5)
    qvec = index.analyser.embed(ROW_QUESTION)
    every = {row: float(index.artifacts.dense_index.reconstruct(row) @ qvec) for row in range(len(index))}
    supplied = index.search(ROW_QUESTION, k=5, dense_source=lambda vector, filters: every)
    assert {r.source for r in supplied} == {"database"} and len({r.url for r in supplied}) == 5
    assert [r.id for r in supplied] == [r.id for r in local]
    assert [s["id"] for r in supplied for s in r.sub_results] == [s["id"] for r in local for s in r.sub_results]


def test_a_similarity_floor_applies_to_every_chunk_shown_lead_and_sub_results(index):
    results = index.search(ROW_QUESTION, k=5)
    shown = sorted(s["similarity"] for r in results for s in r.sub_results)
    floor = (shown[0] + shown[-1]) / 2
    assert shown[0] < floor
    kept = index.search(ROW_QUESTION, k=5, min_similarity=floor)
    assert kept and all(r.similarity >= floor and all(s["similarity"] >= floor for s in r.sub_results) for r in kept)


def test_a_relevance_floor_applies_to_every_chunk_shown(fake_index_dir):
    from knowledge_build.ranking.settings import SearchSettings

    index = kb.KnowledgeIndex.open(fake_index_dir, FakeEmbedder(), settings=SearchSettings(relevance_cosine_slope=0))
    results = index.search(ROW_QUESTION, k=5)
    subs = [s["relevance"] for r in results for s in r.sub_results]
    # a floor above the sub-results' relevance and below a lead that has sub-results
    lead = max(r.relevance for r in results if r.sub_results)
    assert subs and max(subs) < lead
    floor = (max(subs) + lead) / 2
    kept = index.search(ROW_QUESTION, k=5, min_relevance=floor)
    assert any(r.sub_results for r in results) and not any(r.sub_results for r in kept)
    assert kept and all(r.relevance >= floor and all(s["relevance"] >= floor for s in r.sub_results) for r in kept)


def test_cli_search_shows_sub_results_under_their_result_and_in_json(fake_index_dir, fake_open):
    text = CliRunner().invoke(main, ["search", ROW_QUESTION, "--index", str(fake_index_dir)])
    assert text.exit_code == 0, text.output
    data = json.loads(CliRunner().invoke(main, ["search", ROW_QUESTION, "--index", str(fake_index_dir),
                                                "--format", "json"]).output)
    assert len(data["results"]) == 5 and all("sub_results" in r for r in data["results"])
    rank = next(n for n, r in enumerate(data["results"], 1) if r["sub_results"])
    blocks = re.split(r"^ ?(?=\d+\. )", text.output, flags=re.M)[1:]  # one block per result
    shown = [line.split()[1] for line in blocks[rank - 1].splitlines() if line.startswith("      + ")]
    assert shown == [s["id"] for s in data["results"][rank - 1]["sub_results"]]
    assert not any("      + " in block for n, block in enumerate(blocks, 1) if not data["results"][n - 1]["sub_results"])


def test_search_k_help_says_it_counts_places():
    result = CliRunner().invoke(main, ["search", "--help"])
    assert "Number of places" in " ".join(result.output.split())


def test_eval_counts_a_relevant_sub_result_at_its_places_rank(index):
    table = next(r for r in index.search(ROW_QUESTION, k=5) if r.sub_results)
    wanted = table.sub_results[-1]["id"]
    assert place_id(table, {wanted}) == wanted and place_id(table, {"x#y"}) == table.id
