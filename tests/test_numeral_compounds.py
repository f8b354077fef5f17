"""Number-kanji compounds (一次, 二次, 三平方, 二等辺) stay distinguishable to the lexical channel."""

import pytest

from knowledge_build import KnowledgeIndex, build, load_config
from knowledge_build.text import ja as text_ja
from knowledge_build.text.ja import analyze

from .conftest import FakeEmbedder


@pytest.mark.parametrize("text, compound, absent", [
    ("二次方程式の解き方", "2次", "1次"), ("一次関数の傾き", "1次", "2次"), ("2次関数のグラフ", "2次", "1次"),
    ("三平方の定理", "3平方", "2平方"), ("二等辺三角形の底角", "2等辺", "3等辺"),
])
def test_a_numeral_and_the_word_it_counts_make_one_more_token(text, compound, absent):
    lemmas = analyze(text)["lemma"]
    assert compound in lemmas and absent not in lemmas


def test_ascii_words_after_a_numeral_make_no_compound():
    assert "2x" not in analyze("2 x の係数")["lemma"]


def _lead(tmp_path, name) -> float:
    """How far the quadratic box's lexical score is ahead of the linear one's for a quadratic query."""
    site = tmp_path / name
    site.mkdir()
    (site / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    fillers = "".join(f'<div class="tip-box" id="tip-f{i}"><strong>注意{i}</strong><p>次の2つの式を比べる。</p></div>\n'
                      for i in range(6))  # 2 and 次 are everywhere; 2次 is not
    (site / "方程式.html").write_text(
        "---\ntitle: 方程式\n---\n"
        '<div class="method-box" id="method-linear"><strong>一次方程式の解き方</strong><p>2x + 3 = 7 なら移項する。</p></div>\n'
        '<div class="method-box" id="method-quadratic"><strong>二次方程式の解き方</strong><p>因数分解か解の公式を使う。</p>'
        "</div>\n" + fillers, encoding="utf-8")
    output = build(load_config(site=site, cache_dir=tmp_path / f"cache-{name}", env={}), embedder=FakeEmbedder()).output
    index = KnowledgeIndex.open(output, embedder=FakeEmbedder())
    scores = index.channels.lexical(index.analyser.fields("二次方程式の解き方"), None)
    return scores[index.row_of("方程式#method-quadratic")] - scores[index.row_of("方程式#method-linear")]


def test_the_compound_widens_the_quadratic_box_lead_for_a_quadratic_query(tmp_path, monkeypatch):
    with_compounds = _lead(tmp_path, "with")
    monkeypatch.setattr(text_ja, "_COMPOUND_POS", set())
    without = _lead(tmp_path, "without")
    assert with_compounds > without + 0.5


def test_a_superscript_power_is_not_read_as_a_longer_number():
    # NFKC alone reads -3² as -32; the pages write the same power in TeX (-3^2).
    assert text_ja.nfkc("(-3)²と-3²") == "(-3)^2と-3^2"
    assert text_ja.nfkc("a₁+aₙ, x²+y²=r²") == "a_1+a_n, x^2+y^2=r^2"
    lemmas = analyze("-3²は")["lemma"]
    assert "32" not in lemmas and "^" in lemmas and "2" in lemmas
    assert analyze("x²")["lemma"] == analyze(r"\(x^2\)")["lemma"][1:-1]


def test_a_run_of_kanji_digits_longer_than_pythons_int_limit_is_read_as_its_digits():
    """Python refuses int() of more than 4,300 digits: a page holding such a run must still build, publish
    (store/lexical.fold) and be searched, as the database and the box read it."""
    from knowledge_build.store import lexical

    run = "〇" + "一二三四五六七八九〇" * 500
    assert text_ja.numerals(f"あ{run}い") == "あ" + "1234567890" * 500 + "い"
    assert lexical.fold(f"ア{run}") == "あ" + "1234567890" * 500
    assert text_ja.numerals("〇〇一と〇と〇十") == "1と0と10"
