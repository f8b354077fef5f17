"""Fetching pages of other sites politely and safely: one page, or the pages reached from an index
page breadth-first, within the site and a pattern, to a depth and a page limit (web/frontier.py).

Every request goes through `Crawler._fetch`: the URL is validated (urls.validate_url: no private
address unless allow-listed), robots.txt is asked (robots.RobotsCache), the request waits for its turn
at the host (one at a time, each starting at least max(delay, Crawl-delay) seconds after the previous
one ended, monotonic clock), at most `concurrency` requests are in flight over all hosts, the body is
capped at `max_bytes` and each request at `timeout` seconds. Redirects (301, 302, 303, 307, 308) to
the same host name are followed, at most MAX_REDIRECTS of them, each target checked again like a
first URL (validate_url, robots.txt, the host's turn); a redirect to another host, a loop or one
redirect too many is the page's error, and a page is recorded under its final URL. What goes wrong
with one page is a `CrawlError` whose message is the reason; a crawl records it as that page's
`PageError` and goes on with the others.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

from ..errors import KnowledgeBuildError
from .chunk import FetchedPage
from .frontier import Frontier
from .robots import RobotsCache
from .urls import UrlRefused, checked_transport, host_key, normalise_url, validate_url

__all__ = ["CrawlError", "CrawlReport", "CrawlSettings", "Crawler", "PageError", "PatternInvalid"]

HTML_TYPES = ("text/html", "application/xhtml+xml")
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class CrawlError(KnowledgeBuildError):
    """One page could not be fetched; str(exc) is the reason ("HTTP 404 Not Found", …)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _NotAllowed(CrawlError):
    """The URL may not be fetched (validate_url, robots.txt): as a redirect's target, not followed."""


class _ListedElsewhere(CrawlError):
    """A redirect leads to a page the crawl fetches from its own link: not fetched twice."""


@dataclass(frozen=True)
class _Redirect:
    target: str  # normalised, absolute
    status: int


class PatternInvalid(KnowledgeBuildError):
    def __init__(self, pattern: str, detail: str):
        super().__init__(f"the URL pattern {pattern!r} is not a valid regular expression ({detail}). Fix: "
                         "give a Python regular expression matched anywhere in the URL, e.g. '/articles/'.")


@dataclass(frozen=True)
class CrawlSettings:
    timeout: float = 30.0  # seconds for one whole request (connect, headers, body)
    max_pages: int = 500  # pages taken in one crawl (the index page not counted)
    depth: int = 3  # links followed from the index page: 1 takes only the pages it links to
    delay: float = 1.0  # seconds between the starts of two requests to one host
    concurrency: int = 4  # requests in flight, all hosts together
    respect_robots_txt: bool = True
    robots_ttl: float = 3600.0  # seconds a host's robots.txt is kept
    allow_hosts: tuple[str, ...] = ()  # hosts ("name" or "name:port") allowed to be private addresses
    user_agent: str = "knowledge-build"
    max_bytes: int = 5_000_000  # a larger body is an error, not truncated


@dataclass(frozen=True)
class PageError:
    url: str
    reason: str


@dataclass
class CrawlReport:
    index_url: str
    pages: list[FetchedPage] = field(default_factory=list)
    errors: list[PageError] = field(default_factory=list)  # linked pages that could not be fetched
    skipped: list[PageError] = field(default_factory=list)  # links not followed, with why
    index: FetchedPage | None = None  # the index page itself (its title helps find the site's name)
    followed: dict[str, int] = field(default_factory=dict)  # page URL -> links taken from it
    stopped: list[str] = field(default_factory=list)  # the limits that left links out ("max_pages (5) reached: …")


