"""Pagefind 1.6 over a built site, searched in headless Chromium: the baseline for the in-browser box.

`pagefind_results(site_dir, baseurl, queries, work)` copies the site into `work`, moves box ids onto
headings, indexes the copy with Pagefind's extended binary, serves it on 127.0.0.1 and runs each query
through Pagefind's JS API in a page of the site; it returns the box-level ranking and the bytes.

Steps, in order:

- **Copy.** `site_dir` is never written: it is copied to `work/www/<baseurl>/`, and `work/www/` is
  served, so the files appear under `baseurl` as the generator meant.
- **Box ids on headings.** Pagefind splits a page into sub-results at headings (h1-h6) that have an
  id, and at elements with both an id and `data-pagefind-title` (docs: "Showing multiple results
  per page"); an id on a plain box container does not split it. In the copy, every element with an
  id whose first heading descendant has no id gives its id to that heading (removed from the
  container, so ids stay unique). Elements are visited innermost first (reverse document order), so
  a box inside a section keeps its own heading and the section, whose first heading is then taken,
  keeps its id. A box with an id and no heading at all (the reference corpus's boxes open with a
  `<strong>` title, not a heading) gets `data-pagefind-title` = its first run of text instead, so
  Pagefind can link to it too; `titles=False` (`--headings-only`) leaves those alone. The tree comes
  from lxml; the edit is made on the page's text at the start tags' exact offsets (the standard
  library's HTMLParser), so every other byte of the page is kept. A page where the two parsers
  disagree on a tag is left as it was (listed in `box_ids.pages_skipped`).
- **Index.** `npm install --prefix <cache> pagefind@1.6.0` once (cache: `KB_PAGEFIND_CACHE`, default
  ~/.cache/knowledge-build/pagefind-1.6.0); the npm package carries `pagefind_extended` in
  `@pagefind/<platform>/bin/` (its `npx pagefind` wrapper runs that binary first), the release that
  segments Chinese and Japanese when indexing. It runs as `pagefind_extended --site <copy>`; when a
  page's `<html lang>` is not Japanese, `--force-language ja` is added (one Japanese index for the
  whole site). With `<html lang="ja">` on every page Pagefind finds the language itself and the
  browser loads that index for a page in the same language.
- **Search.** A `ThreadingHTTPServer` on a free port of 127.0.0.1 serves the copy (no gzip: the
  bytes below are the files' own sizes). Debian's Chromium (`/usr/bin/chromium`, or `KB_CHROMIUM`)
  opens the site's first page under `baseurl` through playwright; requests to other hosts (CDN
  fonts, KaTeX) are aborted, so nothing outside the bench is waited for or counted. In the page:
  `const pf = await import(baseurl + "/pagefind/pagefind.js"); const s = await pf.search(q)`, then
  `data()` of each result in order until `k` distinct URLs are known.

**Box-level ranking** (what a student reads in Pagefind's default UI, top to bottom): results in
Pagefind's order; for each, the sub-results the default UI shows under the page title. That UI (1.6,
both `pagefind-ui.js` and the component UI) drops the first sub-result when it is the page itself
(hits before the first heading with an id), then keeps the three sub-results with the most hit
locations, shown in page order. Those heading links are the result's entries; a result that shows
none counts as its page URL. URLs are resolved against the page as the browser follows them
(path, percent-encoded, plus `#fragment`), and the first `k` distinct ones are returned.

**Bytes**, each query in a fresh browser context (its own empty cache), counted from the moment the
page has loaded until the ranking is known: every response body under `<baseurl>/pagefind/` (the
JS, the web worker, the WebAssembly, the language's metadata, the index chunks the query's words
need, and the fragment of every result whose data was loaded). The server does not compress, so a
body is the file's size. The figures are the server's own count of body bytes sent (it sees the
worker's requests too); `browser_seen` has the same sums from playwright's network events
(`request.sizes()["responseBodySize"]`), which miss the worker's script (pagefind-worker.js) itself.

- `first_query`: the first query's bytes (cold cache); `first_query_by_file` splits it by file
  (index and fragment chunks by folder).
- `per_query_mean`: the mean over all queries, each cold (the first search a student makes);
  `per_query`: each query's, in order; `session_per_query`: each query's in the session below.
- `session_mean`: the mean per query when all queries run in order in one context (a student who
  keeps searching: the JS, WebAssembly and common index chunks are fetched once).
- `bundle_total`, `bundle_files`: the `pagefind/` directory on disk.

`results` is the fresh-context ranking (the same on every run). Pagefind can rank a query
differently in a page where other queries ran before; those queries are listed in
`session_differs` with both rankings.

Run: `python bench/browser/pagefind_run.py --site SITE_DIR --baseurl /school_asset --queries
QUERIES.jsonl --work DIR [--k 5] [--timeout 120] [--headings-only]`; it prints the JSON. Playwright's
sync API is used: call `pagefind_results` outside a running asyncio loop.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

VERSION = "1.6.0"
CACHE = Path(os.environ.get("KB_PAGEFIND_CACHE") or Path.home() / ".cache" / "knowledge-build" / f"pagefind-{VERSION}")
CHROMIUM = os.environ.get("KB_CHROMIUM", "/usr/bin/chromium")
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
TITLE_CHARS = 80  # a data-pagefind-title: the box's first run of text, as the reader sees its title
SHOWN_SUB_RESULTS = 3  # Pagefind's default UI shows at most three sub-results per page


class PagefindRunError(Exception):
    """A condition the caller can fix; the message says how."""


# ---------------------------------------------------------------- box ids on headings

@dataclass
class Edits:
    pages: int = 0  # pages changed
    ids_moved: int = 0  # ids moved onto a heading
    titles_added: int = 0  # data-pagefind-title added to a box without a heading
    skipped: list[str] = field(default_factory=list)  # pages left alone: the parsers disagreed
    languages: set[str] = field(default_factory=set)  # every page's <html lang> ("" when absent)


class _StartTags(HTMLParser):
    """Each start tag's name, character offset and text, in document order."""

    CDATA_CONTENT_ELEMENTS = ("script", "style", "textarea", "title", "xmp", "iframe")

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.tags: list[tuple[str, int, str]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        line, col = self.getpos()
        self.tags.append((tag, self._line_starts[line - 1] + col, self.get_starttag_text() or ""))

    handle_startendtag = handle_starttag


ID_ATTRIBUTE = re.compile(r"""\s+id\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+)""", re.IGNORECASE)


def _planned_edits(root, titles: bool) -> tuple[list[tuple], list[tuple]]:
    """As lxml sees the page: (container, heading) pairs whose id moves, innermost container first,
    and, with `titles`, (element, title) pairs for elements with an id, text and no heading."""
    gained: set = set()
    moves, titled = [], []
    for element in reversed([e for e in root.iter() if isinstance(e.tag, str) and e.get("id")]):
        if element.tag in HEADINGS:
            continue
        heading = next(element.iterdescendants(*HEADINGS), None)
        if heading is None:
            title = next((" ".join(t.split()) for t in element.itertext() if t.strip()), "")[:TITLE_CHARS]
            if titles and title and not any(a.tag in HEADINGS for a in element.iterancestors()):
                titled.append((element, title))
        elif heading.get("id") is None and heading not in gained:
            gained.add(heading)
            moves.append((element, heading))
    return moves, titled


def _ordinal(root, element) -> int:
    """Which start tag of this name the element is, in document order."""
    return next(i for i, e in enumerate(root.iter(element.tag)) if e is element)


def _start_tag(root, by_name, element, id_expected: bool) -> tuple[int, str, re.Match | None]:
    """The element's start tag in the text (offset, text, its id attribute); ValueError when the
    two parsers disagree about it."""
    try:
        offset, text = by_name[element.tag][_ordinal(root, element)]
    except (KeyError, IndexError):
        raise ValueError(element.tag) from None
    found = ID_ATTRIBUTE.search(text)
    if not text.lower().startswith(f"<{element.tag}") or (found is not None) != id_expected:
        raise ValueError(element.tag)
    if found is not None and html.unescape(found.group().split("=", 1)[1].strip().strip("\"'")) != element.get("id"):
        raise ValueError(element.tag)
    return offset, text, found


def edit_page(text: str, titles: bool = True) -> tuple[str, int, int] | None:
    """The page with box ids on headings (and titles on the other boxes): the new text, ids moved,
    titles added; None when lxml and HTMLParser do not agree on the tags to edit."""
    from lxml import html as lxml_html

    root = lxml_html.document_fromstring(text)
    moves, titled = _planned_edits(root, titles)
    if not moves and not titled:
        return text, 0, 0
    by_name: dict[str, list[tuple[int, str]]] = {}
    for name, offset, tag_text in _StartTags(text).tags:
        by_name.setdefault(name, []).append((offset, tag_text))
    for name in {e.tag for pair in moves for e in pair} | {e.tag for e, _ in titled}:
        if len(by_name.get(name, ())) != sum(1 for _ in root.iter(name)):
            return None  # the parsers count this tag differently: ordinals would not line up
    edits = []  # (offset, length to replace, replacement)
    try:
        for container, heading in moves:
            c_offset, _, found = _start_tag(root, by_name, container, id_expected=True)
            h_offset, _, _ = _start_tag(root, by_name, heading, id_expected=False)
            edits.append((c_offset + found.start(), len(found.group()), ""))
            edits.append((h_offset + 1 + len(heading.tag), 0, f' id="{html.escape(container.get("id"), quote=True)}"'))
        for element, title in titled:
            offset, _, _ = _start_tag(root, by_name, element, id_expected=True)
            edits.append((offset + 1 + len(element.tag), 0, f' data-pagefind-title="{html.escape(title, quote=True)}"'))
    except ValueError:
        return None
    for offset, length, replacement in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:offset] + replacement + text[offset + length:]
    return text, len(moves), len(titled)


