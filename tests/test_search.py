"""Search logic with the fake embedder: fusion, type priors, filters, empty input."""

import pytest

from knowledge_build import KnowledgeBuildError, KnowledgeIndex, build, load_config
from knowledge_build.ranking import SearchSettings, intended_type, type_weights

from .conftest import FakeEmbedder


@pytest.fixture
def index(site_dir):
    result = build(load_config(site=site_dir), embedder=FakeEmbedder())
    return KnowledgeIndex.open(result.output, embedder=FakeEmbedder())


@pytest.mark.parametrize("query, kind", [
    ("二次方程式を公式で解きたい", "rule"), ("連立方程式の解き方", "method"), ("判別式とは", "definition"),
    ("移項のコツ", "tip"), ("因数分解の例題", "example"), ("たすきがけ", None), ("公式の意味", None),
])
def test_a_query_that_names_a_kind_of_box_is_recognised(query, kind):
    assert intended_type(query) == kind


def test_examples_weigh_less_unless_asked_for():
    settings = SearchSettings()
    assert type_weights("たすきがけ", settings)["example"] == settings.example_weight < 1
    assert type_weights("たすき掛けの例題", settings)["example"] == 1.0
    assert type_weights("解の公式", settings)["rule"] == settings.intent_boost > 1


def test_asking_for_examples_returns_examples_first(index):
    results = index.search("因数分解の例題", k=3)
    assert results[0].type == "example"


def test_empty_query_and_impossible_filters_return_nothing(index):
    assert index.search("   ") == []
    assert index.search("二次方程式", material="存在しない教材") == []


def test_unknown_mode_is_refused(index):
    with pytest.raises(KnowledgeBuildError, match="unknown search mode 'fuzzy'"):
        index.search("x", mode="fuzzy")


def test_lexical_mode_finds_kanji_box_from_hiragana(index):
    assert "因数分解#method-tasukigake" in [r.id for r in index.search("たすきがけ", mode="lexical", k=5)]


def test_similarity_is_clipped_to_zero_one_and_scores_descend(index):
    results = index.search("平方根", k=10)
    assert all(0.0 <= r.similarity <= 1.0 for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_one_concept_on_two_pages_lists_the_other_location(tmp_path):
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text("baseurl: /b\n", encoding="utf-8")
    for name, title in (("p", "ルール1：判別式"), ("q", "判別式")):
        (root / f"{name}.html").write_text(f'---\ntitle: {name}\n---\n<div class="rule-box" id="rule-d">'
                                           f"<strong>{title}</strong>D = b^2 - 4ac の符号</div>", encoding="utf-8")
    index = KnowledgeIndex.open(build(load_config(site=root), embedder=FakeEmbedder()).output, embedder=FakeEmbedder())
    first, second = index.search("判別式", k=2)
    assert [loc["id"] for loc in first.locations] == [second.id]
    assert first.locations[0]["url"] == f"/b/{second.material}.html#rule-d"
    assert [loc["id"] for loc in second.locations] == [first.id]
