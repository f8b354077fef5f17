"""Tables read as tables: TeX in cells rendered by the same rules as box titles, `|` inside maths
never splitting a row, and the caption or introducing sentence heading every row chunk.

The TeX inputs of GOLDEN are cells of the reference corpus's own tables (a few, where the tables
have no example of a construct, are written here and say so); the expected texts are the
mathematically correct readings, written by hand."""

import lxml.html
import pytest

from knowledge_build.html.box_text import display_title
from knowledge_build.html.tables import html_table

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
