"""The crawler against a real HTTP server on 127.0.0.1: pages fetched, the others reported with their
reason, politeness measured on the server's clock, robots.txt obeyed and cached."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise

import pytest

from knowledge_build.web.chunk import FetchedPage
from knowledge_build.web.crawler import (
    Crawler,
    CrawlError,
    CrawlSettings,
    PageError,
    PatternInvalid,
)


@dataclass
class Route:
    body: bytes | str = b""
    status: int = 200
    headers: dict = field(default_factory=lambda: {"Content-Type": "text/html; charset=utf-8"})
    sleep: float = 0.0  # seconds before answering (a slow page)


class LoopbackSite:
    """A real HTTP server in a thread, answering from `routes` (path -> Route; anything else is 404),
    recording (path, time.monotonic()) of every request as it arrives."""

    def __init__(self, routes: dict[str, Route]):
        self.routes = routes
        self.requests: list[tuple[str, float]] = []
        self.tracker = None  # optional object with lock/now/peak: requests in flight (shareable by servers)
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                site.requests.append((self.path, time.monotonic()))
                tracker = site.tracker
                if tracker is not None:
                    with tracker.lock:
                        tracker.now += 1
                        tracker.peak = max(tracker.peak, tracker.now)
                try:
                    self._answer()
                finally:
                    if tracker is not None:
                        with tracker.lock:
                            tracker.now -= 1

            def _answer(self):
                route = site.routes.get(self.path, Route("<h1>Not here</h1>", status=404))
                if route.sleep:
                    time.sleep(route.sleep)
                body = route.body.encode() if isinstance(route.body, str) else route.body
                try:
                    self.send_response(route.status)
                    for name, value in route.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        # poll_interval: how long shutdown() waits for the loop to notice (0.5 s by default, after every test)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def gaps(self) -> list[float]:
        times = sorted(at for _, at in self.requests)
        return [b - a for a, b in pairwise(times)]


def serving():
    """Yields start(routes) -> a running LoopbackSite; every site started is stopped afterwards. The
    `serve` fixture of each web test module is this generator."""
    sites = []

    def start(routes: dict[str, Route]) -> LoopbackSite:
        site = LoopbackSite(routes)
        site.thread.start()
        sites.append(site)
        return site

    yield start
    for site in sites:
        site.server.shutdown()
        site.server.server_close()


@pytest.fixture
def serve():
    yield from serving()


def _page(title: str, text: str = "本文です。") -> str:
    return f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1><p>{text}</p></main></body></html>"


def _settings(site: LoopbackSite, **overrides) -> CrawlSettings:
    values = {"delay": 0.0, "timeout": 10.0, "allow_hosts": (site.host,)}
    values.update(overrides)
    return CrawlSettings(**values)


# The crawler's own delay in these tests: the gaps it leaves are measured on the server's clock (a lower
# bound, which a slow machine only widens), so a short one shows politeness as well as a long one.
DELAY = 0.05
GOOD = [f"/articles/{n:02d}" for n in range(1, 23)]  # 22 pages that exist
DISALLOWED = ["/private/a", "/private/b", "/private/c"]


@pytest.fixture
def thirty_links(serve):
    """An index linking 30 URLs: 22 good pages, 3 under a robots.txt Disallow, one 404, one redirect to
    a good page, one image (served under a name without an ending: judged by its type), one external domain, and a #fragment duplicate of a good page (plus a
    mailto link)."""
    links = GOOD[:3] + ["/articles/03#history"] + GOOD[3:] + DISALLOWED + [
        "/articles/missing", "/articles/moved", "/images/logo", "https://external.example/page",
        "mailto:teacher@example.com"]
    anchors = "".join(f'<li><a href="{href}">リンク</a></li>' for href in links)
    routes = {
        "/": Route(f"<html><head><title>目次</title></head><body><nav><a href='/'>ホーム</a></nav><ul>{anchors}</ul></body></html>"),
        "/robots.txt": Route("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/articles/moved": Route(status=301, headers={"Location": "/articles/01"}),
        "/images/logo": Route(b"\x89PNG\r\n", headers={"Content-Type": "image/png"}),
    }
    routes.update({path: Route(_page(f"記事{path[-2:]}")) for path in GOOD})
    routes.update({path: Route(_page("秘密")) for path in DISALLOWED})
    return serve(routes)


def test_an_index_of_thirty_links_fetches_the_right_pages_and_reports_the_others(thirty_links):
    site = thirty_links
    progress = []
    report = asyncio.run(Crawler(_settings(site, delay=DELAY)).crawl(site.url("/"), progress=lambda d, t: progress.append((d, t))))

    assert [page.url for page in report.pages] == [site.url(path) for path in GOOD]
    assert report.pages[0].title == "記事01" and "本文です。" in report.pages[0].html
    assert {error.url: error.reason for error in report.errors} == {
        **{site.url(path): "disallowed by robots.txt" for path in DISALLOWED},
        site.url("/articles/missing"): "HTTP 404 Not Found",
        site.url("/images/logo"): "not HTML (image/png)",
    }
    assert report.skipped == [PageError("https://external.example/page", "other domain (external.example)"),
                              PageError("mailto:teacher@example.com", "not http or https (mailto:)"),
                              PageError(site.url("/articles/moved"),
                                        f"redirects to {site.url('/articles/01')}, a page of this crawl")]
    # The #fragment duplicate is one page, fetched once, and so is the page a link redirects to;
    # nothing disallowed was asked for.
    assert site.paths().count("/articles/03") == 1 and site.paths().count("/articles/01") == 1
    assert not [path for path in site.paths() if path.startswith("/private/")]
    assert site.paths().count("/robots.txt") == 1
    assert progress[-1] == (28, 28) and [done for done, _ in progress] == list(range(1, 29))
    # Politeness, on the server's clock: no two requests closer than the delay.
    assert len(site.requests) == 1 + 1 + 22 + 3  # robots.txt, the index, the pages, 404 + redirect + image
    assert min(site.gaps()) >= DELAY


def test_crawl_delay_in_robots_txt_wins_when_larger_than_the_delay(serve):
    routes = {"/": Route("".join(f'<a href="/p{n}">p</a>' for n in range(3))),
              "/robots.txt": Route("User-agent: knowledge-build\nCrawl-delay: 0.5\n", headers={"Content-Type": "text/plain"})}
    routes.update({f"/p{n}": Route(_page(f"p{n}")) for n in range(3)})
    site = serve(routes)
    report = asyncio.run(Crawler(_settings(site, delay=DELAY)).crawl(site.url("/")))
    assert len(report.pages) == 3
    pages = sorted(at for path, at in site.requests if path.startswith("/p"))
    assert min(b - a for a, b in pairwise(pages)) >= 0.5  # robots.txt's, ten times the crawler's own


def test_max_pages_cuts_the_links_and_reports_the_rest_as_skipped(serve):
    routes = {"/": Route("".join(f'<a href="/p{n}">p</a>' for n in range(8)))}
    routes.update({f"/p{n}": Route(_page(f"p{n}")) for n in range(8)})
    site = serve(routes)
    report = asyncio.run(Crawler(_settings(site, max_pages=5)).crawl(site.url("/")))
    assert [page.url for page in report.pages] == [site.url(f"/p{n}") for n in range(5)]
    assert report.skipped == [PageError(site.url(f"/p{n}"), "over max_pages (5)") for n in range(5, 8)]
    assert not {"/p5", "/p6", "/p7"} & set(site.paths())


def test_a_pattern_keeps_only_matching_links(serve):
    routes = {"/": Route('<a href="/blog/1">b</a><a href="/news/1">n</a><a href="/blog/2">b</a>'),
              "/blog/1": Route(_page("b1")), "/blog/2": Route(_page("b2"))}
    site = serve(routes)
    urls, skipped = asyncio.run(Crawler(_settings(site)).links(site.url("/"), r"/blog/\d+$"))
    assert urls == [site.url("/blog/1"), site.url("/blog/2")]
    assert skipped == [PageError(site.url("/news/1"), "does not match the pattern '/blog/\\\\d+$'")]


def test_an_invalid_pattern_is_a_named_error_before_any_request(serve):
    site = serve({"/": Route(_page("index"))})
    with pytest.raises(PatternInvalid, match="not a valid regular expression"):
        asyncio.run(Crawler(_settings(site)).crawl(site.url("/"), "blog/(["))
    assert site.requests == []


def test_a_slow_page_times_out_with_the_configured_seconds(serve):
    site = serve({"/slow": Route(_page("slow"), sleep=3.0)})
    with pytest.raises(CrawlError) as caught:
        asyncio.run(Crawler(_settings(site, timeout=0.5)).fetch(site.url("/slow")))
    assert caught.value.reason == str(caught.value) == "timed out after 0.5 s"


def test_a_body_larger_than_max_bytes_is_an_error_not_a_truncated_page(serve):
    site = serve({"/big": Route(_page("big", "あ" * 2000))})
    with pytest.raises(CrawlError, match=r"^larger than 1,000 bytes$"):
        asyncio.run(Crawler(_settings(site, max_bytes=1000)).fetch(site.url("/big")))


def test_the_loopback_server_is_refused_without_allow_hosts(serve):
    site = serve({"/": Route(_page("index"))})
    with pytest.raises(CrawlError, match="^refused: 127.0.0.1 is a private address$"):
        asyncio.run(Crawler(CrawlSettings(delay=0)).fetch(site.url("/")))
    assert site.requests == []


def test_a_closed_port_is_a_connection_failure(serve):
    site = serve({})
    host = site.host
    site.server.shutdown()
    site.server.server_close()
    with pytest.raises(CrawlError, match="^connection failed: "):
        asyncio.run(Crawler(CrawlSettings(delay=0, allow_hosts=(host,))).fetch(f"http://{host}/"))


def test_one_failing_page_does_not_stop_the_others(serve):
    routes = {"/": Route('<a href="/ok">o</a><a href="/slow">s</a><a href="/ok2">o</a>'),
              "/ok": Route(_page("ok")), "/ok2": Route(_page("ok2")), "/slow": Route(_page("slow"), sleep=3.0)}
    site = serve(routes)
    report = asyncio.run(Crawler(_settings(site, timeout=0.5)).crawl(site.url("/")))
    assert [page.title for page in report.pages] == ["ok", "ok2"]
    assert report.errors == [PageError(site.url("/slow"), "timed out after 0.5 s")]


def test_an_index_page_that_fails_is_a_crawl_error(serve):
    site = serve({})
    with pytest.raises(CrawlError, match="^HTTP 404 Not Found$"):
        asyncio.run(Crawler(_settings(site)).crawl(site.url("/")))


def test_a_shift_jis_page_is_decoded_from_its_meta_charset(serve):
    html = '<html><head><meta charset="Shift_JIS"><title>日本語の題</title></head><body>本文</body></html>'
    site = serve({"/sjis": Route(html.encode("shift_jis"), headers={"Content-Type": "text/html"})})
    page = asyncio.run(Crawler(_settings(site)).fetch(site.url("/sjis#top")))
    assert page.title == "日本語の題" and page.url == site.url("/sjis")
    assert isinstance(page, FetchedPage) and page.crawled_at.endswith("Z") and len(page.crawled_at) == 20


# -- redirects -------------------------------------------------------------------------------------

def _moved(target: str, status: int = 301) -> Route:
    return Route(status=status, headers={"Location": target})


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_same_host_redirect_is_followed_and_the_page_recorded_under_its_final_url(serve, status):
    site = serve({"/docs/a": _moved("/docs/a/", status), "/docs/a/": Route(_page("ページA"))})
    page = asyncio.run(Crawler(_settings(site)).fetch(site.url("/docs/a")))
    assert (page.url, page.title) == (site.url("/docs/a/"), "ページA")
    assert site.paths() == ["/robots.txt", "/docs/a", "/docs/a/"]


def test_five_redirects_are_followed_and_a_sixth_is_an_error(serve):
    routes = {f"/r{n}": _moved(f"/r{n + 1}") for n in range(6)}
    routes.update({"/r5": Route(_page("five")), "/s0": _moved("/r0")})
    site = serve(routes)
    assert asyncio.run(Crawler(_settings(site)).fetch(site.url("/r0"))).url == site.url("/r5")
    routes["/r5"] = _moved("/r6")
    with pytest.raises(CrawlError) as caught:
        asyncio.run(Crawler(_settings(site)).fetch(site.url("/r0")))
    assert caught.value.reason == f"more than 5 redirects (the last to {site.url('/r6')})"
    assert "/r6" not in site.paths()


def test_a_redirect_loop_is_an_error_named_as_a_loop(serve):
    site = serve({"/a": _moved("/b"), "/b": _moved("/a")})
    with pytest.raises(CrawlError) as caught:
        asyncio.run(Crawler(_settings(site)).fetch(site.url("/a")))
    assert caught.value.reason == f"redirect loop: {site.url('/b')} redirects back to {site.url('/a')} (HTTP 301)"
    assert site.paths() == ["/robots.txt", "/a", "/b"]


def test_a_redirect_to_another_host_is_refused_without_asking_it(serve):
    other = serve({"/": Route(_page("other"))})
    target = f"http://localhost:{other.server.server_address[1]}/"
    site = serve({"/away": _moved(target)})
    crawler = Crawler(_settings(site, allow_hosts=(site.host, "localhost")))
    with pytest.raises(CrawlError) as caught:
        asyncio.run(crawler.fetch(site.url("/away")))
    assert caught.value.reason == f"redirect to {target} not followed (another host; HTTP 301)"
    assert other.requests == []


def test_a_redirect_target_is_checked_by_the_address_guard_again(serve):
    other = serve({"/": Route(_page("other"))})
    target = f"http://127.0.0.1:{other.server.server_address[1]}/"  # the same host, a port not allow-listed
    site = serve({"/elsewhere": _moved(target, 302)})
    with pytest.raises(CrawlError) as caught:
        asyncio.run(Crawler(_settings(site)).fetch(site.url("/elsewhere")))
    assert caught.value.reason == f"redirect to {target} not followed (refused: 127.0.0.1 is a private address)"
    assert other.requests == []


def test_a_redirect_target_is_checked_against_robots_txt(serve):
    site = serve({"/robots.txt": Route("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
                  "/open": _moved("/private/page", 307), "/private/page": Route(_page("秘密"))})
    with pytest.raises(CrawlError) as caught:
        asyncio.run(Crawler(_settings(site)).fetch(site.url("/open")))
    assert caught.value.reason == f"redirect to {site.url('/private/page')} not followed (disallowed by robots.txt)"
    assert "/private/page" not in site.paths()


def test_each_redirect_hop_waits_for_the_hosts_turn(serve):
    site = serve({"/a": _moved("/b"), "/b": Route(_page("b"))})
    asyncio.run(Crawler(_settings(site, delay=0.3)).fetch(site.url("/a")))
    assert min(site.gaps()) >= 0.3


def test_an_index_page_that_redirects_gives_links_relative_to_its_final_url(serve):
    site = serve({"/docs": _moved("/docs/"), "/docs/": Route('<a href="intro">i</a><a href="setup">s</a>'),
                  "/docs/intro": Route(_page("intro")), "/docs/setup": Route(_page("setup"))})
    report = asyncio.run(Crawler(_settings(site)).crawl(site.url("/docs")))
    assert report.index_url == site.url("/docs/")
    assert [page.url for page in report.pages] == [site.url("/docs/intro"), site.url("/docs/setup")]


def test_two_links_redirected_to_one_unlisted_page_give_it_once(serve):
    site = serve({"/": Route('<a href="/old1">1</a><a href="/old2">2</a>'), "/old1": _moved("/new"),
                  "/old2": _moved("/new"), "/new": Route(_page("new"))})
    report = asyncio.run(Crawler(_settings(site)).crawl(site.url("/")))
    assert [page.url for page in report.pages] == [site.url("/new")]
    assert report.skipped == [PageError(site.url("/old2"), f"redirects to {site.url('/new')}, a page of this crawl")]


def test_a_redirect_without_location_and_other_3xx_statuses_are_errors(serve):
    site = serve({"/nowhere": Route(status=302, headers={}), "/choices": Route(status=300, headers={})})
    with pytest.raises(CrawlError, match=r"^redirect without a Location header \(HTTP 302\)$"):
        asyncio.run(Crawler(_settings(site)).fetch(site.url("/nowhere")))
    with pytest.raises(CrawlError, match=r"^HTTP 300 Multiple Choices$"):
        asyncio.run(Crawler(_settings(site)).fetch(site.url("/choices")))


def test_the_page_language_is_recorded(serve):
    site = serve({"/en": Route('<html lang="en-US"><head><title>Install</title></head><body><p>Text.</p></body></html>'),
                  "/none": Route(_page("ページ"))})
    assert asyncio.run(Crawler(_settings(site)).fetch(site.url("/en"))).language == "en"
    assert asyncio.run(Crawler(_settings(site)).fetch(site.url("/none"))).language == ""
