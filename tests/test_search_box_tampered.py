"""The search box does not trust its files (issue 37, finding 5): a bundle file that does not match the
hash its entry point lists, a count larger than its file can hold, or a record's link that is not http(s)
or site-relative is refused with a message, in real Chromium and in the Python mirror (browser/search.py).

Each test copies the sample site's set (built with the fake embedder), breaks one thing in it, serves it
from a real HTTP server on 127.0.0.1 and types a query into the box on a page of its own. Waits are bounded
by KB_TEST_TIMEOUT (seconds, default 120): a tab that froze on a hostile count fails the test by that
timeout, nothing is timed.
"""

import functools
import http.server
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from knowledge_build.browser import bundle
from knowledge_build.browser.analysis import term_key

TIMEOUT_MS = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000
QUERY = "判別式"
PAGE = """<!DOCTYPE html><meta charset="utf-8"><title>box</title>
<div class="knowledge-search" data-bundle="v2/"></div>
<script type="module" src="v2/knowledge-search-ui.js"></script>"""
# The list answers a query (data-query), or the status says the box could not search.
ANSWERED = """query => document.querySelector('[role=listbox]')?.dataset.query === query
  || document.querySelector('.ks-status')?.textContent.startsWith('検索できませんでした')"""


@pytest.fixture
def bundle_dir(fake_index_dir, tmp_path):
    """A copy of the sample site's set as v2/ beside a page with the box; yields the set's folder."""
    copy = tmp_path / "v2"
    shutil.copytree(fake_index_dir, copy)
    (tmp_path / "box.html").write_text(PAGE, encoding="utf-8")
    return copy


