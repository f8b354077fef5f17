"""Links that land, in a real browser: Debian's headless Chromium opens pages served on 127.0.0.1.

- Every link `section_fragment` makes for a long test page (Japanese headings, a repeated heading, a
  ▶ heading that is a prefix of an earlier one, an emoji heading, an id) scrolls its heading into view,
  and for the repeated heading it is the *second* one.
- The coverage report's page table sorts when a header is clicked (README: "a sortable row per page").

Chromium scrolls to a text fragment only when the navigation comes from the browser itself (a typed
URL, a bookmark) or carries a user activation (a click), and never in an iframe: a page's own
`location.href = …` without a click does not scroll, so a page cannot probe another page's text.
`page.goto()` sends CDP `Page.navigate`, which Chromium treats as a browser-initiated navigation, so
each link is opened with goto in a fresh tab (not by script, not by changing the hash of an open page).

Waits are bounded by KB_TEST_TIMEOUT (seconds, default 120); nothing is timed.
"""

import html
import os
import re
from pathlib import Path

import pytest

from knowledge_build.html.fragments import section_fragment

from .served import serving

pytestmark = pytest.mark.browser

TIMEOUT_MS = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000

# The test page: (tag, text, id) blocks; tall empty gaps (no text) between sections keep each
# heading's neighbours out of the viewport, so "in view" means "this one".
GAP = ("gap", "", None)
PAGE = [
    ("h1", "図形の面積", None), ("p", "長方形と三角形の面積を学びます。", None), GAP,
    ("h2", "1. テーマの定義", "section1"), ("p", "面積とは広さのことです。", None), GAP,
    ("h3", "▶ 長方形の面積", None), ("p", "長方形の面積は縦×横で求めます。", None), GAP,
    ("h3", "練習問題", None), ("p", "三角形の面積を求めよ。", None), GAP,
    ("h2", "2. 図形の問題", None), ("p", "いろいろな図形を扱います。", None), GAP,
    ("h3", "練習問題", None), ("p", "長方形の周の長さを求めよ。", None), GAP,
    ("h3", "▶ 長方形", None), ("p", "縦と横を測ります。", None), GAP,
    ("h3", "📎 関連教材", None), ("p", "三角形の面積、台形の面積", None), GAP,
    ("h3", "Q&A - よくある質問, その他", None), ("p", "質問はこちら。", None), GAP,
]
HEADINGS = [i for i, (tag, _, _) in enumerate(PAGE) if tag in ("h2", "h3")]


def _page_html() -> str:
    body = []
    for n, (tag, text, id_) in enumerate(PAGE):
        if tag == "gap":
            body.append('<div class="gap"></div>')
            continue
        id_attr = f' id="{id_}"' if id_ else ""
        body.append(f'<{tag} data-n="{n}"{id_attr}>{html.escape(text)}</{tag}>')
    return ("<!DOCTYPE html><html lang=\"ja\"><head><meta charset=\"utf-8\"><title>面積</title>"
            "<style>.gap { height: 150vh; }</style></head><body>\n" + "\n".join(body) + "\n</body></html>")