class Crawler:
    def __init__(self, settings: CrawlSettings = CrawlSettings()):
        self.settings = settings
        self.robots = RobotsCache(settings.robots_ttl, settings.user_agent, settings.timeout, gate=self._robots_gate)
        self._last_end: dict[str, float] = {}  # host -> monotonic end of its latest request
        self._loop = None
        self._slots: asyncio.Semaphore | None = None
        self._host_locks: dict[str, asyncio.Lock] = {}

    async def fetch(self, url: str) -> FetchedPage:
        """One page; CrawlError(reason) when it cannot be fetched."""
        async with self._client() as client:
            return await self._fetch(client, url)

    async def links(self, index_url: str, pattern: str | None = None) -> tuple[list[str], list[PageError]]:
        """The same-host pages the index page links to (depth 1), absolute, without fragments, once each
        in page order, matching `pattern` (re.search), at most max_pages; and the links left out, with why.
        CrawlError when the index page itself cannot be fetched."""
        regex = _compiled(pattern)
        async with self._client() as client:
            index = await self._fetch(client, index_url)
        frontier = self._frontier(index, regex, pattern)
        urls = frontier.take(index.url, _parsed(index), 1)
        return urls, [PageError(url, reason) for url, reason in frontier.skipped]

    async def crawl(self, index_url: str, pattern: str | None = None,
                    progress: Callable[[int, int], None] | None = None) -> CrawlReport:
        """The pages reached from the index page breadth-first (web/frontier.py: same host, `pattern`,
        to `depth` links away, at most max_pages), each fetched once; each page's failure is its
        PageError. progress(done, total) is called after every page, total being the pages taken so
        far. CrawlError when the index page fails."""
        regex = _compiled(pattern)
        async with self._client() as client:
            index = await self._fetch(client, index_url)
            frontier = self._frontier(index, regex, pattern)
            frontier.seen.add(normalise_url(index_url))
            report = CrawlReport(index.url, index=index)
            level, depth, fetched = frontier.take(index.url, _parsed(index), 1), 1, set()
            while level:
                results, duplicates = await self._fetch_all(client, level, frontier, progress)
                upcoming: list[str] = []
                for url in level:  # page order, whatever order they finished in
                    page = self._record(report, url, results[url], url in duplicates, fetched)
                    if page is not None:
                        frontier.seen.add(page.url)
                        upcoming += frontier.take(page.url, _parsed(page), depth + 1)
                level, depth = upcoming, depth + 1
        report.skipped = [PageError(url, reason) for url, reason in frontier.skipped] + report.skipped
        report.followed, report.stopped = frontier.followed, frontier.stopped()
        return report

    def _frontier(self, index: FetchedPage, regex, pattern) -> Frontier:
        return Frontier(urlsplit(index.url).hostname, self.settings.max_pages, self.settings.depth, regex, pattern,
                        seen={index.url})

    async def _fetch_all(self, client, urls: list[str], frontier: Frontier, progress):
        """The pages at `urls` fetched together (politely: see _gate); a redirect to another page the
        crawl takes is a duplicate, not fetched twice."""
        results: dict[str, FetchedPage | PageError] = {}
        duplicates: set[str] = set()
        taken = set(frontier.taken)

        async def one(url: str) -> None:
            try:
                results[url] = await self._fetch(client, url, taken - {url})
            except _ListedElsewhere as exc:
                results[url] = PageError(url, exc.reason)
                duplicates.add(url)
            except CrawlError as exc:
                results[url] = PageError(url, exc.reason)
            if progress is not None:
                progress(len(frontier.taken) - len(urls) + len(results), len(frontier.taken))

        await asyncio.gather(*(one(url) for url in urls))
        return results, duplicates

    @staticmethod
    def _record(report: CrawlReport, url: str, result, duplicate: bool, fetched: set[str]) -> FetchedPage | None:
        """`result` of the link `url` into the report; the page when it is a new one."""
        if duplicate:
            report.skipped.append(result)
        elif isinstance(result, PageError):
            report.errors.append(result)
        elif result.url in fetched:  # two links redirected to one page
            report.skipped.append(PageError(url, f"redirects to {result.url}, a page of this crawl"))
        else:
            fetched.add(result.url)
            report.pages.append(result)
            return result
        return None

    # -- one request -------------------------------------------------------------------------------

    def _client(self):
        import httpx

        return httpx.AsyncClient(
            follow_redirects=False,
            timeout=httpx.Timeout(self.settings.timeout),
            headers={"User-Agent": self.settings.user_agent},
            transport=checked_transport(self.settings.allow_hosts, max(1, self.settings.concurrency)),
            # No proxy or .netrc from the environment: the address check must be about the host
            # actually connected to, and a crawl must not send the user's credentials anywhere.
            trust_env=False,
        )

    async def _fetch(self, client, url: str, listed: set[str] = frozenset()) -> FetchedPage:
        """The page at `url`, following same-host redirects (see the module docstring); a redirect to
        a URL in `listed` (the crawl's other links) is _ListedElsewhere, not fetched twice."""
        visited: list[str] = []
        while True:
            try:
                result = await self._hop(client, url)
            except _NotAllowed as exc:
                if not visited:
                    raise CrawlError(exc.reason) from None
                raise CrawlError(f"redirect to {url} not followed ({exc.reason})") from None
            if isinstance(result, FetchedPage):
                return result
            visited.append(normalise_url(url))
            target, status = result.target, result.status
            if urlsplit(target).hostname != urlsplit(url).hostname:
                raise CrawlError(f"redirect to {target} not followed (another host; HTTP {status})")
            if target in visited:
                raise CrawlError(f"redirect loop: {url} redirects back to {target} (HTTP {status})")
            if len(visited) > MAX_REDIRECTS:
                raise CrawlError(f"more than {MAX_REDIRECTS} redirects (the last to {target})")
            if target in listed:
                raise _ListedElsewhere(f"redirects to {target}, a page of this crawl")
            url = target

    async def _hop(self, client, url: str) -> FetchedPage | _Redirect:
        """One request: the URL checked (_NotAllowed), its host's turn awaited, the answer read."""
        import httpx

        try:
            url = await validate_url(url, self.settings.allow_hosts)
        except UrlRefused as exc:
            raise _NotAllowed(str(exc)) from None
        gap = self.settings.delay
        try:
            if self.settings.respect_robots_txt:
                allowed, crawl_delay = await self.robots.check(client, url)
                if not allowed:
                    raise _NotAllowed("disallowed by robots.txt")
                gap = max(gap, crawl_delay or 0.0)
            async with self._gate(url, gap):
                async with asyncio.timeout(self.settings.timeout):
                    return await self._get(client, url)
        except (httpx.TimeoutException, TimeoutError):
            raise CrawlError(f"timed out after {_seconds(self.settings.timeout)} s") from None
        except UrlRefused as exc:  # the connect-time check (checked_transport): DNS changed its answer
            raise CrawlError(str(exc)) from None
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            raise CrawlError(f"connection failed: {_describe(exc)}") from None

    async def _get(self, client, url: str) -> FetchedPage | _Redirect:
        async with client.stream("GET", url) as response:
            status = response.status_code
            if status in REDIRECT_STATUSES:
                location = (response.headers.get("location") or "").strip()
                if not location:
                    raise CrawlError(f"redirect without a Location header (HTTP {status})")
                try:
                    return _Redirect(normalise_url(urljoin(url, location)), status)
                except ValueError:
                    raise CrawlError(f"redirect to an invalid URL {location!r} (HTTP {status})") from None
            if status >= 300 or status < 200:
                raise CrawlError(f"HTTP {status} {response.reason_phrase}".rstrip())
            content_type = response.headers.get("content-type", "")
            media = content_type.split(";", 1)[0].strip().lower()
            if media and media not in HTML_TYPES:
                raise CrawlError(f"not HTML ({media})")
            body = await self._body(response)
            html = _decode(body, response.charset_encoding)
        from ..html.main_content import text_language
        from .extract import page_title, parse_html

        root = parse_html(html)
        return FetchedPage(url=url, title=page_title(root), html=html, crawled_at=_now(), language=text_language(root))

    async def _body(self, response) -> bytes:
        limit = self.settings.max_bytes
        too_large = CrawlError(f"larger than {limit:,} bytes")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) > limit:
                raise too_large
        return bytes(data)

    # -- politeness --------------------------------------------------------------------------------

    def _primitives(self) -> tuple[asyncio.Semaphore, dict[str, asyncio.Lock]]:
        # asyncio primitives belong to one event loop; the CLI and tests may run several crawls with
        # one Crawler, each under its own asyncio.run.
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._slots = asyncio.Semaphore(max(1, self.settings.concurrency))
            self._host_locks = {}
        return self._slots, self._host_locks

    @asynccontextmanager
    async def _gate(self, url: str, gap: float):
        """One request to a host at a time, starting at least `gap` seconds after the previous one to
        that host ended, and at most `concurrency` in flight over all hosts. Measured from the end of
        the previous request rather than its start: stricter, and the site is sure to see the gap
        (its own clock sees a request arrive after the previous one was answered)."""
        slots, locks = self._primitives()
        key = host_key(url)
        async with locks.setdefault(key, asyncio.Lock()):
            wait = self._last_end.get(key, float("-inf")) + gap - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            async with slots:
                try:
                    yield
                finally:
                    self._last_end[key] = time.monotonic()

    def _robots_gate(self, robots_url: str):
        return self._gate(robots_url, self.settings.delay)

def _parsed(page: FetchedPage):
    from .extract import parse_html

    return parse_html(page.html)


def _compiled(pattern: str | None):
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise PatternInvalid(pattern, str(exc)) from None


def _decode(body: bytes, header_charset: str | None) -> str:
    """The header's charset, else the page's <meta charset>, else UTF-8; undecodable bytes replaced
    (a page with a few bad bytes is still worth its text)."""
    for candidate in (header_charset, _meta_charset(body), "utf-8"):
        if candidate:
            try:
                return body.decode(codecs.lookup(candidate).name, errors="replace")
            except LookupError:
                continue
    return body.decode("utf-8", errors="replace")


def _meta_charset(body: bytes) -> str | None:
    match = _META_CHARSET.search(body[:4096])
    return match.group(1).decode("ascii") if match else None


def _seconds(value: float) -> str:
    return f"{value:g}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__
