"""Search logic with the fake embedder: fusion, type priors, filters, empty input."""

import pytest

from knowledge_build import KnowledgeBuildError, KnowledgeIndex, build, load_config
from knowledge_build.ranking.priors import intended_type, type_weights
from knowledge_build.ranking.settings import SearchSettings

from .conftest import FakeEmbedder, assert_rank_order


@pytest.fixture(scope="module")
def index(fake_index_dir):
    return KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())


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


def _with(index, **settings):
    from dataclasses import replace

    index.settings = replace(index.settings, **settings)
    return index


def test_asking_for_examples_lifts_the_example_penalty(index):
    default = [(r.id, r.score) for r in index.search("因数分解の例題", k=10)]
    unweighted = [(r.id, r.score) for r in _with(index, example_weight=1.0).search("因数分解の例題", k=10)]
    assert default == unweighted and any(i.startswith("因数分解#ex-") for i, _ in default)
    plain = [r.id for r in index.search("因数分解", k=10)]
    assert plain != [r.id for r in _with(index, example_weight=0.5).search("因数分解", k=10)]


def test_empty_query_and_filters_that_no_chunk_meets_together_return_nothing(index):
    assert index.search("   ") == []
    assert index.search("二次方程式", material="二次方程式", category="geometry") == []


def test_unknown_mode_is_refused(index):
    with pytest.raises(KnowledgeBuildError, match="unknown search mode 'fuzzy'"):
        index.search("x", mode="fuzzy")


def test_lexical_mode_finds_kanji_box_from_hiragana(index):
    assert "因数分解#method-tasukigake" in [r.id for r in index.search("たすきがけ", mode="lexical", k=5)]


def test_similarity_is_clipped_to_zero_one_and_scores_descend(index):
    results = index.search("平方根", k=10)
    assert len(results) == 10
    assert all(0.0 <= r.similarity <= 1.0 for r in results)
    assert_rank_order(results)


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


def test_rrf_sums_weighted_reciprocal_ranks():
    from knowledge_build.ranking.fusion import rrf

    fused = rrf({"dense": {1: 0.9, 2: 0.8}, "lexical": {2: 7.0, 3: 1.0}}, {"dense": 1.0, "lexical": 2.0}, k=60)
    assert fused == pytest.approx({1: 1 / 61, 2: 1 / 62 + 2 / 61, 3: 2 / 62})


def test_dbsf_normalises_each_channel_by_its_own_spread():
    from knowledge_build.ranking.fusion import dbsf

    fused = dbsf({"dense": {1: 0.90, 2: 0.80}, "lexical": {2: 12.0, 3: 2.0}}, {"dense": 1.0, "lexical": 1.0})
    # Each channel: mean ± 3 sd maps to 0..1, so a channel's best and worst are 1/3 apart around 0.5.
    assert fused[1] == pytest.approx(0.5 + 1 / 6)
    assert fused[3] == pytest.approx(0.5 - 1 / 6)
    assert fused[2] == pytest.approx((0.5 - 1 / 6) + (0.5 + 1 / 6))


def test_fusion_setting_chooses_the_method(index):
    rrf_index = KnowledgeIndex.from_parts(index.path, index.manifest, index.chunks, index.artifacts.dense_index,
                                         {"fields": {}}, FakeEmbedder(), SearchSettings(fusion="rrf"))
    assert rrf_index.search("平方根", k=3, mode="dense")[0].score == pytest.approx(1.0 / 61, abs=1e-6)
