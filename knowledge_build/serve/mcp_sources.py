"""The MCP server's web-source tools (crawl_site, add_page, source_status, delete_source) and the
mix of web chunks into search_knowledge.

The tools write to the same store as the notes (`store` setting). Over HTTP every request needs the
server's token when one is set, so writes do too; over stdio the client is the local user.
"""

from __future__ import annotations

RRF_K = 60  # reciprocal-rank constant for mixing the site's list and the web's
EXCERPT_CHARS = 300  # of a web chunk's text, as the site's excerpts


def register_source_tools(server, sources, settings, ok, error) -> None:
    """Add the source tools to `server` (a StrictServer) over `sources` (a SourceStore)."""
    import knowledge_build as kb

    from ..web.ingest import add_page as add_one
    from ..web.ingest import crawl_into
    from ..web.urls import normalise_url

    @server.tool()
    async def crawl_site(url: str, pattern: str | None = None, max_pages: int | None = None,
                         depth: int | None = None):
        """Fetch the pages reached from an index page, breadth-first (same site; pattern: a regular
        expression page URLs must match; depth: links followed from the index page, 1 = only the pages
        it links to; max_pages: at most this many; both default to the server's settings) and store
        their sections and tables as web sources. Returns pages, chunks, errors (url, reason), skipped
        links and the limits that stopped the crawl."""
        if not url or not url.strip():
            return error("url is required")
        limit = _with_limits(settings, max_pages, depth)
        if isinstance(limit, str):
            return error(limit)
        try:
            report = await crawl_into(sources, limit, url.strip(), pattern or None)
        except kb.KnowledgeBuildError as exc:  # a refused URL or pattern: the reason is the client's answer
            return error(f"{url.strip()}: {exc}")
        return ok({"url": url.strip(), **report.to_dict()})

    @server.tool()
    async def add_page(url: str):
        """Fetch one page and store its sections and tables (again: the new chunks replace the old)."""
        if not url or not url.strip():
            return error("url is required")
        try:
            report = await add_one(sources, settings, url.strip())
        except kb.KnowledgeBuildError as exc:
            return error(f"{url.strip()}: {exc}")
        return ok(report.stored[0])

    @server.tool()
    def source_status():
        """The web sources stored: counts (sources, chunks, last_crawl) and each source's url, title,
        chunks and crawled_at."""
        return ok({**sources.status(), "sources_list": sources.sources()})

    @server.tool()
    def delete_source(url: str):
        """Delete a web source (a page URL) and exactly its chunks."""
        if not url or not url.strip():
            return error("url is required")
        try:
            deleted = sources.delete_source(normalise_url(url.strip()))
        except kb.KnowledgeBuildError as exc:
            return error(str(exc))
        return ok({"deleted": url.strip(), "chunks": deleted})


def _with_limits(settings, max_pages: int | None, depth: int | None):
    """The settings with the call's limits, or the message refusing one."""
    from dataclasses import replace

    for name, value in (("max_pages", max_pages), ("depth", depth)):
        if value is not None and value < 1:
            return f"{name} must be 1 or more"
    given = {k: v for k, v in (("max_pages", max_pages), ("depth", depth)) if v is not None}
    return replace(settings, **given) if given else settings


def mixed(site_results: list[dict], web_results: list[dict], k: int) -> list[dict]:
    """One list of the site's results and the web's, by reciprocal rank fusion of the two rankings
    (their scores are not on one scale); the site's result first on equal ranks. Both lists are of
    places (ranking/places.py) and a site's url is never a web page's, so `k` counts places here too."""
    ranked = [(1 / (RRF_K + rank), 0, rank, r) for rank, r in enumerate(site_results, 1)]
    ranked += [(1 / (RRF_K + rank), 1, rank, r) for rank, r in enumerate(web_results, 1)]
    ranked.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [r for *_, r in ranked[:k]]


def web_results(sources, query: str, k: int, min_relevance: float | None = None) -> list[dict]:
    """The web sources' best places for search_knowledge (those below `min_relevance` left out), or
    none when the store cannot answer (the database is down, the file is locked): the site's results
    must still come back, so the failure is a logged warning, never the search's error."""
    import logging

    try:
        if not sources.status()["chunks"]:
            return []
        return [web_result(row) for row in sources.query(query, k=k, min_relevance=min_relevance)]
    except Exception as exc:  # any failure of the store: the site's answer goes on without it
        logging.getLogger("knowledge_build.store").warning(
            "web sources left out of this search: the store cannot be read (%s)", exc)
        return []


def web_result(row: dict) -> dict:
    """A source-store result as search_knowledge shows it beside the site's: with its relevance, and
    the other chunks of its place (the same url) in `sub_results`, as the site's results have them."""
    return {"id": row["id"], "url": row["url"], "absolute_url": row["url"], "title": row["title"],
            "heading": row["heading"], "parents": list(row["parents"]), "type": row["kind"],
            "excerpt": row["text"][:EXCERPT_CHARS], "similarity": row["similarity"], "score": row["score"],
            "relevance": row["relevance"], "relevant": row["relevant"],
            "source": "web", "source_url": row["source"], "crawled_at": row["crawled_at"],
            "sub_results": [{"id": sub["id"], "url": sub["url"], "title": sub["title"],
                             "excerpt": sub["text"][:EXCERPT_CHARS], "score": sub["score"],
                             "similarity": sub["similarity"], "relevance": sub["relevance"],
                             "relevant": sub["relevant"]} for sub in row.get("sub_results", ())]}
