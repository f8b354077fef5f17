"""A query 「AのB」: the box whose page and title cover A and B ranks above one that only repeats A
(issue 12, item 2), and thesaurus wordings inside longer ones add nothing twice (item 3). No model."""

import pytest

from knowledge_build import KnowledgeIndex, SearchSettings, build, load_config
from knowledge_build.text.ja import analyze, analyze_box, analyze_query, box_text
from knowledge_build.text.thesaurus import thesaurus_terms

from .conftest import FakeEmbedder

# 一次関数とは repeats the page's topic and mentions 傾き once; 傾きの意味 never says 一次関数.
LINEAR = """---
title: 一次関数の基本
---
<div class="definition-box" id="def-linear">
<strong>一次関数とは</strong>
<p>一次関数は y = ax + b の形の関数。一次関数のグラフは直線で、a は傾き、b は切片。一次関数の式は
二つの値で決まる。一次関数の例をいくつか見る。一次関数と比例の違いも確かめる。</p></div>
<div class="rule-box" id="rule-slope"><strong>傾きの意味</strong>
<p>傾きは x が 1 増えたときの y の増加量。変化の割合と等しい。</p></div>
"""
QUADRATIC = """---
title: 二次方程式の解き方
---
<div class="rule-box" id="rule-formula"><strong>解の公式</strong>
<p>ax² + bx + c = 0 の解は x = (-b ± √(b² - 4ac)) / 2a。どんな二次方程式にも使える。</p></div>
"""
INEQUALITY = """---
title: 二次方程式と二次不等式
---
<div class="rule-box" id="rule-ineq"><strong>二次不等式の解き方</strong>
<p>左辺を0とおいて、グラフの上下で範囲を決める。</p></div>
"""


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    site = tmp_path_factory.mktemp("titles") / "site"
    site.mkdir()
    (site / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    for name, page in (("一次関数の基本", LINEAR), ("二次方程式の解き方", QUADRATIC), ("二次方程式と二次不等式", INEQUALITY)):
        (site / f"{name}.html").write_text(page, encoding="utf-8")
    return build(load_config(site=site, cache_dir=site.parent / "cache", env={}), embedder=FakeEmbedder()).output


def _top(index_dir, query, **settings):
    index = KnowledgeIndex.open(index_dir, embedder=FakeEmbedder(), settings=SearchSettings(**settings))
    return [r.id for r in index.search(query, k=3, mode="lexical")]


def test_a_box_is_analysed_under_its_page_title_and_its_title_fields_count_each_word_once():
    fields = analyze_box(box_text("一次関数の基本", "傾きの意味", "傾きは増加量。"))
    assert {"1次", "関数", "傾き"} <= set(fields["lemma"])
    assert fields["page"] == ["1", "次", "1次", "関数", "基本"]
    assert fields["heading"] == ["1", "次", "1次", "関数", "基本", "傾き", "意味"]
    twice = analyze_box(box_text("一次関数", "一次関数とは", ""))
    assert twice["heading"] == ["1", "次", "1次", "関数"]


def test_a_line_break_inside_a_title_does_not_shift_the_title_fields():
    fields = analyze_box(box_text("一次関数\nの基本", "傾きの\n意味", "本文"))
    assert fields["page"] == ["1", "次", "1次", "関数", "基本"]
    assert "本文" not in fields["heading"]


def test_a_query_matches_the_title_fields_with_its_lemmas_each_once():
    fields = analyze_query("一次関数のグラフと一次関数の式")
    assert fields["page"] == fields["heading"] == ["1", "次", "1次", "関数", "グラフ", "式"]
    assert fields["lemma"].count("関数") == 2
    assert analyze("一次関数").keys() == {"lemma", "reading", "kana2"}


def test_the_aspect_of_a_topic_finds_its_box_over_the_box_that_repeats_the_topic(index_dir):
    # (Before heuristic learns came from the box itself, the title fields alone decided this query;
    # the box's own learns now point the same way, so there is no contrast left to assert here.)
    assert _top(index_dir, "一次関数の傾き")[0] == "一次関数の基本#rule-slope"


def test_the_page_field_prefers_the_page_named_like_the_query_to_a_box_titled_with_a_shared_suffix(index_dir):
    # On its own the text favours 二次不等式の解き方 (二次 three times); the page field is what the
    # fused ranking of the corpus needs to put the 二次方程式の解き方 page first.
    assert _top(index_dir, "二次方程式の解き方", field_weights={"page": 1.0})[0] == "二次方程式の解き方#rule-formula"
    assert _top(index_dir, "二次方程式の解き方", field_weights={"lemma": 1.0})[0] == "二次方程式と二次不等式#rule-ineq"


def test_a_thesaurus_wording_inside_a_longer_matched_one_adds_its_terms_once():
    assert thesaurus_terms("ピタゴラスの定理") == ["三平方の定理"]
    assert thesaurus_terms("ルートの中のルート") == ["平方根", "根号"]
    assert thesaurus_terms("ピタゴラス数") == ["三平方の定理"]
