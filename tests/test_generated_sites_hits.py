"""`is_hit` on every generator's URL layout, with small stand-in outputs (no generator runs): pretty
URLs under a base path (`/tsumiki/docs/guide/setup/`), `.html` files, `…/index.html` spelled out,
ids on headings (Japanese, percent-encoded in the URL), numbered ids (`_2`, Sphinx's `id2` on a
wrapping `<section>`), no ids at all (text directives); and the labelled questions themselves."""

import html
from urllib.parse import quote

import pytest

from .generated_sites import render_html, site_hugo, site_jekyll, site_mkdocs, site_sphinx
from .generated_sites.build import BuiltSite
from .generated_sites.content import Admonition, Heading, Page
from .generated_sites.hits import Label, is_hit, load_queries, page_of_url
from .generated_sites.pages import BY_PATH, PAGES

LAYOUTS = {  # generator: (base path, page → file, id style)
    "jekyll": ("/tsumiki/", site_jekyll.file_of, "text"),
    "hugo": ("/tsumiki/", site_hugo.file_of, "text"),
    "mkdocs": ("/tsumiki/", site_mkdocs.file_of, "numbered"),
    "sphinx-html": ("/", lambda p: site_sphinx.file_of(p, "html"), "section"),
    "sphinx-dirhtml": ("/", lambda p: site_sphinx.file_of(p, "dirhtml"), "section"),
    "plain": ("/", render_html.file_of, "plain"),
}
SETUP = BY_PATH["guide/setup"]


def _ids(page: Page, style: str) -> dict[str, str | None]:
    """Each heading's id as that layout writes it (the page title included)."""
    headings = [page.title, *(h.text for h in page.headings())]
    if style == "text":
        return {text: text for text in headings}
    if style == "numbered":
        return {text: f"_{n}" for n, text in enumerate(headings, start=1)}
    if style == "section":
        return {text: f"id{n}" for n, text in enumerate(headings, start=1)}
    h2 = [h.text for h in page.headings() if h.level == 2]
    return {text: f"s{h2.index(text) + 1}" if text in h2 else None for text in headings}


def _page_html(page: Page, style: str) -> str:
    if style == "plain":
        return render_html.document(page, PAGES)
    ids = _ids(page, style)
    mark = '<a class="headerlink" href="#">¶</a>' if style != "text" else ""
    out, open_levels = [], []
    for level, text, body in [(1, page.title, ""), *_sections(page)]:
        id_ = html.escape(ids[text])
        if style == "section":
            while open_levels and open_levels[-1] >= level:
                out.append("</section>")
                open_levels.pop()
            out.append(f'<section id="{id_}"><h{level}>{html.escape(text)}{mark}</h{level}>{body}')
            open_levels.append(level)
        else:
            out.append(f'<h{level} id="{id_}">{html.escape(text)}{mark}</h{level}>{body}')
    out += ["</section>"] * len(open_levels)
    return f'<!DOCTYPE html><html lang="ja"><body><nav>ページ一覧</nav><main>{"".join(out)}</main></body></html>'


def _sections(page: Page):
    """(level, heading, the HTML of what follows it) for each heading; an admonition as a div."""
    sections = []
    for block in page.blocks:
        if isinstance(block, Heading):
            sections.append([block.level, block.text, ""])
        elif isinstance(block, Admonition) and sections:
            sections[-1][2] += f'<div class="admonition {block.kind}"><p>{html.escape(block.title or "")}</p></div>'
    return [tuple(s) for s in sections]


@pytest.fixture(params=list(LAYOUTS))
def site(request, tmp_path) -> BuiltSite:
    base, file_of, style = LAYOUTS[request.param]
    files = {page.path: file_of(page) for page in PAGES}
    for page in PAGES:
        path = tmp_path / files[page.path]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_page_html(page, style), encoding="utf-8")
    return BuiltSite(request.param, "stand-in", tmp_path, tmp_path, base, files)


def _url(site: BuiltSite, page: str, heading: str | None = None) -> str:
    url = site.url_of(page)
    if heading is None:
        return url
    id_ = _ids(BY_PATH[page], LAYOUTS[site.generator][2])[heading]
    return url + "#" + (quote(id_) if id_ else ":~:text=" + quote(heading))


