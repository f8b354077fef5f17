"""Tables read as tables: TeX in cells rendered by the same rules as box titles, `|` inside maths
never splitting a row, and the caption or introducing sentence heading every row chunk.

The TeX inputs of GOLDEN are cells of the reference corpus's own tables (a few, where the tables
have no example of a construct, are written here and say so); the expected texts are the
mathematically correct readings, written by hand."""

import lxml.html
import pytest

from knowledge_build import extract, load_config
from knowledge_build.html.box_text import display_title
from knowledge_build.html.content_type import detect_content_type, text_tables
from knowledge_build.html.sections import page_parts
from knowledge_build.html.tables import html_table
from knowledge_build.kinds import KNOWLEDGE_ID
from knowledge_build.model import retrieval_content

MACRON, OVERLINE, HAT, ARROW, DOT = "\u0304", "\u0305", "\u0302", "\u20d7", "\u0307"

GOLDEN = [
    # \left\{ … \right\}^2: the braces stay and the square covers the whole group (Σk³, not n(n+1)/4).
    (r"\(\left\{\dfrac{n(n+1)}{2}\right\}^2\)", "{n(n+1)/2}²"),
    (r"\(\displaystyle\sum_{k=1}^{n}k^3 = \left\{\frac{n(n+1)}{2}\right\}^2\)", "Σₖ₌₁ⁿk³ = {n(n+1)/2}²"),
    # A fraction next to another factor is put in parentheses.
    (r"\(\frac{1}{2\sqrt{x}} = \frac{1}{2}x^{-1/2}\)", "1/(2√x) = (1/2)x^(-1/2)"),
    (r"\(A = \frac{1}{2}(a+b)h\)", "A = (1/2)(a+b)h"),
    (r"\(V = \frac{1}{3}\pi r^2 h\)", "V = (1/3)π r² h"),
    (r"\(=\frac{1}{2}\sin 2\theta\)", "=(1/2)sin 2θ"),
    # … and not when an operator stands beside it.
    (r"\(\frac{1}{2} \times |y_1 - y_2| \times |x|\)", "1/2 × |y₁ - y₂| × |x|"),
    # Numerators: parentheses only for an operator at the top level; denominators unless one atom.
    (r"\(\displaystyle\sum_{k=1}^{n}r^k = \frac{r(r^n-1)}{r-1}\)", "Σₖ₌₁ⁿr^k = r(rⁿ-1)/(r-1)"),
    (r"\(\dfrac{x^{n+1}}{n+1} + C\)", "xⁿ⁺¹/(n+1) + C"),
    (r"\(-\frac{(\beta-\alpha)^3}{6}\)", "-(β-α)³/6"),
    (r"\(\dfrac{1}{\sqrt{2}} = \dfrac{\sqrt{2}}{2}\)", "1/√2 = √2/2"),
    (r"\(\frac{\text{合計}}{\text{個数}}\)", "合計/個数"),
    (r"\(\sqrt{3^2 + (4+2)^2}\)", "√(3² + (4+2)²)"),
    # Accents are combining marks on each character of their argument.
    (r"\(\bar{X}\)", "X" + MACRON),
    (r"\(\overline{p} \Rightarrow \overline{q}\)", f"p{OVERLINE} ⇒ q{OVERLINE}"),
    (r"\(\hat{p}\)", "p" + HAT),  # written here: the corpus has no \hat
    (r"\(\vec{a} + \vec{b}\)", f"a{ARROW} + b{ARROW}"),  # written here: the corpus has no \vec
    (r"\(\dot{x}\)", "x" + DOT),  # written here: the corpus has no \dot
    # \left and \right keep their delimiter; \right. is none.
    (r"\(\left|\frac{a}{b}\right| = \frac{|a|}{|b|}\)", "|a/b| = |a|/|b|"),  # from a box: no table has \left|
    (r"\(\left[\frac{x^3}{3} - 4x\right]_{-2}^{2}\)", "[x³/3 - 4x]₋₂²"),  # from a box
    (r"\(\left.\frac{dy}{dx}\right|_{x=1}\)", "dy/(dx)|ₓ₌₁"),  # written here: the corpus has no \right.
    # Literal braces \{ \} stay; \text and \mathrm keep their words.
    (r"\(V(X) = E(X^2) - \{E(X)\}^2\)", "V(X) = E(X²) - {E(X)}²"),  # from a box
    (r"\(\pi \times 12.5^2 \approx 491 \text{ cm}^2\)", "π × 12.5² ≈ 491 cm²"),
    (r"\(\mathrm{d}x\)", "dx"),  # written here
]


