"""The crawl follows links breadth-first within the site and the pattern, to a depth and a page limit
(issue 40): a real HTTP server on 127.0.0.1 serving a documentation site whose home page links only
tables of contents, the real crawler, the SQLite store; the fake embedder stands in for the model."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
from click.testing import CliRunner
from mcp import Client

from knowledge_build import KnowledgeIndex, NoteStore, SearchService
from knowledge_build.cli import main
from knowledge_build.cli import sources as cli_sources
from knowledge_build.serve.mcp_server import create_server
from knowledge_build.store.sources import SourceStore
from knowledge_build.web.crawler import Crawler, CrawlSettings, PageError

from .conftest import FakeEmbedder
from .test_web_crawler import Route, serving


def _doc(title: str, text: str, links: tuple[str, ...] = ()) -> str:
    more = "".join(f'<p>関連: <a href="{href}">{href}</a></p>' for href in links)
    return (f"<html><head><title>{title} — 手引き</title></head><body><nav><a href='/'>ホーム</a></nav>"
            f"<main><h1>{title}</h1><h2>概要</h2><p>{text}</p>{more}</main></body></html>")


def _toc(title: str, links: tuple[str, ...]) -> str:
    """A page of links alone, as Sphinx writes a chapter's table of contents."""
    items = "".join(f'<li class="toctree-l1"><a class="reference internal" href="{h}">{h}</a></li>' for h in links)
    return (f"<html><head><title>{title} — 手引き</title></head><body><div class='body' role='main'>"
            f"<h1>{title}</h1><div class='toctree-wrapper compound'><ul>{items}</ul></div></div></body></html>")


@pytest.fixture
def docs():
    """Home → two tables of contents → the pages; the tables link back home and to each other (cycles),
    a page links one page deeper (depth 3) and that one deeper again (depth 4); a disallowed page and a
    redirect to another host hang off the second table of contents."""
    start = next(gen := serving())
    yield start({
        "/robots.txt": Route("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/": Route(_toc("手引き", ("/toc/1.html", "/toc/2.html"))),
        "/toc/1.html": Route(_toc("第1章", ("/docs/a.html", "/docs/b.html", "/", "/toc/2.html"))),
        "/toc/2.html": Route(_toc("第2章", ("/docs/c.html", "/docs/a.html#setup", "/toc/1.html", "/private/x.html",
                                            "/docs/away.html"))),
        "/docs/a.html": Route(_doc("インストール", "手引きのインストール方法を説明します。", ("/docs/deep.html",))),
        "/docs/b.html": Route(_doc("設定", "設定ファイルの書き方を説明します。", ("/docs/a.html",))),
        "/docs/c.html": Route(_doc("使い方", "コマンドの使い方を説明します。")),
        "/docs/deep.html": Route(_doc("詳しい設定", "細かい設定項目を説明します。", ("/docs/deeper.html",))),
        "/docs/deeper.html": Route(_doc("さらに詳しい設定", "もっと細かい設定項目です。")),
        "/private/x.html": Route(_doc("秘密", "見せない")),
        "/docs/away.html": Route(status=301, headers={"Location": "https://other.example/"}),
    })
    next(gen, None)


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_sources, "_embedder", lambda config: FakeEmbedder())
    monkeypatch.chdir(tmp_path)

    def invoke(site, *args):
        return CliRunner().invoke(main, ["sources", "crawl", site.url("/"), *args, "--store",
                                         str(tmp_path / "store.sqlite"), "--allow-host", site.host, "--delay", "0"])

    return invoke


def test_a_home_that_links_only_tables_of_contents_gives_the_pages_behind_them(docs, run):
    result = run(docs, "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [page["url"] for page in report["stored"]] == [docs.url(p) for p in (
        "/docs/a.html", "/docs/b.html", "/docs/c.html", "/docs/deep.html")]
    skipped = {s["url"]: s["reason"] for s in report["skipped"]}
    assert skipped[docs.url("/toc/1.html")] == "no text of its own: a page of links (2 followed)"
    assert skipped[docs.url("/toc/2.html")] == "no text of its own: a page of links (3 followed)"
    assert skipped[docs.url("/docs/deeper.html")] == "deeper than crawl_depth (3)"
    # Robots.txt and redirects are checked at every depth, as on the index page.
    assert {e["url"]: e["reason"] for e in report["errors"]} == {
        docs.url("/private/x.html"): "disallowed by robots.txt",
        docs.url("/docs/away.html"): "redirect to https://other.example/ not followed (another host; HTTP 301)"}
    assert report["stopped"] == ["crawl_depth (3) reached: 1 link(s) deeper not followed"]
    # Cycles (back home, table to table, page to page, a #fragment) are visited once.
    assert [path for path, n in Counter(docs.paths()).items() if n > 1] == []
    assert "/private/x.html" not in docs.paths() and "/docs/deeper.html" not in docs.paths()


def test_a_depth_limit_stops_where_it_says_and_says_so(docs, run):
    result = run(docs, "--depth", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-2:] == [
        "Done: 3 pages / 3 chunks / errors: 2", "Stopped: crawl_depth (2) reached: 1 link(s) deeper not followed"]
    assert "/docs/deep.html" not in docs.paths()


