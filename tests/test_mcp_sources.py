"""The MCP server's web-source tools through the SDK's real client over stdio, the real model and a
real HTTP server on 127.0.0.1 (allowed through KB_ALLOW_HOSTS)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from mcp import Client, StdioServerParameters

from .test_sources_cli import _page, _table_page
from .test_web_crawler import Route, serving

pytestmark = pytest.mark.model


@pytest.fixture
def web():
    start = next(gen := serving())
    yield start({
        "/robots.txt": Route("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
        "/index.html": Route('<html><body><a href="/table.html">表</a><a href="/game.html">城</a></body></html>'),
        "/table.html": Route(_table_page()),
        "/game.html": Route(_page("しれんのしろ", "しれんのしろには伝説のアイテムが眠っています。")),
    })
    next(gen, None)


def _stdio(index_dir, store, host):
    env = {**os.environ, "KB_ALLOW_HOSTS": host, "KB_CRAWL_DELAY": "0"}
    return StdioServerParameters(command=sys.executable, env=env,
                                 args=["-m", "knowledge_build.cli", "serve", "--index", str(index_dir), "--store",
                                       str(store)])


async def _call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    return result.is_error, (result.content[0].text if result.is_error else result.structured_content)


def test_crawl_search_mixed_with_the_site_status_and_delete(real_index_dir, tmp_path, web):
    async def session():
        async with Client(_stdio(real_index_dir, tmp_path / "store.sqlite", web.host)) as client:
            error, report = await _call(client, "crawl_site", url=web.url("/index.html"))
            assert not error and report["pages"] == 2 and report["errors"] == []
            error, found = await _call(client, "search_knowledge", query="しれんのしろのアイテム", top_k=5)
            web_results = [r for r in found["results"] if r["source"] == "web"]
            assert web_results and web_results[0]["source_url"] == web.url("/game.html")
            assert any(r["source"] == "artifacts" for r in found["results"])  # one list, both kinds
            assert all({"relevance", "relevant", "sub_results"} <= set(r) for r in found["results"])
            assert found["relevant"] == any(r["relevant"] for r in found["results"])
            error, rows = await _call(client, "search_knowledge", query="村人 商人 土 の属性", top_k=3)
            table = next(r for r in rows["results"] if r["source"] == "web")
            assert table["source_url"] == web.url("/table.html") and table["sub_results"]
            assert all(s["url"] == table["url"] for s in table["sub_results"])
            assert len({r["url"] for r in rows["results"]}) == len(rows["results"]) == 3  # top_k counts places
            error, only_site = await _call(client, "search_knowledge", query="しれんのしろのアイテム",
                                           include_sources=False)
            assert all(r["source"] != "web" for r in only_site["results"])
            error, status = await _call(client, "source_status")
            assert status["sources"] == 2 and status["chunks"] >= 2
            error, deleted = await _call(client, "delete_source", url=web.url("/game.html"))
            assert not error and deleted["chunks"] >= 1
            error, status = await _call(client, "source_status")
            assert status["sources"] == 1
            assert await _call(client, "add_page", url="http://10.0.0.1/") == (
                True, "http://10.0.0.1/: refused: 10.0.0.1 is a private address")

    asyncio.run(session())