def box_ids_on_headings(site: Path, titles: bool = True) -> Edits:
    """Rewrite every HTML page under `site` in place (a copy) and report what changed."""
    from lxml import html as lxml_html

    edits = Edits()
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="surrogateescape")
        if not text.strip():
            continue
        edits.languages.add((lxml_html.document_fromstring(text).get("lang") or "").strip().lower())
        edited = edit_page(text, titles)
        if edited is None:
            edits.skipped.append(str(page.relative_to(site)))
            continue
        new_text, moved, titled = edited
        if moved or titled:
            page.write_text(new_text, encoding="utf-8", errors="surrogateescape")
            edits.pages += 1
            edits.ids_moved += moved
            edits.titles_added += titled
    return edits


# ---------------------------------------------------------------- Pagefind itself

def extended_binary(cache: Path = CACHE, timeout: float = 600.0) -> Path:
    """Pagefind's extended binary from the npm package, installed into `cache` once."""
    found = sorted(cache.glob("node_modules/@pagefind/*/bin/pagefind_extended*"))
    if not found:
        npm = shutil.which("npm")
        if npm is None:
            raise PagefindRunError("npm not found. Fix: install Node.js and npm (Debian: apt-get install npm)")
        run = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache), f"pagefind@{VERSION}"],
                             capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0:
            raise PagefindRunError(f"npm install pagefind@{VERSION} failed: {run.stderr.strip()[-300:]}. "
                                   f"Fix: check the network and npm's registry, or remove {cache} and retry")
        found = sorted(cache.glob("node_modules/@pagefind/*/bin/pagefind_extended*"))
    if not found:
        raise PagefindRunError(f"no pagefind_extended binary under {cache}/node_modules/@pagefind/. "
                               "Fix: this platform may have no extended build; remove the cache and retry")
    return found[0]


