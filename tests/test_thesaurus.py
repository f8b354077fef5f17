"""School-math synonyms at query time: student wording finds the textbook term's box."""

import json

import pytest
from click.testing import CliRunner

from knowledge_build import ConfigError, KnowledgeIndex, SearchSettings, build, load_config
from knowledge_build.cli import main
from knowledge_build.text.thesaurus import load_thesaurus, thesaurus_terms

from .conftest import FakeEmbedder

PAGE = """---
title: 直角三角形
---
<div class="rule-box" id="rule-sanheiho"><strong>三平方の定理</strong><p>直角三角形の斜辺の2乗は他の2辺の2乗の和に等しい。</p></div>
<div class="tip-box" id="tip-triples"><strong>ピタゴラス数を覚える</strong><p>3, 4, 5 や 5, 12, 13 のような整数の組。</p></div>
<div class="rule-box" id="rule-speed"><strong>速さと道のり</strong><p>道のりは速さと時間の積で求める。</p></div>
"""


@pytest.fixture
def index_dir(tmp_path):
    site = tmp_path / "s"
    site.mkdir()
    (site / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (site / "直角三角形.html").write_text(PAGE, encoding="utf-8")
    return build(load_config(site=site, env={}), embedder=FakeEmbedder()).output


def _top(index_dir, query, **settings):
    index = KnowledgeIndex.open(index_dir, embedder=FakeEmbedder(), settings=SearchSettings(**settings))
    return [r.anchor for r in index.search(query, k=3, mode="lexical")]


def test_student_wording_brings_in_the_textbook_terms():
    assert "三平方の定理" in thesaurus_terms("ピタゴラスの定理ってなに")
    assert {"速さ", "時間", "道のり"} <= set(thesaurus_terms("みはじの使い方"))
    assert thesaurus_terms("二次方程式の解き方") == []


def test_pythagoras_finds_the_sanheiho_rule_first_only_with_the_thesaurus(index_dir):
    assert _top(index_dir, "ピタゴラスの定理")[0] == "rule-sanheiho"
    assert _top(index_dir, "ピタゴラスの定理", expand_thesaurus=False)[0] == "tip-triples"


def test_a_site_thesaurus_extends_the_shipped_one_through_the_setting(index_dir, tmp_path, monkeypatch, fake_open):
    extra = tmp_path / "mine.yml"
    extra.write_text("きょり: [道のり]\n", encoding="utf-8")
    assert thesaurus_terms("きょりの求め方", extra) == ["道のり"]
    monkeypatch.setenv("KB_THESAURUS", str(extra))
    result = CliRunner().invoke(main, ["search", "きょりの求め方", "--index", str(index_dir), "--mode", "lexical",
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["anchor"] == "rule-speed"


@pytest.mark.parametrize("text", ["- a\n- b\n", "ルート: 5\n", "ルート: []\n"])
def test_a_thesaurus_of_the_wrong_shape_is_one_clear_error(tmp_path, text):
    bad = tmp_path / "bad.yml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.yml: .*(maps a wording to a list of terms|must map to a list)"):
        load_thesaurus(bad)


class RecordingEmbedder(FakeEmbedder):
    def __init__(self):
        self.queries = []

    def embed_query(self, text):
        self.queries.append(text)
        return super().embed_query(text)


def test_the_dense_query_says_the_textbook_term_and_the_lexical_query_keeps_the_students_word(index_dir):
    from knowledge_build.text.thesaurus import textbook_wording

    assert textbook_wording("ピタゴラスの定理で斜辺を求めたい") == "三平方の定理で斜辺を求めたい"
    assert textbook_wording("ルートの中にルート") == "平方根の中に平方根"
    assert textbook_wording("二次方程式の解き方？") == "二次方程式の解き方？"  # no wording: as written
    embedder = RecordingEmbedder()
    index = KnowledgeIndex.open(index_dir, embedder=embedder)
    index.search("ピタゴラスの定理ってなに", k=3)
    assert embedder.queries == ["三平方の定理ってなに"]
    # The student's own word still reaches a page that uses it.
    assert "tip-triples" in [r.anchor for r in index.search("ピタゴラス数", k=2, mode="lexical")]
    off = KnowledgeIndex.open(index_dir, embedder=embedder, settings=SearchSettings(expand_thesaurus=False))
    off.search("ピタゴラスの定理ってなに", k=3)
    assert embedder.queries[-1] == "ピタゴラスの定理ってなに"
