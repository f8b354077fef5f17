"""Crawl or fetch pages into the source store: the one path the CLI, the MCP tools and Slack take.

A page is fetched (crawler.py), cut into section and table chunks (extract.py) and stored under its
final URL (store/sources.py: the new chunks replace the old ones in one transaction) with its title
less the site's name (a crawl learns the name from its pages' titles, one page from its og:site_name)
and its language. Errors of one page are that page's: they are counted and reported with their
reason, the other pages go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import KnowledgeBuildError


@dataclass
class IngestReport:
    pages: int = 0  # pages stored
    chunks: int = 0  # chunks stored
    errors: list[dict] = field(default_factory=list)  # {"url", "reason"}: fetched or stored, failed
    skipped: list[dict] = field(default_factory=list)  # links not followed, pages of links only, with the reason
    stored: list[dict] = field(default_factory=list)  # {"url", "title", "chunks"} per stored page
    stopped: list[str] = field(default_factory=list)  # the crawl's limits that left links out

    def to_dict(self) -> dict:
        return {"pages": self.pages, "chunks": self.chunks, "errors": self.errors, "skipped": self.skipped,
                "stored": self.stored, "stopped": self.stopped}


def crawler_settings(config):
    """The crawler's settings from one Config (crawl_* settings, allow_hosts, robots)."""
    from .crawler import CrawlSettings

    return CrawlSettings(timeout=config.crawl_timeout, max_pages=config.max_pages, depth=config.crawl_depth,
                         delay=config.crawl_delay,
                         concurrency=config.crawl_concurrency, respect_robots_txt=config.respect_robots_txt,
                         robots_ttl=config.robots_ttl, allow_hosts=tuple(config.allow_hosts))


async def crawl_into(store, settings, index_url: str, pattern: str | None = None,
                     progress: Callable[[int, int], None] | None = None) -> IngestReport:
    """Every page reached from `index_url` (same site, `pattern`, to the settings' depth and page limit),
    fetched and stored. A page of links alone (a table of contents) stores nothing and is listed as
    skipped, not as an error, when the crawl followed its links."""
    from urllib.parse import urlsplit

    from .crawler import Crawler
    from .extract import crawl_site_names

    crawled = await Crawler(settings).crawl(index_url, pattern, progress=progress)
    report = IngestReport(errors=[_error(e) for e in crawled.errors], skipped=[_error(e) for e in crawled.skipped],
                          stopped=crawled.stopped)
    site_names = crawl_site_names([crawled.index, *crawled.pages] if crawled.index else crawled.pages)
    for page in crawled.pages:
        await _store(store, page, report, site_names.get(urlsplit(page.url).hostname or "", ""),
                     crawled.followed.get(page.url, 0))
    return report


async def add_page(store, settings, url: str) -> IngestReport:
    """One page fetched and stored; its failure is a CrawlError (the caller shows the reason)."""
    from .crawler import Crawler

    page = await Crawler(settings).fetch(url)
    report = IngestReport()
    await _store(store, page, report)
    if report.errors:
        raise PageNotStored(report.errors[0]["reason"])
    return report


class PageNotStored(KnowledgeBuildError):
    """A fetched page gave nothing to store (no text), or the store refused it."""


async def _store(store, page, report: IngestReport, site_name: str = "", followed: int = 0) -> None:
    from .extract import page_chunks

    chunks = page_chunks(page, site_name=site_name)
    if not chunks and followed:
        report.skipped.append({"url": page.url, "reason": f"no text of its own: a page of links ({followed} followed)"})
        return
    if not chunks:
        report.errors.append({"url": page.url, "reason": "no text found in the page"})
        return
    title = chunks[0].title
    try:
        count = await asyncio.to_thread(store.replace_source, page.url, title, chunks)
    except KnowledgeBuildError as exc:
        report.errors.append({"url": page.url, "reason": str(exc)})
        return
    report.pages += 1
    report.chunks += count
    report.stored.append({"url": page.url, "title": title, "chunks": count, "language": chunks[0].language})


def _error(error) -> dict:
    return {"url": error.url, "reason": error.reason}