def run_pagefind(binary: Path, site: Path, force_language: bool, timeout: float) -> tuple[list[str], str]:
    """Index `site` (writes `site/pagefind/`); the command run and the version it printed."""
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=timeout).stdout.strip()
    if not version.endswith(VERSION):
        raise PagefindRunError(f"{binary} is {version!r}, not {VERSION}. Fix: remove {CACHE} and run again")
    command = [str(binary), "--site", str(site)] + (["--force-language", "ja"] if force_language else [])
    run = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0 or not (site / "pagefind" / "pagefind.js").is_file():
        raise PagefindRunError(f"pagefind failed ({run.returncode}): {(run.stderr or run.stdout).strip()[-300:]}. "
                               "Fix: check that the site directory holds the generator's HTML output")
    return command, version


def bundle_size(site: Path) -> tuple[int, int]:
    files = [p for p in (site / "pagefind").rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


# ---------------------------------------------------------------- serving and the browser

class ByteCount:
    """Body bytes the server sent, per path, since the last `take()`."""

    def __init__(self):
        self._lock = threading.Lock()
        self._sent: list[tuple[str, int]] = []

    def add(self, path: str, size: int) -> None:
        with self._lock:
            self._sent.append((path, size))

    def take(self) -> list[tuple[str, int]]:
        with self._lock:
            sent, self._sent = self._sent, []
        return sent


@contextmanager
def serve(root: Path) -> Iterator[tuple[str, ByteCount]]:
    """A real HTTP server on 127.0.0.1 for `root`; yields its base URL and its byte count."""
    count = ByteCount()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def copyfile(self, source, outputfile):
            start = source.tell()
            super().copyfile(source, outputfile)
            count.add(self.path, source.tell() - start)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", count
    finally:
        httpd.shutdown()
        httpd.server_close()


# Runs in the page: the box-level ranking as Pagefind's default UI shows it (see the docstring).
SEARCH_JS = """async ([bundle, query, k, shown]) => {
  const pf = await import(bundle);
  const search = await pf.search(query);
  const urls = [];
  let loaded = 0;
  for (const result of search.results) {
    if (urls.length >= k) break;
    const data = await result.data();
    loaded += 1;
    const page = data.meta?.url || data.url;
    let subs = Array.isArray(data.sub_results) ? data.sub_results : [];
    if (subs.length && subs[0].url === page) subs = subs.slice(1);
    if (subs.length > shown) {
      const top = [...subs].sort((a, b) => (b.locations?.length ?? 0) - (a.locations?.length ?? 0))
        .slice(0, shown).map(s => s.url);
      subs = subs.filter(s => top.includes(s.url));
    }
    for (const raw of (subs.length ? subs.map(s => s.url) : [page])) {
      const url = new URL(raw, location.href);
      const seen = url.pathname + url.hash;
      if (!urls.includes(seen)) urls.push(seen);
    }
  }
  return {urls: urls.slice(0, k), loaded, total: search.results.length};
}"""


@dataclass
class QueryRun:
    urls: list[str]
    loaded: int  # results whose data() was loaded
    total: int  # results Pagefind found
    server_bytes: int = 0
    browser_bytes: int = 0
    files: dict[str, int] = field(default_factory=dict)  # bytes per file under pagefind/


class Browser:
    """Chromium through playwright, opening a page of the served site per context."""

    def __init__(self, playwright, base: str, baseurl: str, first_page: str, timeout: float):
        if shutil.which(CHROMIUM) is None:
            raise PagefindRunError(f"Chromium not found at {CHROMIUM}. Fix: apt-get install chromium, or set KB_CHROMIUM")
        self.timeout_ms = timeout * 1000
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        self.chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"],
                                                   timeout=self.timeout_ms)
        self.base, self.baseurl, self.first_page = base, baseurl, first_page
        self.bundle = f"{baseurl}/pagefind/pagefind.js"

    def close(self):
        self.chromium.close()

    @contextmanager
    def page(self, requests: list):
        """A fresh context with the site's first page loaded; `requests` collects later requests."""
        context = self.chromium.new_context()
        context.set_default_timeout(self.timeout_ms)
        context.route(re.compile(r"^(?!http://127\.0\.0\.1:)"), lambda route: route.abort())
        try:
            page = context.new_page()
            page.goto(f"{self.base}{self.baseurl}/{self.first_page}", wait_until="load")
            context.on("requestfinished", lambda request: requests.append(request))
            yield page
        finally:
            context.close()

    def search(self, page, query: str, k: int) -> QueryRun:
        found = page.evaluate(SEARCH_JS, [self.bundle, query, k, SHOWN_SUB_RESULTS])
        return QueryRun(found["urls"], found["loaded"], found["total"])

    def pagefind_bytes(self, requests: list) -> int:
        prefix = f"{self.base}{self.baseurl}/pagefind/"
        return sum(r.sizes()["responseBodySize"] for r in requests if r.url.startswith(prefix))