def cell_text(tex: str) -> str:
    html = f"<table><tr><th>式</th></tr><tr><td>{tex}</td></tr></table>"
    return html_table(lxml.html.fragment_fromstring(html)).rows[0][0]


@pytest.mark.parametrize("tex, text", GOLDEN)
def test_tex_in_a_table_cell_reads_as_its_golden_text(tex, text):
    assert cell_text(tex) == text


@pytest.mark.parametrize("tex, text", GOLDEN)
def test_a_box_title_reads_tex_by_the_same_rules_as_a_table_cell(tex, text):
    assert display_title(f"{tex} の公式")[1] == f"{text} の公式"


def test_a_signed_numerator_is_put_in_parentheses_so_two_minus_signs_never_meet():
    assert cell_text(r"\(x = -\frac{-4}{2}\)") == "x = -(-4)/2"


@pytest.mark.parametrize("tex", [
    "\\(" + "{" * 100_000 + "x" + "}" * 100_000 + "\\)",
    "\\(" + "\\frac" * 20_000 + "\\)",
    "\\(" + "\\bar" * 20_000 + "x\\)",
    "\\(" + "\\sqrt[" * 20_000 + "\\)",
])
def test_deeply_nested_tex_is_read_without_recursion_errors_or_blow_up(tex):
    assert len(cell_text(tex)) <= len(tex)


# --- `|` inside maths is never a column separator ------------------------------------------------

CHECKLIST = ("1/6公式 \\(S=\\frac{|a|}{6}(\\beta-\\alpha)^3\\) を使える\n"
             "1/12公式 \\(S=\\frac{|a|}{12}(\\beta-\\alpha)^3\\) を使える")


def parts_of(html, **options):
    root = lxml.html.document_fromstring(html, parser=lxml.html.HTMLParser(recover=True, remove_comments=True))
    anchored = {e for e in root.iter() if isinstance(e.tag, str) and KNOWLEDGE_ID.match(e.get("id") or "")}
    return page_parts(root, anchored=anchored, **options)


def test_a_checklist_whose_maths_holds_bars_stays_prose():
    markdown = "\n".join(f"- {line}" for line in CHECKLIST.splitlines())
    assert detect_content_type(markdown) == "prose" and text_tables(markdown) == []
    for opening, closing in (("$", "$"), ("$$", "$$"), ("\\[", "\\]")):
        other = f"- {opening}S=\\frac{{|a|}}{{6}}{closing} を使える\n- {opening}S=\\frac{{|a|}}{{12}}{closing} を使える"
        assert detect_content_type(other) == "prose" and text_tables(other) == [], opening
    lines = "".join(f"<div>{line}</div>" for line in CHECKLIST.splitlines())
    parts = parts_of(f"<h2>チェック</h2>{lines}")
    assert [(p.kind, p.text) for p in parts] == [("section", CHECKLIST)]


def test_a_markdown_table_with_bars_in_its_maths_is_a_table_of_whole_formulas():
    markdown = ("| 公式 | 面積 |\n|---|---|\n| 1/6公式 | \\(S=\\frac{|a|}{6}(\\beta-\\alpha)^3\\) |\n"
                "| 1/12公式 | $S=\\frac{|a|}{12}(\\beta-\\alpha)^3$ |")
    assert [t.rows for t in text_tables(markdown)] == [[
        ["公式", "面積"], ["1/6公式", "\\(S=\\frac{|a|}{6}(\\beta-\\alpha)^3\\)"],
        ["1/12公式", "$S=\\frac{|a|}{12}(\\beta-\\alpha)^3$"]]]
    tables = [p for p in parts_of(f"<h2>面積</h2><pre>{markdown}</pre>") if p.kind == "table"]
    assert [t.text for t in tables] == ["公式 | 面積\n1/6公式 | S=(|a|/6)(β-α)³\n1/12公式 | $S=\\frac{|a|}{12}(\\beta-\\alpha)^3$"]