def _link(n: int) -> str:
    """The fragment for block n, from the page's visible text before and after it (blocks on lines)."""
    texts = [text for _, text, _ in PAGE]
    _, heading, id_ = PAGE[n]
    return section_fragment(heading, anchor=id_, text_before="\n".join(texts[:n]),
                            text_after="\n".join(texts[n + 1:]))



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real HTTP server on 127.0.0.1 serving a directory; yields (root, base URL)."""
    root = tmp_path_factory.mktemp("www")
    with serving(root) as origin:
        yield root, origin


@pytest.fixture
def tab(browser):
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    page.close()


# Whether block n is in the viewport after a scroll: the browser answers, polled until true or timeout.
IN_VIEW = """n => {
  const el = document.querySelector(`[data-n="${n}"]`);
  const top = Math.round(el.getBoundingClientRect().top);  // an id scroll leaves it at -0.5 or so
  return window.scrollY > 0 && top >= 0 && top < window.innerHeight;
}"""
WHERE = """() => ({scrollY: window.scrollY, inView: [...document.querySelectorAll("[data-n]")]
  .filter(el => { const t = el.getBoundingClientRect().top; return t >= 0 && t < innerHeight; })
  .map(el => el.textContent)})"""


def _open_and_expect_in_view(tab, url: str, n: int, tmp_path: Path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    tab.goto(url, wait_until="load")
    try:
        tab.wait_for_function(IN_VIEW, arg=n, timeout=TIMEOUT_MS)
    except PlaywrightTimeout as error:  # report where the page is instead
        shot = tmp_path / f"block{n}.png"
        tab.screenshot(path=str(shot))
        pytest.fail(f"{url} did not bring {PAGE[n][1]!r} into view: {tab.evaluate(WHERE)} "
                    f"(screenshot {shot}; {type(error).__name__})")


@pytest.mark.parametrize("n", HEADINGS, ids=[PAGE[n][1] for n in HEADINGS])
def test_section_link_scrolls_its_heading_into_view(browser, server, tab, tmp_path, n):
    root, base = server
    (root / "面積.html").write_text(_page_html(), encoding="utf-8")
    url = f"{base}/%E9%9D%A2%E7%A9%8D.html#{_link(n)}"
    _open_and_expect_in_view(tab, url, n, tmp_path)


def test_link_to_a_repeated_heading_lands_on_the_second_one(browser, server, tab, tmp_path):
    root, base = server
    (root / "面積.html").write_text(_page_html(), encoding="utf-8")
    first, second = [n for n in HEADINGS if PAGE[n][1] == "練習問題"]
    fragment = _link(second)
    assert fragment != _link(first)  # context was added; the first needs none
    _open_and_expect_in_view(tab, f"{base}/%E9%9D%A2%E7%A9%8D.html#{fragment}", second, tmp_path)
    assert not tab.evaluate(IN_VIEW, first)


def test_plain_link_to_a_repeated_heading_would_land_on_the_first_one(browser, server, tab, tmp_path):
    """The hazard the context fixes, shown in the same browser (so the test above can fail)."""
    root, base = server
    (root / "面積.html").write_text(_page_html(), encoding="utf-8")
    first, _ = [n for n in HEADINGS if PAGE[n][1] == "練習問題"]
    plain = _link(first)
    _open_and_expect_in_view(tab, f"{base}/%E9%9D%A2%E7%A9%8D.html#{plain}", first, tmp_path)


def test_coverage_report_rows_sort_when_a_header_is_clicked(browser, server, tab, site_dir, fake_embedder):
    from click.testing import CliRunner

    from knowledge_build import build, load_config
    from knowledge_build.cli import main

    root, base = server
    build(load_config(site=site_dir), embedder=fake_embedder)
    result = CliRunner().invoke(main, ["report", "--site", str(site_dir), "--out", str(root / "report.html")])
    assert result.exit_code == 0, result.output
    tab.goto(f"{base}/report.html", wait_until="load")
    headers = [h.strip() for h in tab.locator("#pages thead th").all_inner_texts()]
    for name in ("coverage", "rule"):
        column = headers.index(name)
        before = _column(tab, column)
        assert len(set(before)) > 1, f"the sample site's {name} column has one value; the test could not fail"
        tab.locator("#pages thead th").nth(column).click()
        descending = _column(tab, column)
        tab.locator("#pages thead th").nth(column).click()
        ascending = _column(tab, column)
        assert descending == sorted(before, reverse=True) and ascending == sorted(before)
    assert sorted(_column(tab, 0, number=False)) == sorted(_page_paths(root / "report.html"))


def _column(tab, column: int, number: bool = True) -> list:
    cells = tab.locator(f"#pages tbody tr td:nth-child({column + 1})").all_inner_texts()
    if not number:
        return ["".join(c.split()) for c in cells]
    return [float(re.match(r"-?[\d.]+", c.strip()).group()) for c in cells]


def _page_paths(report: Path) -> list[str]:
    """Each page row's first cell as the served HTML has it (rows are moved, never lost)."""
    from lxml import html as lxml_html

    tree = lxml_html.fromstring(report.read_text(encoding="utf-8"))
    return ["".join(td.text_content().split()) for td in tree.xpath('//table[@id="pages"]/tbody/tr/td[1]')]


# A page whose parts merge: an empty parent (with an id) over its first child, small siblings after a
# part with text. Every block carries data-n; tall gaps keep a block's neighbours out of view.
MERGED_PAGE = [
    ("h1", "比例と反比例", None), ("p", "比例と反比例のまとめです。", None), GAP,
    ("h2", "1. 導入", "intro"), ("p", "ある日、たろうくんは水そうに水を入れる時間を測りました。" * 3, None), GAP,
    ("h2", "2. 練習問題", "practice"), GAP,
    ("h3", "問1", None), ("p", "y は x に比例し、x=2 のとき y=6 です。式を求めなさい。", None), GAP,
    ("h3", "問2", None), ("p", "反比例のグラフをかきなさい。", None), GAP,
]


def test_each_part_link_brings_the_parts_first_words_into_view(browser, server, tab, tmp_path):
    """Issue 25: a merged part links to the heading of its first words' own section, so following
    its link shows those words (an empty parent's id would land one gap early)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from knowledge_build.html.sections import page_parts
    from knowledge_build.site.scan import parse_page

    root, base = server
    body = "".join('<div class="gap"></div>' if tag == "gap" else
                   f'<{tag} data-n="{n}"{f" id={chr(34)}{id_}{chr(34)}" if id_ else ""}>{html.escape(text)}</{tag}>'
                   for n, (tag, text, id_) in enumerate(MERGED_PAGE))
    page = ("<!DOCTYPE html><html lang=\"ja\"><head><meta charset=\"utf-8\"><title>比例</title>"
            f"<style>.gap {{ height: 150vh; }}</style></head><body>\n{body}\n</body></html>")
    (root / "hirei.html").write_text(page, encoding="utf-8")
    parts = [p for p in page_parts(parse_page(root / "hirei.html"), anchored=set()) if p.level > 1]
    assert [p.heading for p in parts] == ["1. 導入", "問1"]  # 問2 is small: it joins 問1
    for part in parts:
        first = part.text.split("\n")[0]
        n = next(i for i, (_, text, _) in enumerate(MERGED_PAGE) if text == first)
        tab_url = f"{base}/hirei.html#{part.fragment}"
        tab.goto(tab_url, wait_until="load")
        try:
            tab.wait_for_function(IN_VIEW, arg=n, timeout=TIMEOUT_MS)
        except PlaywrightTimeout:
            pytest.fail(f"{tab_url} did not bring the part's first words {first!r} into view: {tab.evaluate(WHERE)}")
