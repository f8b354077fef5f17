"""Issue 24, acceptance (c2): the links the index holds land, in a real browser, on each generator's
output. Each output is served on 127.0.0.1 at its base path (`/tsumiki/` for jekyll, hugo and
mkdocs), and every chunk URL with a fragment (every one: the site has fewer than MAX_LINKS) is opened in
Debian's headless Chromium: an id must name an element of the page, in view once loaded; a text
directive must find its text in the page's rendered text (`fragment_lands`, as the tool checks it).
"""

import functools
import http.server
import re
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from urllib.parse import unquote, urlsplit

import pytest

from knowledge_build.html.fragments import fragment_lands, parse_text_directives

from .generated_sites.fixtures import SITE_PARAMS
from .test_fragments_browser import TIMEOUT_MS  # the browser fixture is conftest's

pytestmark = [pytest.mark.browser, pytest.mark.model, pytest.mark.generators]

MAX_LINKS = 100  # more than the site has: every chunk link is opened
OFF_SITE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")
# Whether the element with this id exists and is in the viewport: "ok", or what is wrong.
ID_LANDS = """id => {
  const el = document.getElementById(id);
  if (!el) return "no element with this id";
  const top = el.getBoundingClientRect().top;
  return top >= -1 && top < window.innerHeight ? "ok" : `element out of view (top ${Math.round(top)})`;
}"""


@contextmanager
def serving(root, base_path: str):
    """A real HTTP server on 127.0.0.1 serving `root` at `base_path`; yields its origin."""
    prefix = base_path.rstrip("/")

    class AtBase(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path):
            if prefix and (path == prefix or path.startswith(prefix + "/")):
                path = path[len(prefix):] or "/"
            elif prefix:
                path = "/.not-under-the-base-path"
            return super().translate_path(path)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(AtBase, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def sample_links(chunks, limit: int = MAX_LINKS) -> list[str]:
    """The distinct chunk URLs with a fragment, spread evenly over them when there are more than `limit`."""
    links = sorted({c["url"] for c in chunks if urlsplit(c["url"]).fragment})
    if len(links) <= limit:
        return links
    step = len(links) / limit
    return [links[int(i * step)] for i in range(limit)]


def landing_problem(tab, origin: str, url: str) -> str | None:
    """Opens `url` in a tab (a browser-initiated navigation, so text directives scroll); None when it
    lands, else what went wrong."""
    response = tab.goto(origin + url, wait_until="load")
    if response is None or response.status != 200:
        return f"HTTP {response.status if response else 'no response'}"
    fragment = urlsplit(url).fragment
    if parse_text_directives(fragment):
        text = tab.evaluate("document.body.innerText")
        return None if fragment_lands(fragment, text) else "text directive not found in the page's text"
    problem = tab.evaluate(ID_LANDS, unquote(fragment))
    return None if problem == "ok" else problem


@pytest.mark.parametrize("generated_site", SITE_PARAMS, indirect=True)
def test_chunk_links_land_on_their_place_in_chromium(browser, generated_index):  # noqa: F811
    site = generated_index.site
    links = sample_links(generated_index.chunks)
    assert links, f"{site.generator}: no chunk URL has a fragment"
    problems = {}
    with serving(site.output, site.base_path) as origin:
        for page in sorted({c["url"].split("#")[0] for c in generated_index.chunks}):  # every chunk's page is served
            try:
                with urllib.request.urlopen(origin + page, timeout=TIMEOUT_MS / 1000) as response:
                    status = response.status
            except urllib.error.HTTPError as error:
                status = error.code
            if status != 200:
                problems[page] = f"HTTP {status}"
        for url in links:
            tab = browser.new_page(viewport={"width": 1000, "height": 700})
            tab.set_default_timeout(TIMEOUT_MS)
            tab.route(OFF_SITE, lambda route: route.abort())  # Material's web fonts: the tests run offline
            try:
                problem = landing_problem(tab, origin, url)
            finally:
                tab.close()
            if problem:
                problems[url] = problem
    assert not problems, (f"{site.generator}: {len(problems)} of {len(links)} links do not land:\n"
                          + "\n".join(f"{url}: {problem}" for url, problem in problems.items()))
