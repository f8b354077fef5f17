"""robots.txt: Disallow obeyed per user agent with the * fallback, RFC 9309's matching (the longest
rule wins, Allow on a tie; `*` and `$`), cached per host for its TTL, a failed fetch allows with a
warning, switchable; and the concurrency bound across hosts."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from knowledge_build.web.crawler import Crawler, CrawlError, CrawlSettings
from tests.test_web_crawler import Route, _page, serving

TEXT = {"Content-Type": "text/plain"}


@pytest.fixture
def serve():
    yield from serving()


def _site(serve, robots: Route | None, pages=("/a", "/b")):
    routes = {"/": Route("".join(f'<a href="{p}">x</a>' for p in pages))}
    routes.update({path: Route(_page(path)) for path in pages})
    if robots is not None:
        routes["/robots.txt"] = robots
    return serve(routes)


def _crawler(site, **overrides) -> Crawler:
    values = {"delay": 0.0, "timeout": 10.0, "allow_hosts": (site.host,)}
    values.update(overrides)
    return Crawler(CrawlSettings(**values))


def test_our_user_agent_group_wins_over_the_star_group(serve):
    robots = Route("User-agent: *\nDisallow: /a\n\nUser-agent: knowledge-build\nDisallow: /b\n", headers=TEXT)
    site = _site(serve, robots)
    report = asyncio.run(_crawler(site).crawl(site.url("/")))
    assert [page.url for page in report.pages] == [site.url("/a")]
    assert [(e.url, e.reason) for e in report.errors] == [(site.url("/b"), "disallowed by robots.txt")]


def test_the_star_group_applies_when_no_group_names_us(serve):
    site = _site(serve, Route("User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /b\n", headers=TEXT))
    with pytest.raises(CrawlError, match="^disallowed by robots.txt$"):
        asyncio.run(_crawler(site).fetch(site.url("/b")))
    assert "/b" not in site.paths()


def test_robots_txt_is_asked_once_per_host_within_its_ttl(serve):
    site = _site(serve, Route("User-agent: *\nDisallow: /b\n", headers=TEXT))
    crawler = _crawler(site)
    asyncio.run(crawler.crawl(site.url("/")))
    asyncio.run(crawler.crawl(site.url("/")))  # a second crawl, its own event loop, within the hour
    assert site.paths().count("/robots.txt") == 1
    assert site.paths().count("/a") == 2


def test_robots_txt_is_asked_again_after_its_ttl(serve):
    site = _site(serve, Route("User-agent: *\nDisallow: /b\n", headers=TEXT))
    crawler = _crawler(site, robots_ttl=0.0)
    asyncio.run(crawler.fetch(site.url("/a")))
    asyncio.run(crawler.fetch(site.url("/a")))
    assert site.paths().count("/robots.txt") == 2


@pytest.mark.parametrize("robots, why", [
    (Route("oops", status=500, headers=TEXT), "HTTP 500 Internal Server Error"),
    (Route("User-agent: *\nDisallow: /\n", headers=TEXT, sleep=3.0), "TimeoutError"),
    (Route(status=302, headers={"Location": "http://elsewhere.example/robots.txt"}), "HTTP 302 Found"),
])
def test_a_robots_txt_that_cannot_be_fetched_allows_with_a_warning(serve, caplog, robots, why):
    site = _site(serve, robots)
    with caplog.at_level(logging.WARNING, logger="knowledge_build.web"):
        page = asyncio.run(_crawler(site, timeout=0.5).fetch(site.url("/a")))
    assert page.url == site.url("/a")
    warnings = [r.getMessage() for r in caplog.records if r.name == "knowledge_build.web"]
    assert len(warnings) == 1 and site.host in warnings[0] and why in warnings[0]
    assert "as if it allowed everything" in warnings[0]


def test_no_robots_txt_allows_everything_without_a_warning(serve, caplog):
    site = _site(serve, None)
    with caplog.at_level(logging.WARNING, logger="knowledge_build.web"):
        report = asyncio.run(_crawler(site).crawl(site.url("/")))
    assert len(report.pages) == 2 and report.errors == []
    assert not [r for r in caplog.records if r.name == "knowledge_build.web"]


def test_respect_robots_txt_off_neither_asks_nor_obeys(serve):
    site = _site(serve, Route("User-agent: *\nDisallow: /\n", headers=TEXT))
    report = asyncio.run(_crawler(site, respect_robots_txt=False).crawl(site.url("/")))
    assert len(report.pages) == 2
    assert "/robots.txt" not in site.paths()


RFC_9309 = """User-agent: *
Disallow: /
Allow: /docs/
Disallow: /docs/*.pdf$
Disallow: /docs/private
Allow: /docs/private/open
Allow: /docs/tie
Disallow: /docs/tie
"""


PDF_ONLY = "User-agent: *\nDisallow: /*.pdf$\n"


@pytest.mark.parametrize("robots, path, allowed", [(PDF_ONLY, "/a.pdf", False), (PDF_ONLY, "/docs/b.pdf", False),
                                                   (PDF_ONLY, "/a.pdf?x=1", True), (PDF_ONLY, "/a", True)])
def test_a_dollar_ends_the_path_with_its_query(serve, robots, path, allowed):
    test_rfc_9309_rules_through_the_crawler(serve, path, allowed, robots)


@pytest.mark.parametrize("path, allowed", [
    ("/docs/a", True),  # Allow: /docs/ (6 characters) is longer than Disallow: / (1)
    ("/b", False),  # only Disallow: / matches
    ("/docs/a.pdf", False),  # Disallow: /docs/*.pdf$ (15) beats Allow: /docs/
    ("/docs/sub/b.pdf", False),  # * spans slashes
    ("/docs/a.pdf?x=1", True),  # $ ends the path with its query: it does not end in .pdf
    ("/docs/a.pdfx", True),
    ("/docs/private/x", False),  # Disallow: /docs/private (13) beats Allow: /docs/
    ("/docs/private/open/y", True),  # Allow: /docs/private/open (18) beats Disallow: /docs/private
    ("/docs/tie/z", True),  # an Allow and a Disallow of the same length: Allow
])
def test_rfc_9309_rules_through_the_crawler(serve, path, allowed, robots=RFC_9309):
    site = serve({"/robots.txt": Route(robots, headers=TEXT), path: Route(_page("page"))})
    crawler = _crawler(site)
    if allowed:
        assert asyncio.run(crawler.fetch(site.url(path))).url == site.url(path)
        assert path in site.paths()
    else:
        with pytest.raises(CrawlError, match="^disallowed by robots.txt$"):
            asyncio.run(crawler.fetch(site.url(path)))
        assert path not in site.paths()


def test_disallow_all_with_allow_docs_crawls_only_the_docs(serve):
    """The seed is allowed, links out of /docs/ are reported, the .cgi link is refused by `$` (a page's
    ending the crawl fetches; a .pdf link is never asked for at all: skipped as no page, frontier.py)."""
    robots = Route("User-agent: *\nDisallow: /\nAllow: /docs/\nDisallow: /*.cgi$\n", headers=TEXT)
    links = "".join(f'<a href="{p}">x</a>' for p in ("/docs/a", "/docs/a.cgi", "/b"))
    site = serve({"/robots.txt": robots, "/docs/": Route(links),
                  "/docs/a": Route(_page("a")), "/docs/a.cgi": Route(_page("cgi")), "/b": Route(_page("b"))})
    report = asyncio.run(_crawler(site).crawl(site.url("/docs/")))
    assert [page.url for page in report.pages] == [site.url("/docs/a")]
    assert "/docs/" in site.paths()  # the seed, allowed, was read for its links
    assert sorted((e.url, e.reason) for e in report.errors) == [
        (site.url("/b"), "disallowed by robots.txt"), (site.url("/docs/a.cgi"), "disallowed by robots.txt")]
    assert "/b" not in site.paths() and "/docs/a.cgi" not in site.paths()


def test_crawl_delay_of_our_group_and_of_the_star_group(serve):
    from knowledge_build.web.robots import RobotsCache

    ours = serve({"/robots.txt": Route("User-agent: *\nCrawl-delay: 1\n\nUser-agent: knowledge-build\n"
                                       "Crawl-delay: 2.5\nDisallow: /x\n", headers=TEXT)})
    star = serve({"/robots.txt": Route("User-agent: *\nCrawl-delay: 1\n", headers=TEXT)})

    async def delays():
        import httpx

        cache = RobotsCache()
        async with httpx.AsyncClient() as client:
            return [await cache.check(client, site.url(path)) for site, path in ((ours, "/a"), (ours, "/x"), (star, "/a"))]

    assert asyncio.run(delays()) == [(True, 2.5), (False, 2.5), (True, 1.0)]


class _InFlight:
    def __init__(self):
        self.lock = threading.Lock()
        self.now = self.peak = 0


def test_concurrency_bounds_requests_in_flight_across_hosts(serve):
    """Two hosts (two servers), slow pages: with concurrency 1 the servers never see two requests at
    once, although the per-host rule alone would allow one per host."""
    tracker = _InFlight()
    sites = [serve({f"/p{n}": Route(_page(f"p{n}"), sleep=0.3) for n in range(2)}) for _ in range(2)]
    for site in sites:
        site.tracker = tracker
    crawler = Crawler(CrawlSettings(delay=0.0, concurrency=1, respect_robots_txt=False,
                                    allow_hosts=tuple(site.host for site in sites)))

    async def main():
        urls = [site.url(f"/p{n}") for site in sites for n in range(2)]
        return await asyncio.gather(*(crawler.fetch(url) for url in urls))

    assert len(asyncio.run(main())) == 4
    assert tracker.peak == 1