def test_prices_between_bars_still_split_a_row():
    assert text_tables("| 品 | 値段 |\n|---|---|\n| 茶 | $5 |\n| 水 | $3 |")[0].rows[1] == ["茶", "$5"]


# --- the caption or the introducing sentence heads every row chunk ----------------------------------

INTRO = "次の表は、主な関数の導関数をまとめたものです。"
ROWS = [(f"関数{i:02d}", f"導関数{i:02d}") for i in range(1, 15)]  # 14 rows: chunked by rows


def table_html(rows, caption=""):
    head = f"<caption>{caption}</caption>" if caption else ""
    body = "".join(f"<tr><td>{a}</td><td>{b}</td></tr>" for a, b in rows)
    return f"<table>{head}<thead><tr><th>関数</th><th>導関数</th></tr></thead><tbody>{body}</tbody></table>"


def table_parts(html):
    return [p for p in parts_of(html) if p.kind == "table"]


def test_the_sentence_before_a_table_heads_each_of_its_row_chunks_and_is_no_row():
    parts = table_parts(f"<h2>導関数</h2><p>{INTRO}</p>{table_html(ROWS)}")
    assert len(parts) == 14
    for number, part in enumerate(parts, 1):
        assert part.text.splitlines()[:2] == [INTRO, "関数 | 導関数"] and part.rows == (number, number)
        assert part.core.splitlines() == [INTRO, "関数 | 導関数", f"関数{number:02d} | 導関数{number:02d}"]


def test_the_introducing_sentence_is_searchable_text_not_a_context_row(tmp_path):
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (root / "p.html").write_text(f"---\ntitle: 微分\n---\n<h2>導関数</h2><p>{INTRO}</p>{table_html(ROWS)}\n",
                                 encoding="utf-8")
    chunks = [c for c in extract(load_config(site=root, env={"KB_SECTIONS": "all"})).chunks if c.type == "table"]
    assert len(chunks) == 14
    for chunk in chunks:
        assert chunk.content.splitlines()[0] == INTRO and INTRO in retrieval_content(chunk.content)


def test_a_caption_heads_the_row_chunks_instead_of_the_sentence_before():
    parts = table_parts(f"<h2>導関数</h2><p>{INTRO}</p>{table_html(ROWS, caption='導関数の表')}")
    assert {p.text.splitlines()[0] for p in parts} == {"導関数の表"}


def test_tex_in_the_introducing_sentence_reads_as_in_the_cells():
    parts = table_parts(f"<h2>標本平均</h2><p>\\(\\bar{{X}}\\) の分布：</p>{table_html(ROWS[:3])}")
    assert parts[0].text.splitlines()[0] == f"X{MACRON} の分布："


@pytest.mark.parametrize("before", [
    f"<p>{'長い説明の文です。' * 14}</p>",  # 126 characters: a paragraph of its own, not an introduction
    '<p>前の段落。</p><div class="rule-box" id="rule-derivative">公式の箱</div>',  # a box stands between
    "",  # the table opens its section
])
def test_a_table_takes_no_introduction_from_a_long_paragraph_a_box_or_its_heading(before):
    parts = table_parts(f"<h2>導関数</h2>{before}{table_html(ROWS[:3])}")
    assert parts[0].text.splitlines()[0] == "関数 | 導関数"


def test_a_text_table_takes_the_line_before_it_as_its_introduction():
    markdown = "| 関数 | 導関数 |\n|---|---|\n| x² | 2x |\n| x³ | 3x² |"
    parts = table_parts(f"<h2>導関数</h2><pre>{INTRO}\n{markdown}</pre>")
    assert [p.text for p in parts] == [f"{INTRO}\n関数 | 導関数\nx² | 2x\nx³ | 3x²"]
