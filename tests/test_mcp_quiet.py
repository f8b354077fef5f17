"""What a real `serve` process writes to stderr, read through the SDK's real stdio client (fake
embedder): no student query unless debug_log is on, and a refused crawl is the client's answer,
not a traceback in the log."""

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from .conftest import ROOT

FAKE_CLI = str(ROOT / "tests" / "fake_cli.py")
QUERY = "たすきがけで因数分解"


async def _call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    return result.is_error, (result.content[0].text if result.is_error else result.structured_content)


def _session(index_dir, tmp_path, calls, **env):
    """Run `calls(client)` against `serve` over stdio; returns (what calls returned, the server's stderr)."""
    params = StdioServerParameters(command=sys.executable, env={**os.environ, **env},
                                   args=[FAKE_CLI, "serve", "--index", str(index_dir), "--store",
                                         str(tmp_path / "store.sqlite")])
    err = tmp_path / "stderr.txt"

    async def run():
        with err.open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return await calls(client)

    returned = asyncio.run(run())
    return returned, err.read_text(encoding="utf-8")


async def _search(client):
    return await _call(client, "search_knowledge", query=QUERY, top_k=3)


def test_serve_does_not_log_queries_or_result_ids_when_debug_log_is_off(fake_index_dir, tmp_path):
    (error, data), stderr = _session(fake_index_dir, tmp_path, _search, KB_DEBUG_LOG="off")
    assert not error and data["results"]
    assert QUERY not in stderr and "retrieve:" not in stderr
    assert not any(r["id"] in stderr for r in data["results"])


def test_serve_logs_queries_when_debug_log_is_info(fake_index_dir, tmp_path):
    (error, data), stderr = _session(fake_index_dir, tmp_path, _search, KB_DEBUG_LOG="info")
    assert not error and f'retrieve: query="{QUERY}"' in stderr
    assert data["results"][0]["id"] in stderr


def test_crawl_site_refusing_a_file_url_answers_the_reason_without_a_traceback(fake_index_dir, tmp_path):
    async def calls(client):
        return (await _call(client, "crawl_site", url="file:///etc/passwd"),
                await _call(client, "crawl_site", url="http://127.0.0.1:9/", pattern="("))

    (refused, bad_pattern), stderr = _session(fake_index_dir, tmp_path, calls)
    assert refused == (True, "file:///etc/passwd: refused: file:// is not http or https")
    assert bad_pattern[0] and "is not a valid regular expression" in bad_pattern[1]
    assert "Traceback" not in stderr and "Error executing tool" not in stderr