def test_a_page_limit_stops_where_it_says_and_says_so(docs, run):
    result = run(docs, "--max-pages", "3", "--format", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [page["url"] for page in report["stored"]] == [docs.url("/docs/a.html")]
    assert report["stopped"] == ["max_pages (3) reached: 5 link(s) not followed"]
    assert {s["url"] for s in report["skipped"] if s["reason"] == "over max_pages (3)"} == {
        docs.url(p) for p in ("/docs/b.html", "/docs/c.html", "/private/x.html", "/docs/away.html",
                              "/docs/deep.html")}
    assert sorted(set(docs.paths())) == ["/", "/docs/a.html", "/robots.txt", "/toc/1.html", "/toc/2.html"]


def test_depth_one_takes_only_the_pages_the_index_page_links_to(docs):
    settings = CrawlSettings(delay=0.0, timeout=10.0, allow_hosts=(docs.host,), depth=1)
    report = asyncio.run(Crawler(settings).crawl(docs.url("/")))
    assert [page.url for page in report.pages] == [docs.url("/toc/1.html"), docs.url("/toc/2.html")]
    assert report.skipped[0] == PageError(docs.url("/docs/a.html"), "deeper than crawl_depth (1)")
    assert report.stopped == ["crawl_depth (1) reached: 5 link(s) deeper not followed"]


def test_progress_goes_on_past_the_first_level_in_a_log_that_is_not_a_terminal(docs, run):
    result = run(docs, "--progress-interval", "1")
    lines = [line for line in result.stderr.splitlines() if line.endswith("pages fetched…")]
    # N/M: M is the pages taken so far, growing as each level's links are taken.
    assert lines == ["  1/2 pages fetched…", "  3/7 pages fetched…", "  4/7 pages fetched…", "  5/7 pages fetched…",
                     "  6/7 pages fetched…"]


def test_the_crawl_settings_come_from_the_environment_and_the_flag_wins(docs, run, monkeypatch):
    monkeypatch.setenv("KB_CRAWL_DEPTH", "1")
    assert json.loads(run(docs, "--format", "json").stdout)["stored"] == []
    assert len(json.loads(run(docs, "--depth", "3", "--format", "json").stdout)["stored"]) == 4
    monkeypatch.setenv("KB_CRAWL_DEPTH", "0")
    refused = run(docs)
    assert refused.exit_code == 1 and "crawl_depth must be a positive integer" in refused.output
    assert "Traceback" not in refused.output


def test_the_mcp_crawl_tool_takes_the_depth_and_page_limit(docs, fake_index_dir, tmp_path):
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    sources = SourceStore(FakeEmbedder(), tmp_path / "store.sqlite")
    settings = CrawlSettings(delay=0.0, timeout=10.0, allow_hosts=(docs.host,))
    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"), sources,
                           settings)

    async def session():
        async with Client(server) as client:
            deep = await client.call_tool("crawl_site", {"url": docs.url("/"), "depth": 2})
            assert not deep.is_error and deep.structured_content["pages"] == 3
            assert deep.structured_content["stopped"] == ["crawl_depth (2) reached: 1 link(s) deeper not followed"]
            capped = await client.call_tool("crawl_site", {"url": docs.url("/"), "max_pages": 3})
            assert capped.structured_content["stopped"] == ["max_pages (3) reached: 5 link(s) not followed"]
            refused = await client.call_tool("crawl_site", {"url": docs.url("/"), "depth": 0})
            assert refused.is_error and refused.content[0].text == "depth must be 1 or more"

    try:
        asyncio.run(session())
    finally:
        sources.close()


def test_links_named_as_files_of_another_kind_are_reported_not_fetched():
    """At depth 3 every Sphinx page's link to its `_sources/*.rst.txt` would be fetched only to be refused
    (and images, PDFs the same): a link whose file name says it is no page is skipped with its reason, not
    asked for. A name that says nothing (no ending, .php) is fetched and judged by its Content-Type."""
    start = next(gen := serving())
    site = start({
        "/": Route(_toc("手引き", ("/docs/a.html", "/_sources/a.rst.txt", "/_images/figure.PNG", "/guide.pdf",
                                  "/logo", "/page.php"))),
        "/docs/a.html": Route(_doc("インストール", "手引きのインストール方法を説明します。")),
        "/_sources/a.rst.txt": Route("インストール\n============\n", headers={"Content-Type": "text/plain"}),
        "/_images/figure.PNG": Route(b"\x89PNG\r\n", headers={"Content-Type": "image/png"}),
        "/guide.pdf": Route(b"%PDF-1.4", headers={"Content-Type": "application/pdf"}),
        "/logo": Route(b"\x89PNG\r\n", headers={"Content-Type": "image/png"}),
        "/page.php": Route(_doc("設定", "設定ファイルの書き方を説明します。")),
    })
    try:
        settings = CrawlSettings(delay=0.0, timeout=10.0, allow_hosts=(site.host,))
        report = asyncio.run(Crawler(settings).crawl(site.url("/")))
    finally:
        next(gen, None)
    assert [page.url for page in report.pages] == [site.url("/docs/a.html"), site.url("/page.php")]
    assert report.skipped == [PageError(site.url("/_sources/a.rst.txt"), "not a page (a .txt file, not fetched)"),
                              PageError(site.url("/_images/figure.PNG"), "not a page (a .png file, not fetched)"),
                              PageError(site.url("/guide.pdf"), "not a page (a .pdf file, not fetched)")]
    assert {e.url: e.reason for e in report.errors} == {site.url("/logo"): "not HTML (image/png)"}
    assert not {"/_sources/a.rst.txt", "/_images/figure.PNG", "/guide.pdf"} & set(site.paths())
