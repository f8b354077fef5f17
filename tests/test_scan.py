"""Scanning pages: what a knowledge element is, its title, text, type and line."""

from pathlib import Path

from knowledge_build import extract, load_config
from knowledge_build.site.jekyll import open_site
from knowledge_build.site.scan import scan_page


def _page(tmp_path: Path, body: str, front: str = "title: テスト教材\nlevel: 基礎\ncategory: numbers\n"):
    (tmp_path / "_config.yml").write_text("baseurl: /b\n", encoding="utf-8")
    path = tmp_path / "教材.html"
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    site = open_site(tmp_path)
    return scan_page(site, path, ("rule-box", "tip-box", "example-box", "def-box"))


def test_elements_are_found_by_id_prefix_with_type_from_prefix(tmp_path):
    page = _page(tmp_path, """
<div class="rule-box" id="rule-a"><strong>規則</strong><p>本文A</p></div>
<div class="tip-box" id="tip-b"><strong>コツ</strong><p>本文B</p></div>
<div class="def-box" id="def-c"><strong>定義</strong><p>本文C</p></div>
<div class="rule-box" id="method-d"><strong>手順</strong><p>本文D</p></div>
<div class="example-box" id="ex-e"><div class="example-title"><span class="number-badge">例1</span>例題</div><p>本文E</p></div>
<h2 id="section1">節</h2>
""")
    assert [(e.id, e.type) for e in page.elements] == [
        ("rule-a", "rule"), ("tip-b", "tip"), ("def-c", "definition"), ("method-d", "method"), ("ex-e", "example")]
    assert page.elements[4].title == "例題"


def test_title_is_first_strong_without_emoji(tmp_path):
    page = _page(tmp_path, '<div class="rule-box" id="rule-x"><strong>📌 解の公式</strong> <p>説明</p></div>')
    assert page.elements[0].title == "解の公式"


def test_degree_and_triangle_signs_survive_emoji_stripping(tmp_path):
    page = _page(tmp_path, '<div class="rule-box" id="rule-x"><strong>💡 △ABCと30°の角</strong></div>')
    assert page.elements[0].title == "△ABCと30°の角"


def test_text_drops_script_style_svg_and_keeps_tex(tmp_path):
    page = _page(tmp_path, """<div class="rule-box" id="rule-x"><strong>公式</strong>
<p>解は \\( x = \\frac{-b}{2a} \\) です。</p><svg><text>図のラベル</text></svg>
<script>var secret = 1;</script><style>.a{}</style><ul><li>一</li><li>二</li></ul></div>""")
    text = page.elements[0].text
    assert "\\( x = \\frac{-b}{2a} \\)" in text
    assert "図のラベル" not in text and "secret" not in text and ".a{}" not in text
    assert "一 二" in text


def test_source_line_counts_front_matter_lines(tmp_path):
    page = _page(tmp_path, "<p>前</p>\n\n<div class=\"rule-box\" id=\"rule-x\"><strong>T</strong>本文</div>\n")
    # 5 front matter lines, then the box on the third body line.
    assert page.elements[0].line == 8


def test_boxes_without_knowledge_id_are_reported_as_unanchored(tmp_path):
    page = _page(tmp_path, '<div class="tip-box"><strong>💡 近似値</strong>本文</div>'
                           '<div class="rule-box" id="other"><strong>規則</strong>本文</div>')
    assert [(b.box_class, b.title, b.id) for b in page.unanchored] == [
        ("tip-box", "近似値", None), ("rule-box", "規則", "other")]
    assert page.elements == []


def test_nested_knowledge_element_text_is_not_repeated_in_its_parent(tmp_path):
    page = _page(tmp_path, '<div class="rule-box" id="rule-outer"><strong>外</strong>外側の本文'
                           '<div class="example-box" id="ex-inner"><strong>内</strong>内側の本文</div></div>')
    outer, inner = page.elements
    assert "内側の本文" not in outer.text and "内側の本文" in inner.text


def test_sample_site_has_the_promised_elements():
    extraction = extract(load_config(site=Path(__file__).parent.parent / "site", env={}))
    ids = {c.id for c in extraction.chunks}
    assert len(extraction.chunks) >= 60
    for expected in ("二次方程式#rule-quadratic-formula", "因数分解#method-tasukigake",
                     "一次方程式#rule-transposition", "二次方程式#rule-discriminant",
                     "二次関数#rule-discriminant-graph"):
        assert expected in ids
    assert {c.type for c in extraction.chunks} == {"rule", "method", "definition", "example", "tip", "section", "table"}
    assert sum(len(p.unanchored) for p in extraction.pages) >= 3
    assert not [d for d in extraction.diagnostics if d.severity != "info"]
