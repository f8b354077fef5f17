"""Box titles as a reader sees them: no number label, TeX rendered as plain text."""

import pytest

from knowledge_build import extract, load_config
from knowledge_build.html.box_text import display_title
from knowledge_build.text.ja import split_label, strip_label
from knowledge_build.text.tex import readable, without_math


@pytest.mark.parametrize("tex, text", [
    ("\\(b\\) が偶数のときの解の公式", "b が偶数のときの解の公式"),
    ("\\(\\frac{a}{b}\\)", "a/b"),
    ("\\(\\dfrac{a+b}{2c}\\)", "(a+b)/(2c)"),
    ("\\(\\sqrt{x}\\) と \\(\\sqrt{x+1}\\)", "√x と √(x+1)"),
    ("\\(\\frac{\\sqrt{2}}{2}\\)", "√2/2"),
    ("\\(\\sqrt[3]{8}\\)", "³√8"),
    ("\\(x^2 + y^{10}\\)", "x² + y¹⁰"),
    ("\\(a_{n+1} = pa_n + q\\)", "aₙ₊₁ = paₙ + q"),
    ("\\(2 \\times 3 \\div 4 \\leq 5 \\neq \\pi\\)", "2 × 3 ÷ 4 ≤ 5 ≠ π"),
    ("\\(90^\\circ - \\theta\\)", "90° - θ"),
    ("\\(\\left(\\frac{1}{2}\\right)^n\\)", "(1/2)ⁿ"),
    ("\\(\\text{km}^2\\) と \\[ x^{ab} \\]", "km² と x^(ab)"),
    ("\\(\\sin\\theta\\)", "sinθ"),
    ("値段は $5 と $6", "値段は $5 と $6"),  # a lone $ is a price, not math
    ("閉じない \\(x^2", "閉じない \\(x^2"),
])
def test_tex_in_a_title_is_rendered_as_readable_text(tex, text):
    assert readable(tex) == text


def test_without_math_leaves_no_tex_behind():
    assert without_math("弧の長さ \\(A = \\frac{1}{2}\\ell r\\) が速い").split() == ["弧の長さ", "が速い"]


@pytest.mark.parametrize("heading, label, title", [
    ("ルール3：3つ以上の因数の部分分数分解", "ルール3", "3つ以上の因数の部分分数分解"),
    ("コツ２：全角の番号", "コツ2", "全角の番号"),
    ("練習①", "練習1", "練習①"),  # only a label: it stays the title
    ("練習2：解法を選んで解く", "練習2", "解法を選んで解く"),
    ("コツ：\\(\\pi\\) は最後まで残す", "コツ", "π は最後まで残す"),
    ("例えば二次方程式", "", "例えば二次方程式"),
    ("問題の解き方", "", "問題の解き方"),
])
def test_a_title_drops_its_number_label_and_keeps_it_apart(heading, label, title):
    assert display_title(heading) == (label, title)


def test_strip_label_still_normalises_for_ids_and_concept_keys():
    assert split_label("コツ３：（注意）") == ("コツ3", "（注意）")
    assert strip_label("コツ３：（注意）") == "(注意)"


def test_a_chunk_title_is_clean_its_label_is_kept_and_its_excerpt_skips_the_heading(tmp_path):
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (root / "p.html").write_text(
        "---\ntitle: 解の公式\n---\n"
        '<div class="tip-box" id="tip-even-b"><strong>コツ2：\\(b\\) が偶数のとき</strong>'
        "\\(b = 2b'\\) とおくと計算が楽になる。</div>\n"
        '<div class="rule-box" id="ex-quadratic-formula-1"><strong>練習1</strong>次の方程式を解きなさい。</div>\n',
        encoding="utf-8")
    chunks = {c.anchor: c for c in extract(load_config(site=root, env={})).chunks}
    tip, practice = chunks["tip-even-b"], chunks["ex-quadratic-formula-1"]
    assert (tip.title, tip.label) == ("b が偶数のとき", "コツ2")
    assert tip.excerpt.startswith("\\(b = 2b'\\)") and "\\(b\\)" not in tip.embed_text.splitlines()[0]
    assert (practice.title, practice.label, practice.type) == ("練習1", "練習1", "example")
    assert tip.to_dict()["label"] == "コツ2"


def test_a_hostile_heading_of_unclosed_tex_and_spaces_is_read_in_one_pass(tmp_path):
    # Both inputs took time quadratic in their length before (an unclosed \( scanned to the end
    # of the text from every \( ; two adjacent runs of spaces in the label pattern backtracked).
    unclosed = "\\(" * 100_000
    spaces = "コツ" + " " * 100_000 + "x"
    assert readable(unclosed) == unclosed and split_label(spaces) == ("", spaces)
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (root / "p.html").write_text(f'<div class="tip-box" id="tip-x"><strong>{unclosed}</strong>本文</div>\n'
                                 f'<div class="tip-box"><strong>{spaces}</strong>本文</div>\n', encoding="utf-8")
    (chunk,) = [c for c in extract(load_config(site=root, env={})).chunks if c.type == "tip"]
    assert chunk.title == unclosed and chunk.label == ""
