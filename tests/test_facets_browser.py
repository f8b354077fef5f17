"""The search box on a site with versions, in a real browser: the version menu, the newest answered by default,
another version or every version on request (README, "Versions and languages").

A plain site in three versions (tests/test_facets.py's pages, with the box's include on every page) is indexed with
the fake embedder (the box is lexical) into the site itself and served by a real HTTP server on 127.0.0.1; Debian's
headless Chromium types into the box. Waits are bounded by KB_TEST_TIMEOUT; nothing is timed.
"""

import os

import pytest

from knowledge_build import build, load_config

from .conftest import FakeEmbedder
from .served import serving
from .test_facets import HOME, PAGE, VERSIONS

pytestmark = pytest.mark.browser

TIMEOUT_MS = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000
BOX = ('<header><div class="knowledge-search" data-bundle="/knowledge/v2/"></div>'
       '<script type="module" src="/knowledge/v2/knowledge-search-ui.js"></script></header>')
MENU = "select[aria-label=版]"
LANGUAGES = "select[aria-label=Language]"  # the box speaks English on an English page (<html lang="en">)
ENGLISH = """<!doctype html><html lang="en"><head><title>{title}</title></head><body><main><h1>{title}</h1>
<h2 id="install">Installation</h2>
<p>Version {v} installs with pip. Make a virtual environment, install the packages it depends on, then check the
settings file. The steps differ a little between systems, so read the table of supported systems first.</p>
<h2 id="usage">Usage</h2>
<p>Run the command to search the site. Results come best first, and the link of each heading takes you to its
place in the text.</p>
</main></body></html>"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("versioned-box") / "site"
    for v in VERSIONS:
        for name in ("guide", "api"):
            path = root / f"v{v}" / "ja" / f"{name}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            page = PAGE.format(title=f"{name} {v}", v=v, feature=f"機能{v.replace('.', '')}")
            path.write_text(page.replace("<body>", "<body>" + BOX), encoding="utf-8")
            english = root / f"v{v}" / "en" / f"{name}.html"  # the same page in English beside it
            english.parent.mkdir(parents=True, exist_ok=True)
            english.write_text(ENGLISH.format(title=f"{name} {v}", v=v).replace("<body>", "<body>" + BOX),
                               encoding="utf-8")
    (root / "index.html").write_text(HOME.replace("<body>", "<body>" + BOX), encoding="utf-8")
    build(load_config(site=root, output=root / "knowledge" / "v2", cache_dir=root.parent / "cache", env={}),
          embedder=FakeEmbedder())

    with serving(root) as origin:
        yield origin


def _links(tab, query: str, version: str = "", language: str = "") -> list[str]:
    tab.locator("input[role=combobox]").fill(query)
    tab.wait_for_function("([q, v, l]) => { const list = document.querySelector('[role=listbox]');"
                          " return list.dataset.query === q && list.dataset.version === v"
                          " && list.dataset.language === l; }", arg=[query, version, language])
    return tab.eval_on_selector_all("[role=option] a", "links => links.map(a => a.getAttribute('href'))")


def _within(link: str, folder: str) -> bool:
    """A link below `folder`, or to the site's own front page (no version, no language: every filter passes it; the
    dense channel may bring it among pages that hold the words)."""
    return link.startswith(folder) or link.startswith("/#") or link == "/"


def test_the_box_answers_from_the_newest_version_and_its_menu_picks_another_or_every_one(browser, server):
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(server + "/v1.5/ja/guide.html", wait_until="load")
    tab.locator("input[role=combobox]").click()
    tab.wait_for_function(f"() => !document.querySelector('{MENU}').hidden")
    options = tab.eval_on_selector_all(f"{MENU} option", "os => os.map(o => [o.value, o.textContent])")
    assert options == [["", "最新の版"], ["v1.7", "v1.7"], ["v1.6", "v1.6"], ["v1.5", "v1.5"], ["all", "すべての版"]]
    newest = _links(tab, "インストール")
    assert newest and all(_within(link, "/v1.7/ja/") for link in newest), newest  # Japanese: the ja pages
    tab.locator(MENU).select_option("v1.5")
    older = _links(tab, "インストール", "v1.5")
    assert older and all(_within(link, "/v1.5/") for link in older), older
    tab.locator(MENU).select_option("all")
    every = _links(tab, "インストール", "all")
    versioned = [link for link in every if link.startswith("/v")]
    places = [link.split("/", 2)[2] for link in versioned]  # the path below the version folder, and the anchor
    assert len(places) == len(set(places)) >= 2, every
    assert all(link.startswith("/v1.7/") for link in versioned), every  # each led by its newest version
    assert errors == []
    context.close()


def test_the_language_menu_picks_the_pages_of_one_language(browser, server):
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    tab.goto(server + "/v1.7/en/guide.html", wait_until="load")
    tab.locator("input[role=combobox]").click()
    tab.wait_for_function(f"() => !document.querySelector('{LANGUAGES}').hidden")
    options = tab.eval_on_selector_all(f"{LANGUAGES} option", "os => os.map(o => o.value)")
    assert options[0] == "" and sorted(options[1:3]) == ["en", "ja"] and options[3] == "all"
    english = _links(tab, "installation")  # Latin letters (it could be romaji): every language by default
    assert english and english[0].startswith("/v1.7/en/") and all(_within(link, "/v1.7/") for link in english), english
    tab.locator(LANGUAGES).select_option("ja")
    assert all(_within(link, "/v1.7/ja/") for link in _links(tab, "installation", language="ja"))
    tab.locator(LANGUAGES).select_option("en")
    assert all(_within(link, "/v1.7/en/") for link in _links(tab, "インストール", language="en"))  # kept to them
    context.close()
