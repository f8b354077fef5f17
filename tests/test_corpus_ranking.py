"""Issue 12's query checks on the reference corpus, hybrid, real model, through the CLI's build and
the library's search (items 2 and 3; the たすき掛け spellings are the quality bar that must hold)."""


import pytest

from knowledge_build import KnowledgeIndex

pytestmark = [pytest.mark.model, pytest.mark.corpus, pytest.mark.xdist_group("corpus-real")]


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
