"""Issue 12's query checks on the reference corpus, hybrid, real model, through the CLI's build and
the library's search (items 2 and 3; the たすき掛け spellings are the quality bar that must hold)."""


import pytest

from knowledge_build import KnowledgeIndex

pytestmark = [pytest.mark.model, pytest.mark.corpus]


@pytest.fixture(scope="module")
def corpus_index(corpus_real_index):
    return KnowledgeIndex.open(corpus_real_index)


def _top(index, query, k):
    return index.search(query, k=k)


def test_quadratic_equation_how_to_solve_puts_a_box_of_that_page_first(corpus_index):
    assert _top(corpus_index, "二次方程式の解き方", 1)[0].material == "二次方程式の解き方_教材"


def test_slope_of_a_linear_function_has_the_meaning_of_slope_box_in_the_top_3(corpus_index):
    assert "一次関数の基本_教材#rule-slope" in [r.id for r in _top(corpus_index, "一次関数の傾き", 3)]


@pytest.mark.parametrize("query", ["たすきがけ", "タスキガケ", "襷掛け", "tasukigake"])
def test_every_spelling_of_tasukigake_finds_a_tasukigake_box_in_the_top_5(corpus_index, query):
    assert any("たすき掛け" in r.title for r in _top(corpus_index, query, 5))


def test_pythagoras_has_a_sanheiho_rule_in_the_top_3(corpus_index):
    top = _top(corpus_index, "ピタゴラスの定理", 3)
    assert any(r.material.startswith("三平方の定理") and r.type == "rule" for r in top)


def _is_answer(index, result, label) -> bool:
    """A result (or one of its sub-results) on the labelled page whose text holds the snippet."""
    import unicodedata

    def norm(text):
        return "".join(unicodedata.normalize("NFKC", text).lower().split())

    for chunk_id in (result.id, *(s["id"] for s in result.sub_results)):
        chunk = index.get(chunk_id)
        if chunk.material == label["material"] and norm(label["snippet"]) in norm(f"{chunk.title}\n{chunk.content}"):
            return True
    return False


def test_a_relevant_page_part_in_the_first_three_places_finds_more_answers_outside_boxes(dev_queries, corpus_index):
    """README, "A page part stays in view": outside-box questions hit@5 0.763 -> 0.825, the dev set
    keeps hit@5 >= 0.95, and no first result changes."""
    import json
    from dataclasses import replace
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    outside = [json.loads(line) for line in (root / "data/eval/outside_box_queries.jsonl").read_text("utf-8").splitlines()]
    dev = [json.loads(line) for line in dev_queries.read_text("utf-8").splitlines() if line.strip()]
    shipped = corpus_index.settings
    runs = {}
    for part_place in (0, shipped.part_place):
        corpus_index.settings = replace(shipped, part_place=part_place)
        try:
            out = [corpus_index.search(q["query"], k=5) for q in outside]
            found = [corpus_index.search(q["query"], k=5) for q in dev]
        finally:
            corpus_index.settings = shipped
        runs[part_place] = (
            sum(any(_is_answer(corpus_index, r, q) for r in res) for q, res in zip(outside, out)) / len(outside),
            sum(any(r.id in q["relevant"] or any(s["id"] in q["relevant"] for s in r.sub_results) for r in res)
                for q, res in zip(dev, found)) / len(dev),
            [res[0].id for res in out + found])
    (outside_off, _, first_off), (outside_on, dev_on, first_on) = runs[0], runs[shipped.part_place]
    assert shipped.part_place == 3
    assert round(outside_off, 3) <= 0.763 and round(outside_on, 3) >= 0.825
    assert dev_on >= 0.95 and first_on == first_off


def test_kana_and_romaji_variants_find_their_box_in_the_top_5(corpus_index):
    """README: the variant queries (hiragana, romaji, katakana, full-width) reach hit@5 0.958; the dense
    query reads a kana term as the site writes it (よげんていり -> 余弦定理), which took it from 0.917."""
    import json

    from .conftest import ROOT

    items = [json.loads(line) for line in (ROOT / "data/eval/variant_queries.jsonl").read_text(encoding="utf-8").splitlines()]
    hits = sum(any(r.id in item["relevant"] or any(s["id"] in item["relevant"] for s in r.sub_results)
                   for r in corpus_index.search(item["query"], k=5)) for item in items)
    assert hits / len(items) >= 0.95, hits