def _served_pagefind_bytes(sent: list[tuple[str, int]], baseurl: str) -> int:
    return sum(size for path, size in sent if path.startswith(f"{baseurl}/pagefind/"))


def _by_kind(sent: list[tuple[str, int]], baseurl: str) -> dict[str, int]:
    """Bytes by the part of the bundle they came from: the file name, or the folder for index and
    fragment chunks (their names are hashes)."""
    kinds: dict[str, int] = {}
    prefix = f"{baseurl}/pagefind/"
    for path, size in sent:
        if path.startswith(prefix):
            rest = path[len(prefix):].split("?")[0]
            kind = rest.split("/")[0] + "/" if "/" in rest else re.sub(r"_[0-9a-f]{6,}", "", rest)
            kinds[kind] = kinds.get(kind, 0) + size
    return kinds


def _search_all(browser: Browser, count: ByteCount, queries: list[str], k: int) -> tuple[list[QueryRun], list[QueryRun], int, int, dict]:
    """Each query cold (fresh context), then all in one context; the cold runs, the session's runs and its bytes."""
    cold = []
    for query in queries:
        requests: list = []
        with browser.page(requests) as page:
            count.take()
            run = browser.search(page, query, k)
            run.browser_bytes = browser.pagefind_bytes(requests)
            sent = count.take()
            run.server_bytes = _served_pagefind_bytes(sent, browser.baseurl)
            run.files = _by_kind(sent, browser.baseurl)
        cold.append(run)
    requests = []
    with browser.page(requests) as page:
        count.take()
        session = []
        for query in queries:  # one after another: each query's own bytes on top of what the page holds
            session.append(browser.search(page, query, k))
            session[-1].server_bytes = _served_pagefind_bytes(count.take(), browser.baseurl)
        session_browser = browser.pagefind_bytes(requests)
        session_server = sum(run.server_bytes for run in session)
    differ = {q: {"fresh": a.urls, "session": b.urls} for q, a, b in zip(queries, cold, session) if a.urls != b.urls}
    return cold, session, session_server, session_browser, differ