def _label(page: str, heading: str) -> Label:
    return Label("t", "?", page, heading)


def test_a_fragment_on_the_labelled_heading_is_a_hit(site):
    assert is_hit(_url(site, "guide/setup", "動作環境"), "", [], _label("guide/setup", "動作環境"), site)


def test_a_fragment_on_a_subsection_of_the_labelled_heading_is_a_hit(site):
    url = _url(site, "guide/setup", "パッケージマネージャーを使う")  # plain: h3 has no id, a text directive
    assert is_hit(url, "", [], _label("guide/setup", "インストール"), site)


def test_a_fragment_on_another_section_of_the_page_is_a_miss(site):
    assert not is_hit(_url(site, "guide/setup", "初期設定"), "", [], _label("guide/setup", "動作環境"), site)


def test_the_same_file_name_in_another_folder_is_another_page(site):
    setup = _label("reference/setup", "設定項目")
    assert is_hit(_url(site, "reference/setup", "設定項目"), "設定項目", [], setup, site)
    assert not is_hit(_url(site, "guide/setup", "動作環境"), "設定項目", [], setup, site)
    assert page_of_url(site.url_of("guide/setup"), site) == "guide/setup"
    assert page_of_url(site.url_of("reference/setup"), site) == "reference/setup"


def test_a_folder_index_is_that_folder_s_page_and_not_the_home_page(site):
    assert page_of_url(site.url_of("guide/index"), site) == "guide/index"
    assert page_of_url(site.url_of("reference/cli/index"), site) == "reference/cli/index"
    assert page_of_url(site.url_of("index"), site) == "index"


def test_every_spelling_of_a_page_url_is_that_page(site):
    url = site.url_of("guide/advanced/parallel")
    bare = url.removesuffix("/").removesuffix(".html")
    for spelling in (url, bare, bare + "/", bare + "/index.html", bare + ".html", bare + "/?x=1#top"):
        assert page_of_url(spelling, site) == "guide/advanced/parallel", spelling
    without_base = "/" + url.removeprefix(site.base_path)
    assert page_of_url(without_base, site) == "guide/advanced/parallel"


def test_title_and_parents_place_a_result_without_a_fragment(site):
    url = _url(site, "guide/setup")
    parents = ["インストールと初期設定", "インストール"]
    assert is_hit(url, "パッケージマネージャーを使う", parents, _label("guide/setup", "インストール"), site)
    assert is_hit(url, "インストール¶", [], _label("guide/setup", "インストール"), site)
    assert not is_hit(url, "初期設定", ["インストールと初期設定"], _label("guide/setup", "インストール"), site)


def test_an_admonition_label_takes_the_box_or_the_section_that_holds_it(site):
    box = _label("guide/setup", "インストールできたか確かめるには")
    assert is_hit(_url(site, "guide/setup"), "ヒント: インストールできたか確かめるには", [], box, site)
    assert is_hit(_url(site, "guide/setup", "初期設定"), "", [], box, site)
    assert not is_hit(_url(site, "guide/setup", "動作環境"), "動作環境", [], box, site)


def test_the_page_title_as_label_takes_any_place_on_the_page(site):
    glossary = _label("reference/glossary", "用語集")
    assert is_hit(_url(site, "reference/glossary"), "タスク", [], glossary, site)
    assert not is_hit(_url(site, "guide/setup"), "用語集", [], glossary, site)


def test_a_fragment_that_lands_nowhere_is_a_miss(site):
    assert not is_hit(_url(site, "guide/setup") + "#nowhere", "", [], _label("guide/setup", "動作環境"), site)


def test_every_question_names_a_place_on_its_page():
    labels = load_queries()
    assert len(labels) >= 14 and len({label.qid for label in labels}) == len(labels)
    for label in labels:
        page = BY_PATH[label.page]
        places = {page.title, *(h.text for h in page.headings()),
                  *(b.title for b in page.blocks if isinstance(b, Admonition) and b.title)}
        assert label.heading in places, label
        assert label.query not in places, f"{label.qid} repeats its heading instead of asking"
