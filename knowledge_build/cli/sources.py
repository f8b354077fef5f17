"""CLI for web sources: `sources crawl / add / status / delete / query` (issue 14).

Pages of other sites are fetched (web/crawler.py), cut into section and table chunks and kept in the
writable store that `serve` uses for notes (`store` setting: a SQLite file or a postgresql:// URL).
Every command takes `--format json`; crawl prints a start line, a progress line every
`progress_interval` pages (to stderr, also when it is not a terminal) and a summary.
"""

from __future__ import annotations

import json
import sys

import click

import knowledge_build as kb

from .common import INDEX_OPTION, SITE_OPTION, fail_on_library_errors

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
_STORE = click.option("--store", help="The store: a SQLite file or a postgresql:// URL. Default: setting store "
                                      "(KB_STORE), else database_url, else .knowledge-notes.sqlite.")


def _crawl_options(func):
    options = [
        click.option("--allow-host", "allow_hosts", multiple=True,
                     help="Reach this host although it resolves to a private address (an intranet, a test "
                          "server): NAME or NAME:PORT; repeatable. Default: setting allow_hosts (KB_ALLOW_HOSTS)."),
        click.option("--timeout", "crawl_timeout", type=float,
                     help="Seconds per request (setting crawl_timeout, default 30)."),
        click.option("--delay", "crawl_delay", type=float,
                     help="Seconds between requests to one host (setting crawl_delay, default 1.0; a larger "
                          "robots.txt Crawl-delay wins)."),
        click.option("--no-robots", "no_robots", is_flag=True, default=None,
                     help="Do not read robots.txt (setting respect_robots_txt: false)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group()
def sources():
    """Pages of other web sites, searchable with the site: crawl, add, status, delete, query."""


def _config(**flags):
    no_robots = flags.pop("no_robots", None)
    allow = flags.pop("allow_hosts", None) or None
    return kb.load_config(respect_robots_txt=False if no_robots else None,
                          allow_hosts=tuple(allow) if allow else None, **flags)


def _open_store(config):
    """The source store of the configured target, with the embedder of the site's index when there
    is one (so web chunks and the site's share one vector space), else the configured embedder."""
    from ..config import store_target
    from ..store.sources import SourceStore

    return SourceStore(_embedder(config), store_target(config))


def _embedder(config):
    from ..config import index_dir
    from ..errors import ConfigError

    try:
        path = index_dir(config)
    except ConfigError:
        path = None
    if path is not None and path.exists():
        return kb.KnowledgeIndex.open(path, embedder_options={"base_url": config.base_url,
                                                              "timeout": config.embedding_timeout}).embedder
    return kb.get_embedder(config.embedder, config.embedding_model, config.embedding_dimensions,
                           base_url=config.base_url, timeout=config.embedding_timeout)


@sources.command("crawl")
@click.argument("url")
@click.argument("pattern", required=False)
@click.option("--max-pages", type=click.IntRange(1), help="Pages to fetch at most (setting max_pages, default 500).")
@click.option("--depth", "crawl_depth", type=click.IntRange(1),
              help="Links to follow from the index page: 1 takes only the pages it links to (setting "
                   "crawl_depth, default 3).")
@click.option("--progress-interval", type=click.IntRange(1),
              help="A progress line every N pages (setting progress_interval, default 5).")
@_crawl_options
@_STORE
@INDEX_OPTION
@SITE_OPTION
@_FORMAT
@fail_on_library_errors
def crawl(url, pattern, max_pages, crawl_depth, progress_interval, store, index_dir, site, fmt, **crawl_flags):
    """Fetch the pages reached from the index page URL, breadth-first (same site, up to --depth links
    away, at most --max-pages; PATTERN: a regular expression the page URLs must match) and store their
    sections and tables."""
    import asyncio

    from ..web.ingest import crawl_into, crawler_settings

    config = _config(max_pages=max_pages, crawl_depth=crawl_depth, progress_interval=progress_interval, store=store,
                     index=index_dir, site=site, **crawl_flags)
    target = _open_store(config)
    interval = config.progress_interval
    click.echo(f"Crawl started: {url} (collecting links)", err=True)

    def progress(done: int, total: int) -> None:
        if done % interval == 0 and done < total:
            click.echo(f"  {done}/{total} pages fetched…", err=True)

    try:
        report = asyncio.run(crawl_into(target, crawler_settings(config), url, pattern, progress))
    finally:
        target.close()
    if fmt == "json":
        click.echo(json.dumps({"url": url, **report.to_dict()}, ensure_ascii=False, indent=2))
    else:
        for error in report.errors:
            click.echo(f"  error: {error['url']}: {error['reason']}", err=True)
        click.echo(f"Done: {report.pages} pages / {report.chunks} chunks / errors: {len(report.errors)}")
        for limit in report.stopped:
            click.echo(f"Stopped: {limit}")
    if not report.pages and report.errors:
        sys.exit(1)


@sources.command("add")
@click.argument("url")
@_crawl_options
@_STORE
@INDEX_OPTION
@SITE_OPTION
@_FORMAT
@fail_on_library_errors
def add(url, store, index_dir, site, fmt, **crawl_flags):
    """Fetch one page and store its sections and tables (again: its new chunks replace the old)."""
    import asyncio

    from ..web.ingest import add_page, crawler_settings

    config = _config(store=store, index=index_dir, site=site, **crawl_flags)
    target = _open_store(config)
    try:
        report = asyncio.run(add_page(target, crawler_settings(config), url))
    finally:
        target.close()
    stored = report.stored[0]
    if fmt == "json":
        click.echo(json.dumps(stored, ensure_ascii=False, indent=2))
    else:
        click.echo(f"Added {stored['url']} ({stored['chunks']} chunks)")


@sources.command("status")
@_STORE
@INDEX_OPTION
@SITE_OPTION
@_FORMAT
@fail_on_library_errors
def status(store, index_dir, site, fmt):
    """How many sources and chunks the store holds, and when the last page was fetched."""
    config = kb.load_config(store=store, index=index_dir, site=site)
    target = _open_store(config)
    try:
        stats, listed = target.status(), target.sources()
    finally:
        target.close()
    if fmt == "json":
        click.echo(json.dumps({**stats, "source_list": listed}, ensure_ascii=False, indent=2))
        return
    click.echo(f"Sources: {stats['sources']}\nChunks: {stats['chunks']}\nLast crawl: {stats['last_crawl'] or '-'}")
    for row in listed:
        click.echo(f"  {row['url']}  {row['chunks']} chunks  {row['crawled_at']}  {row['title']}")


@sources.command("delete")
@click.argument("url")
@_STORE
@INDEX_OPTION
@SITE_OPTION
@_FORMAT
@fail_on_library_errors
def delete(url, store, index_dir, site, fmt):
    """Delete a source (a page URL) and exactly its chunks."""
    from ..web.urls import normalise_url

    config = kb.load_config(store=store, index=index_dir, site=site)
    target = _open_store(config)
    try:
        deleted = target.delete_source(normalise_url(url))
    finally:
        target.close()
    if fmt == "json":
        click.echo(json.dumps({"url": url, "deleted": deleted}, ensure_ascii=False, indent=2))
    else:
        click.echo(f"Deleted {url} ({deleted} chunks)")


@sources.command("query")
@click.argument("query")
@click.option("-k", "--top-k", "top_k", type=click.IntRange(1, 50), default=5, show_default=True,
              help="Places to return (1–50): chunks whose links land on the same spot (a table's rows) are one "
              "result, the others listed under it.")
@click.option("--threshold", type=click.FloatRange(0, 1),
              help="Leave out results whose cosine similarity is below this (0–1).")
@click.option("--min-relevance", type=click.FloatRange(0, 1),
              help="Leave out results whose calibrated relevance is below this (0.5: those marked relevant).")
@_STORE
@INDEX_OPTION
@SITE_OPTION
@_FORMAT
@fail_on_library_errors
def query(query, top_k, threshold, min_relevance, store, index_dir, site, fmt):
    """Search the stored web pages (hybrid: vectors and Japanese tokens, fused), with each result's
    relevance as the site's search gives it."""
    from ..serve.retrieval_log import enable, log_retrieval

    if not query.strip():
        raise click.UsageError("the query is empty: give the question to search for")
    config = kb.load_config(store=store, index=index_dir, site=site)
    enable(config.debug_log)
    target = _open_store(config)
    try:
        results = target.query(query, k=top_k, threshold=threshold, min_relevance=min_relevance)
    finally:
        target.close()
    log_retrieval(query, results)
    if fmt == "json":
        click.echo(json.dumps({"query": query, "relevant": any(r["relevant"] for r in results), "results": results,
                               "total": len(results)}, ensure_ascii=False, indent=2))
        return
    if not results:
        click.echo("No results.")
    for rank, r in enumerate(results, 1):
        heading = " › ".join([*r["parents"], r["heading"]] if r["heading"] else r["parents"])
        mark = "" if r["relevant"] else ", not relevant"
        click.echo(f"{rank}. {r['title']}{' › ' + heading if heading else ''}  (relevance {r['relevance']:.3f}{mark}, "
                   f"score {r['score']:.3f}, similarity {r['similarity']:.3f})\n   {r['url']}\n"
                   f"   {_line(r['text'])}")
        for sub in r["sub_results"]:
            click.echo(f"     + {sub['id']}  relevance {sub['relevance']:.3f}  {_line(sub['text'], 80)}")


def _line(text: str, chars: int = 120) -> str:
    return " ".join(text.split())[:chars]