# ---------------------------------------------------------------- the whole run

def _normal_baseurl(baseurl: str) -> str:
    baseurl = baseurl.strip()
    return "" if baseurl in ("", "/") else "/" + baseurl.strip("/")


def _first_page(site: Path) -> str:
    """The page the browser opens: the site's index.html, else its first page; URL-quoted."""
    from urllib.parse import quote

    page = site / "index.html" if (site / "index.html").is_file() else sorted(site.rglob("*.html"))[0]
    return quote(page.relative_to(site).as_posix())


def pagefind_results(site_dir: Path, baseurl: str, queries: list[str], work: Path, k: int = 5,
                     timeout: float = 120.0, titles: bool = True) -> dict:
    """Pagefind's box-level top `k` URLs for each query over a copy of `site_dir`, and its bytes."""
    site_dir, work, baseurl = Path(site_dir), Path(work), _normal_baseurl(baseurl)
    if not site_dir.is_dir() or not any(site_dir.rglob("*.html")):
        raise PagefindRunError(f"{site_dir} holds no HTML pages. Fix: pass the generator's output directory (e.g. _site)")
    if not queries:
        raise PagefindRunError("no queries. Fix: pass a JSONL file with a \"query\" field per line")
    www = work / "www"
    shutil.rmtree(www, ignore_errors=True)
    copy = www / baseurl.lstrip("/") if baseurl else www
    shutil.copytree(site_dir, copy)
    shutil.rmtree(copy / "pagefind", ignore_errors=True)  # a bundle the site already had is not ours
    edits = box_ids_on_headings(copy, titles)
    force = not all(lang == "ja" or lang.startswith("ja-") for lang in edits.languages)
    command, version = run_pagefind(extended_binary(timeout=max(timeout, 600.0)), copy, force, timeout)
    total, files = bundle_size(copy)

    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    try:
        with serve(www) as (base, count), sync_playwright() as playwright:
            browser = Browser(playwright, base, baseurl, _first_page(copy), timeout)
            try:
                cold, session, session_server, session_browser, differ = _search_all(browser, count, queries, k)
            finally:
                browser.close()
    except PlaywrightError as error:
        raise PagefindRunError(f"the browser failed: {str(error).splitlines()[0]}. "
                               f"Fix: check {CHROMIUM} starts headless (or set KB_CHROMIUM); raise --timeout") from None
    n = len(queries)
    return {
        "version": version,
        "command": command,
        "forced_language": force,
        "results": {q: run.urls for q, run in zip(queries, cold)},
        "bytes": {
            "first_query": cold[0].server_bytes,
            "first_query_by_file": cold[0].files,
            "per_query_mean": sum(r.server_bytes for r in cold) / n,
            "per_query": [r.server_bytes for r in cold],
            "session_per_query": [r.server_bytes for r in session],
            "session_mean": session_server / n,
            "bundle_total": total,
            "bundle_files": files,
            "browser_seen": {  # playwright's network events: requests from the web worker may be missing
                "first_query": cold[0].browser_bytes,
                "per_query_mean": sum(r.browser_bytes for r in cold) / n,
                "session_mean": session_browser / n,
            },
        },
        "results_loaded_mean": sum(r.loaded for r in cold) / n,
        "session_differs": differ,
        "box_ids": {"pages_changed": edits.pages, "ids_moved": edits.ids_moved, "titles_added": edits.titles_added,
                    "pages_skipped": edits.skipped, "languages": sorted(edits.languages)},
    }


def _read_queries(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)["query"] for line in lines if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise PagefindRunError(f"cannot read queries from {path}: {error}. "
                               "Fix: pass a JSONL file whose every line is an object with a \"query\" field") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, required=True, help="the generator's output directory (never modified)")
    parser.add_argument("--baseurl", default="", help='the path the site is served under, e.g. /school_asset ("" for root)')
    parser.add_argument("--queries", type=Path, required=True, help='JSONL with a "query" field per line')
    parser.add_argument("--work", type=Path, required=True, help="a directory for the copy and the bundle")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--headings-only", action="store_true",
                        help="only move ids onto headings; add no data-pagefind-title to boxes without one")
    parser.add_argument("--timeout", type=float, default=float(os.environ.get("KB_TEST_TIMEOUT", "120")),
                        help="seconds for each wait (Pagefind, the browser)")
    args = parser.parse_args(argv)
    try:
        result = pagefind_results(args.site, args.baseurl, _read_queries(args.queries), args.work, args.k, args.timeout,
                                  titles=not args.headings_only)
    except (PagefindRunError, subprocess.TimeoutExpired, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
