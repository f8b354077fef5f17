"""Heuristic learns: taken from the box itself, TeX written as text, template lines shown but not indexed."""

import re
from pathlib import Path

import pytest

from knowledge_build import extract, load_config
from knowledge_build.chunking.chunks import content_hash
from knowledge_build.model import template_learns
from knowledge_build.pipeline import lexical_text

SITE = Path(__file__).parent.parent / "site"
TEX_MARKUP = re.compile(r"\\\(|\\\[|\\frac|\\sqrt|\^\{|_\{")


def _site(tmp_path, body: str, learns_yml: str = "") -> dict:
    (tmp_path / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (tmp_path / "p.html").write_text(f"---\ntitle: テスト教材\n---\n{body}", encoding="utf-8")
    if learns_yml:
        (tmp_path / "_data").mkdir()
        (tmp_path / "_data" / "learns.yml").write_text(learns_yml, encoding="utf-8")
    return {c.anchor: c for c in extract(load_config(site=tmp_path, env={})).chunks}


def test_box_list_items_and_bold_terms_become_its_learns(tmp_path):
    chunks = _site(tmp_path, '<div class="rule-box" id="rule-bunpai"><strong>分配法則</strong>'
                             "<p>かっこの外の数を<strong>中の各項</strong>に掛ける。</p>"
                             "<ul><li>a(b + c) = ab + ac を使う</li><li>符号ごと掛ける</li></ul></div>")
    chunk = chunks["rule-bunpai"]
    assert chunk.learns_source == "heuristic"
    assert chunk.learns == ("a(b + c) = ab + ac を使う", "符号ごと掛ける", "中の各項")


def test_no_learns_line_carries_tex_markup(tmp_path):
    chunks = _site(tmp_path, '<div class="rule-box" id="rule-kai"><strong>解の公式</strong><ul>'
                             r"<li>\(x = \frac{-b \pm \sqrt{b^2 - 4ac}}{2a}\)</li>"
                             r"<li>判別式 \(D = b^{2} - 4ac\) で解の個数がわかる</li>"
                             r"<li>$x^{2}$ のように TeX が読めない行</li></ul></div>")
    learns = chunks["rule-kai"].learns
    assert learns == ("解の公式：x = (-b ± √(b² - 4ac))/(2a)", "判別式 D = b² - 4ac で解の個数がわかる")
    sample = extract(load_config(site=SITE, env={})).chunks
    assert not [line for c in sample for line in c.learns if TEX_MARKUP.search(line)]


def test_example_learns_are_its_steps_written_readably(tmp_path):
    chunks = _site(tmp_path, '<div class="example-box" id="ex-heihou"><strong>例1 平方根を求める</strong>'
                             r"<ol><li>\(\sqrt{144}\) を素因数分解する</li><li>\(b = \sqrt{144} = 12\)</li></ol>"
                             "</div>")
    assert chunks["ex-heihou"].learns == ("√144 を素因数分解する", "b = √144 = 12")


def test_template_line_is_shown_but_not_in_the_embedded_text(tmp_path):
    chunks = _site(tmp_path, '<div class="rule-box" id="rule-naikaku"><strong>三角形の内角の和</strong>'
                             "<p>三角形の3つの角を足すと180°になる。</p></div>")
    chunk = chunks["rule-naikaku"]
    assert chunk.learns == template_learns("rule", "三角形の内角の和")
    assert chunk.learns == ("「三角形の内角の和」の内容を理解する", "「三角形の内角の和」を使って問題を解く")
    assert chunk.embedded_learns == ()
    for line in chunk.learns:
        assert line not in chunk.embed_text
        assert line in lexical_text(chunk)  # BM25 keeps them: measured, docs/retrieval.md (issue 12, item 5)
    assert chunk.embed_text == "テスト教材: 三角形の内角の和\n" + chunk.content
    assert chunk.content_hash == content_hash(chunk.embed_text)


def test_a_bold_word_many_boxes_share_is_a_label_not_a_learns_line(tmp_path):
    box = ('<div class="method-box" id="method-{0}"><strong>{1}</strong><p><strong>解き方</strong>：'
           "<strong>{2}</strong>を使う。</p></div>")
    chunks = _site(tmp_path, box.format("a", "移項", "符号の反転") + box.format("b", "代入", "代入法")
                   + box.format("c", "消去", "加減法"))
    assert [chunks[f"method-{x}"].learns for x in "abc"] == [("符号の反転",), ("代入法",), ("加減法",)]


@pytest.mark.parametrize("where", ["yaml", "attribute"])
def test_author_learns_are_kept_and_indexed_even_when_they_read_like_a_template(tmp_path, where):
    line = "「移項」の内容を理解する"
    attribute = f' data-learns="{line}|符号を変える"' if where == "attribute" else ""
    chunks = _site(tmp_path, f'<div class="rule-box" id="rule-ikou"{attribute}><strong>移項</strong>'
                             "<ul><li>左辺から右辺へ移す</li></ul></div>",
                   learns_yml=f"p:\n  rule-ikou:\n    - {line}\n    - 符号を変える\n" if where == "yaml" else "")
    chunk = chunks["rule-ikou"]
    assert (chunk.learns_source, chunk.learns) == (where, (line, "符号を変える"))
    assert line in chunk.embed_text and line in lexical_text(chunk)