@pytest.fixture
def origin(bundle_dir):
    """A real HTTP server on 127.0.0.1 serving the page and the set."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=bundle_dir.parent))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def context(browser):
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


def _entry(folder):
    return json.loads((folder / bundle.ENTRY).read_bytes())


def _put(folder, kind: str, number: int, data: bytes) -> None:
    """Make `data` the bundle's file of `kind` (t, r, p) at `number` and list it in the entry point with
    its own hash: a bundle consistent in itself whose content is hostile."""
    entry = _entry(folder)
    where = {"t": (entry, "shards"), "o": (entry, "postings"), "r": (entry["records"], "files"), "p": (entry, "places")}[kind]
    digests = bundle.unpack(where[0][where[1]])
    old = folder / bundle.file_name(kind, digests[number])
    old.unlink()
    digests[number] = bundle.digest(data)
    (folder / bundle.file_name(kind, digests[number])).write_bytes(data)
    where[0][where[1]] = bundle.pack(digests)
    (folder / bundle.ENTRY).write_bytes(json.dumps(entry, ensure_ascii=False).encode())


def _shard_of(folder, term: str):
    """(number, path) of the term shard that files `term`."""
    entry = _entry(folder)
    digests = bundle.unpack(entry["shards"])
    number = bundle.fnv1a(term_key(term)) % len(digests)
    return number, folder / bundle.file_name("t", digests[number])


def _moved_term(folder) -> tuple[str, int, Path]:
    """A term whose postings are in a posting shard (its key's shard names it with none): (term, the posting
    shard's number, its path); the longest such term of the sample, so typing it finds it."""
    from knowledge_build.browser.verify import read_shard

    entry = _entry(folder)
    moved = [term for d in bundle.unpack(entry["shards"])
             for term, fields in read_shard((folder / bundle.file_name("t", d)).read_bytes(), entry["rows"], folder, "t").items()
             if not any(rows for rows, _ in fields)]
    term = max(moved, key=lambda t: (len(t), t))
    digests = bundle.unpack(entry["postings"])
    number = bundle.fnv1a(term) % len(digests)
    return term, number, folder / bundle.file_name("o", digests[number])


def _search(context, origin, query: str = QUERY, base: str | None = None):
    """Type `query` into the box on a fresh page; (tab, status text, results shown)."""
    tab = context.new_page()
    tab.goto(f"{base or origin}/box.html", wait_until="load")
    tab.locator("input[role=combobox]").click()
    tab.keyboard.type(query)
    tab.wait_for_function(ANSWERED, arg=query)
    shown = tab.eval_on_selector_all("[role=option]", """options => options.map(o => ({
        title: o.querySelector('.ks-title').textContent, href: o.querySelector('a')?.getAttribute('href') ?? null}))""")
    return tab, tab.locator(".ks-status").text_content(), shown


def _varint(value: int) -> bytes:
    out = bytearray()
    bundle._put_varint(value, out)
    return bytes(out)


@pytest.mark.browser
def test_a_good_bundle_answers_in_the_box(context, origin):
    _, status, shown = _search(context, origin)
    assert shown and any(QUERY in r["title"] for r in shown) and all(r["href"] for r in shown), (status, shown)


@pytest.mark.browser
def test_a_truncated_shard_is_refused_with_a_message_not_fewer_results(context, origin, bundle_dir):
    _, shard = _shard_of(bundle_dir, QUERY)
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    _, status, shown = _search(context, origin)
    assert shown == [] and shard.name in status and "sha256" in status, (status, shown)


@pytest.mark.browser
@pytest.mark.parametrize("damage", ["truncated", "without the term"])
def test_a_damaged_posting_shard_is_refused_with_a_message(context, origin, bundle_dir, damage):
    term, number, path = _moved_term(bundle_dir)
    assert _python_search(bundle_dir, term)  # found through its posting shard (the browser is asked once: it caches)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        said = [path.name, "sha256"]
    else:  # a posting shard consistent with the entry point that lacks the term its key's shard sends there
        _put(bundle_dir, "o", number, b"")
        said = [f"the term {term} is not in it"]
    _, status, shown = _search(context, origin, term)
    assert shown == [] and all(s in status for s in said), (status, shown)


@pytest.mark.browser
@pytest.mark.parametrize("postings", [2**31, 2**26])  # 2^26: an array V8 would allocate
def test_a_shard_declaring_millions_of_postings_is_refused_without_freezing_the_tab(context, origin, bundle_dir,
                                                                                     postings):
    number, _ = _shard_of(bundle_dir, QUERY)
    term = QUERY.encode()
    _put(bundle_dir, "t", number, _varint(len(term)) + term + _varint(postings) + b"\x01\x01")
    tab, status, shown = _search(context, origin)
    assert shown == [] and f"is broken (a term declares {postings} postings, more than the 2 bytes left hold)" \
        in status, (status, shown)
    assert tab.evaluate("1 + 1") == 2  # the tab still answers


def _hostile_entry(folder, change: str) -> str:
    """Change the entry point as `change` names; the words the refusal must hold."""
    entry = _entry(folder)
    if change == "rows":
        entry["rows"] = 1_000_000_000
        said = "rows 1000000000 is not a count from 0 to 16777216"
    elif change == "rows over the limit":
        entry["rows"] = 2**24 + 1
        said = "rows 16777217 is not a count from 0 to 16777216"
    else:  # a shard more than the 1,024 a reader takes
        entry["shards"] = bundle.pack([bundle.digest(bytes([i % 256, i // 256])) for i in range(1025)])
        said = "it lists 1025 term shards"
    (folder / bundle.ENTRY).write_bytes(json.dumps(entry, ensure_ascii=False).encode())
    return said


ENTRY_CHANGES = ["rows", "rows over the limit", "shards"]


@pytest.mark.browser
@pytest.mark.parametrize("change", ENTRY_CHANGES)
def test_counts_in_the_entry_point_beyond_its_limits_are_refused(context, origin, bundle_dir, change):
    said = _hostile_entry(bundle_dir, change)
    tab, status, shown = _search(context, origin)
    assert shown == [] and said in status and "broken" in status, (status, shown)
    assert tab.evaluate("1 + 1") == 2


HOSTILE_URLS = ["javascript:window.__ran = 1", " JavaScript:window.__ran = 2", "java\tscript:window.__ran = 3",
                "\x01javascript:window.__ran = 4", "data:text/html,<script>opener.__ran = 5</script>",
                "vbscript:msgbox(6)"]


def _hostile_records(folder) -> None:
    """Every record's url one of HOSTILE_URLS, each record file listed with its own hash."""
    entry = _entry(folder)
    for number, d in enumerate(bundle.unpack(entry["records"]["files"])):
        records = json.loads((folder / bundle.file_name("r", d)).read_bytes())
        for i, record in enumerate(records):
            record[1] = HOSTILE_URLS[(number + i) % len(HOSTILE_URLS)]
        _put(folder, "r", number, json.dumps(records, ensure_ascii=False).encode())


@pytest.mark.browser
def test_a_record_url_that_is_not_http_or_site_relative_is_shown_without_a_link_and_runs_nothing(
        context, origin, bundle_dir):
    _hostile_records(bundle_dir)
    tab, status, shown = _search(context, origin)
    assert shown and all(r["href"] is None for r in shown), (status, shown)
    page = tab.url
    options = tab.locator("[role=option]")
    for i in range(options.count()):
        options.nth(i).click()
        tab.locator("input[role=combobox]").click()
    tab.locator("input[role=combobox]").press("ArrowDown")
    tab.locator("input[role=combobox]").press("Enter")
    tab.evaluate("() => new Promise((done) => setTimeout(done, 0))")
    assert tab.evaluate("window.__ran") is None and tab.url == page and len(context.pages) == 1


@pytest.mark.browser
def test_on_plain_http_to_another_host_the_box_says_it_cannot_check_its_files(context, origin):
    """Chromium has no SubtleCrypto outside a secure context (https, localhost): the box says so instead
    of searching unchecked. The page is at http://box.test, whose requests go to the server on 127.0.0.1."""
    insecure = "http://box.test"
    context.route(f"{insecure}/**", lambda route: route.continue_(url=route.request.url.replace(insecure, origin)))
    tab, status, shown = _search(context, origin, base=insecure)
    assert tab.evaluate("isSecureContext") is False
    assert shown == [] and "https" in status, (status, shown)


# -- the Python mirror reads the same files with the same checks -------------------------------------


def _python_search(folder, query: str = QUERY):
    from knowledge_build.browser.search import BrowserIndex

    return BrowserIndex(folder).search(query, 8)


def test_the_python_mirror_refuses_a_truncated_shard(bundle_dir):
    from knowledge_build.errors import BrokenBundle

    _, shard = _shard_of(bundle_dir, QUERY)
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    with pytest.raises(BrokenBundle, match=f"{shard.name}.*sha256"):
        _python_search(bundle_dir)


def test_the_python_mirror_refuses_a_damaged_posting_shard(bundle_dir):
    from knowledge_build.errors import BrokenBundle

    term, number, path = _moved_term(bundle_dir)
    assert _python_search(bundle_dir, term)
    _put(bundle_dir, "o", number, b"")
    with pytest.raises(BrokenBundle, match=f"the term '{term}' is not in it"):
        _python_search(bundle_dir, term)
    path = bundle_dir / bundle.file_name("o", bundle.unpack(_entry(bundle_dir)["postings"])[number])
    path.write_bytes(b"\x05")
    with pytest.raises(BrokenBundle, match=f"{path.name}.*sha256"):
        _python_search(bundle_dir, term)


def test_the_python_mirror_refuses_hostile_counts(bundle_dir, tmp_path):
    from knowledge_build.errors import BrokenBundle

    number, _ = _shard_of(bundle_dir, QUERY)
    term = QUERY.encode()
    _put(bundle_dir, "t", number, _varint(len(term)) + term + _varint(2**31) + b"\x01\x01")
    with pytest.raises(BrokenBundle, match="broken"):
        _python_search(bundle_dir)
    for change in ENTRY_CHANGES:
        copy = tmp_path / change
        shutil.copytree(bundle_dir, copy)
        said = _hostile_entry(copy, change)
        with pytest.raises(BrokenBundle, match=said):
            _python_search(copy)


def test_the_python_mirror_gives_no_url_for_a_hostile_link(bundle_dir):
    _hostile_records(bundle_dir)
    found = _python_search(bundle_dir)
    assert found and all(r.url is None for r in found)


@pytest.mark.parametrize("url, kept", [("/math-note/a.html#x", True), ("a.html#x", True), ("#x", True),
                                       ("https://example.org/a#x", True), ("HTTP://example.org/", True),
                                       *((u, False) for u in HOSTILE_URLS),
                                       # the box sets a link as an attribute, never as markup: an entity
                                       # stays text, and this is a path under the site
                                       ("javascript&colon;x", True)])
def test_a_link_is_kept_only_when_it_is_http_or_site_relative(url, kept):
    assert (bundle.safe_link(url) == url) is kept and (bundle.safe_link(url) is None) is not kept


@pytest.mark.browser
def test_chromium_keeps_the_same_links_as_python(context, origin):
    urls = ["/a.html#x", "a.html", "#x", "https://example.org/", "HTTP://example.org/", "//example.org/a",
            "javascript&colon;x", "mailto:a@example.org", "ftp://example.org/", "\x00 https://example.org/",
            "ja\nva\rscript:x", *HOSTILE_URLS]
    tab = context.new_page()
    tab.goto(f"{origin}/box.html")
    got = tab.evaluate("async (urls) => { const m = await import('./v2/knowledge-search.js');"
                       " return urls.map((url) => m.safeLink(url)); }", urls)
    assert got == [bundle.safe_link(u) for u in urls]


@pytest.mark.parametrize("damage", ["no entry point", "entry point not JSON", "a shard missing"])
def test_the_python_mirror_names_a_missing_or_unreadable_file(bundle_dir, damage):
    from knowledge_build.errors import BrokenBundle

    if damage == "a shard missing":
        _shard_of(bundle_dir, QUERY)[1].unlink()
    elif damage == "no entry point":
        (bundle_dir / bundle.ENTRY).unlink()
    else:
        (bundle_dir / bundle.ENTRY).write_bytes(b"{")
    with pytest.raises(BrokenBundle, match="cannot be read|not JSON"):
        _python_search(bundle_dir)


@pytest.mark.browser
def test_a_query_over_2000_characters_is_refused_with_a_message(context, origin):
    """As the CLI and MCP: the field takes at most 2,000 characters, and the module refuses a longer query
    (100,000 characters overflowed the stack before)."""
    tab = context.new_page()
    tab.goto(f"{origin}/box.html")
    assert tab.locator("input[role=combobox]").get_attribute("maxlength") == "2000"
    said = tab.evaluate("""async (query) => { const m = await import('./v2/knowledge-search.js');
        const index = await m.open(new URL('./v2/', location.href));
        try { await index.search(query); return 'searched'; } catch (error) { return error.message; } }""",
                        QUERY * 34_000)
    assert said == "knowledge-search: a query is at most 2000 characters; this one has 102000", said


def test_the_python_mirror_refuses_a_query_over_2000_characters(bundle_dir):
    from knowledge_build.errors import QueryTooLong

    assert _python_search(bundle_dir, (QUERY * 700)[:2000])
    with pytest.raises(QueryTooLong):
        _python_search(bundle_dir, (QUERY * 700)[:2001])


# -- the dense channel's files (browser/dense.py) ----------------------------------------------------------

def _dense_files(folder) -> list:
    entry = _entry(folder)
    return [folder / bundle.file_name(kind, d) for kind, key in bundle.DENSE_KINDS.items()
            for d in bundle.unpack(entry["dense"][key])]


@pytest.mark.browser
def test_a_tampered_code_file_is_refused_with_a_message(context, origin, bundle_dir):
    codes = next(p for p in _dense_files(bundle_dir) if p.name.startswith("knowledge-search-c"))
    data = bytearray(codes.read_bytes())
    data[0] ^= 0xFF  # one row's code changed: a ranking the owner did not build
    codes.write_bytes(bytes(data))
    _, status, shown = _search(context, origin)
    assert shown == [] and codes.name in status and "sha256" in status, (status, shown)


@pytest.mark.browser
def test_without_the_dense_files_the_box_answers_by_its_words_and_warns_in_the_console(context, origin, bundle_dir):
    from knowledge_build.browser.search import BrowserIndex

    for path in _dense_files(bundle_dir):
        path.unlink()
    tab = context.new_page()
    warnings = []
    tab.on("console", lambda message: warnings.append(message.text) if message.type == "warning" else None)
    tab.goto(f"{origin}/box.html", wait_until="load")
    tab.locator("input[role=combobox]").click()
    tab.keyboard.type(QUERY)
    tab.wait_for_function(ANSWERED, arg=QUERY)
    shown = tab.eval_on_selector_all("[role=option] .ks-title", "titles => titles.map(t => t.textContent)")
    assert shown and any(QUERY in title for title in shown), shown
    assert any("without its dense channel" in w for w in warnings), warnings
    lexical = BrowserIndex(bundle_dir)
    lexical.entry.pop("dense")  # what the box ranks by its words alone
    assert len(shown) == len(lexical.search(QUERY, 8))


def test_the_python_mirror_refuses_a_tampered_piece_shard_and_answers_without_missing_dense_files(bundle_dir, caplog):
    from knowledge_build.browser.search import BrowserIndex
    from knowledge_build.errors import BrokenBundle

    index = BrowserIndex(bundle_dir)
    body, reading = index.terms(QUERY)
    shard = bundle_dir / bundle.file_name("v", bundle.unpack(_entry(bundle_dir)["dense"]["pieces"])[
        bundle.fnv1a(body[0]) % len(index.digests["v"])])
    saved = shard.read_bytes()
    shard.write_bytes(saved[:-1] + bytes([saved[-1] ^ 1]))
    with pytest.raises(BrokenBundle, match=f"{shard.name}.*sha256"):
        _python_search(bundle_dir)
    shard.write_bytes(saved)
    dense = _python_search(bundle_dir)
    for path in _dense_files(bundle_dir):
        path.unlink()
    lexical = _python_search(bundle_dir)
    assert lexical and "without its dense channel" in caplog.text
    assert [r.id for r in lexical] != [r.id for r in dense] or [r.score for r in lexical] != [r.score for r in dense]
