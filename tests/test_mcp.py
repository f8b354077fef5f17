"""The MCP server through the SDK's real client, over stdio and streamable HTTP."""

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.model
TOOLS = {"search_knowledge", "get_chunk_by_id", "list_concepts", "save_knowledge", "delete_knowledge",
         "knowledge_import", "knowledge_query", "crawl_site", "add_page", "source_status", "delete_source",
         "outline", "learning_path"}


def _stdio(index_dir, notes, *extra):
    return StdioServerParameters(command=sys.executable, args=["-m", "knowledge_build.cli", "serve", "--index",
                                                               str(index_dir), "--notes", str(notes), *extra])


def _run(coro):
    return asyncio.run(coro)


async def _call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    return result.is_error, (result.content[0].text if result.is_error else result.structured_content)


def test_stdio_tools_answer_and_fail_with_exact_messages(real_index_dir, tmp_path):
    async def session():
        async with Client(_stdio(real_index_dir, tmp_path / "notes.sqlite")) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == TOOLS
            assert all(t.description and "properties" in t.input_schema for t in tools)
            assert all(t.input_schema["properties"] for t in tools if t.name != "source_status")  # takes none
            error, outline = await _call(client, "outline", material="二次方程式")
            page = outline["pages"][0]
            assert not error and page["url"] == "/math-note/junior/二次方程式.html" and page["items"]
            boxes = [i for item in page["items"] for i in [item, *item.get("items", [])] if i["type"] == "rule"]
            assert any(b["id"] == "二次方程式#rule-quadratic-formula" for b in boxes)
            error, path = await _call(client, "learning_path", id="二次方程式#rule-quadratic-formula")
            assert [p["material"] for p in path["before"]] == ["因数分解", "平方根"]
            assert [p["material"] for p in path["after"]] == ["二次関数"] and path["cycles"] == []
            error, path = await _call(client, "learning_path", query="二次方程式を公式で解きたい")
            assert path["found_by"]["id"].startswith("二次方程式#") and path["page"]["material"] == "二次方程式"
            error, data = await _call(client, "search_knowledge", query="たすきがけ", top_k=3)
            assert not error and data["results"][0]["url"] == "/math-note/junior/因数分解.html#method-tasukigake"
            assert data["results"][0]["learns"] and data["results"][0]["source"] == "artifacts"
            error, chunk = await _call(client, "get_chunk_by_id", id="二次方程式#rule-quadratic-formula")
            assert chunk["title"] == "解の公式"
            error, concepts = await _call(client, "list_concepts", type="definition")
            assert concepts["total"] == 16 and {"id", "title", "type", "url", "learns"} <= set(concepts["concepts"][0])
            for tool, arguments, message in [
                ("search_knowledge", {"query": " "}, "query is required"),
                ("knowledge_query", {"query": ""}, "query is required"),
                ("save_knowledge", {"content": ""}, "content is required"),
                ("get_chunk_by_id", {"id": ""}, "id is required"),
                ("get_chunk_by_id", {"id": "無い#rule-x"}, "knowledge not found"),
                ("learning_path", {}, "give id (a page or a box id) or query"),
                ("outline", {"material": "無い"}, "no page or chunk '無い' in the set. Fix: give a page's name (its file "
                 "name without .html, as 'knowledge-build outline' lists them) or a chunk id 'material#anchor'."),
                ("delete_knowledge", {"id": "note-unknown"}, "knowledge not found"),
                ("knowledge_import", {"title": "t", "content": "本文", "chunk_size": 99}, "chunk_size must be between 100 and 10000"),
                ("knowledge_import", {"title": "t", "content": "本文", "chunk_size": 100, "chunk_overlap": 100},
                 "chunk_overlap must be >= 0 and < chunk_size"),
            ]:
                assert await _call(client, tool, **arguments) == (True, message), tool

    _run(session())



def test_the_server_introduces_the_site_its_manifest_names_under_the_settings(real_index_dir, tmp_path):
    from .test_site_identity import with_site

    named = with_site(real_index_dir, tmp_path / "v2", name="数学ノート", description="学習ノート", lang="ja")
    server = _stdio(named, tmp_path / "notes.sqlite")
    server.env = {"KB_SITE_DESCRIPTION": "中学・高校数学の要点"}  # over the default environment

    async def session():
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return client.instructions, tools["search_knowledge"].description

    instructions, description = _run(session())
    assert instructions.startswith("Search the Japanese site “数学ノート” (中学・高校数学の要点). search_knowledge ")
    assert description.startswith("Find what the Japanese site “数学ノート” (中学・高校数学の要点) says about")


def test_a_saved_note_survives_a_restart_until_deleted(real_index_dir, tmp_path):
    notes = tmp_path / "notes.sqlite"

    async def save():
        async with Client(_stdio(real_index_dir, notes)) as client:
            _, saved = await _call(client, "save_knowledge", content="判別式 D が負なら二次方程式は実数解をもたない", tags=["メモ"])
            assert saved["title"] == "判別式 D が負なら二次方程式は実数解をもたない"[:30] and saved["user_id"] == "anonymous"
            _, found = await _call(client, "knowledge_query", query="実数解がない条件")
            assert found["results"][0]["chunk_id"] == saved["id"]
            return saved["id"]

    async def find_and_delete(note_id):
        async with Client(_stdio(real_index_dir, notes)) as client:
            _, found = await _call(client, "knowledge_query", query="実数解がない条件")
            assert [r["chunk_id"] for r in found["results"]] == [note_id]
            assert await _call(client, "delete_knowledge", id=note_id) == (False, {"deleted": note_id})
            _, found = await _call(client, "knowledge_query", query="実数解がない条件")
            assert found["total"] == 0

    _run(find_and_delete(_run(save())))


def test_import_chunks_by_the_documented_rule_and_filters_by_document(real_index_dir, tmp_path):
    long_text = "あいうえお" * 4000  # 20,000 characters without a break
    paragraphs = "\n\n".join(f"第{i}段落。三角比の正弦は斜辺に対する対辺の比である。" for i in range(30))

    async def session():
        async with Client(_stdio(real_index_dir, tmp_path / "notes.sqlite")) as client:
            _, first = await _call(client, "knowledge_import", title="長文", content=long_text, chunk_size=500,
                                   chunk_overlap=50, source="test", category="国語")
            assert first["chunks_created"] == 45  # ceil((20000 - 50) / (500 - 50))
            _, second = await _call(client, "knowledge_import", title="三角比メモ", content=paragraphs, chunk_size=200)
            _, found = await _call(client, "knowledge_query", query="正弦とは", document_id=second["document_id"], top_k=50)
            assert found["total"] == second["chunks_created"]
            assert {r["document"]["id"] for r in found["results"]} == {second["document_id"]}
            assert found["total"] >= 2 and all(r["content"].endswith("。") for r in found["results"])

    _run(session())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(real_index_dir, tmp_path):
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "knowledge_build.cli", "serve", "--index", str(real_index_dir),
                                "--notes", str(tmp_path / "notes.sqlite"), "--transport", "http", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    yield base
    process.terminate()
    process.wait(timeout=10)


def _health(base):
    with urllib.request.urlopen(base + "/health", timeout=5) as response:
        return response.status, json.loads(response.read())


def test_http_health_and_50_concurrent_tool_calls(http_server):
    status, health = _health(http_server)
    assert status == 200 and health["status"] == "healthy" and health["backend"] == "artifacts"

    async def one_client(n):
        async with Client(http_server + "/mcp") as client:
            out = []
            for i in range(10):
                if i % 5 == 4:
                    out.append(await _call(client, "save_knowledge", content=f"メモ{n}-{i}: 平方根の計算"))
                else:
                    out.append(await _call(client, "search_knowledge", query=["たすきがけ", "移項", "判別式"][i % 3]))
            return out

    async def with_health_during_calls():
        calls = asyncio.gather(*(one_client(n) for n in range(5)))
        healthy = await asyncio.to_thread(_health, http_server)
        return await calls, healthy

    results, healthy = _run(with_health_during_calls())
    flat = [r for batch in results for r in batch]
    assert len(flat) == 50 and not any(error for error, _ in flat)
    assert healthy[0] == 200

    async def count_notes():
        async with Client(http_server + "/mcp") as client:
            return await _call(client, "knowledge_query", query="平方根の計算", top_k=50)

    assert _run(count_notes())[1]["total"] == 10


@pytest.mark.db
def test_with_the_database_stopped_search_still_answers(real_index_dir, tmp_path, pg_data_dir):
    from knowledge_build.store import server
    from knowledge_build.store.postgres import connect, publish

    data = pg_data_dir
    url = server.start(data)
    with connect(url) as conn:
        publish(conn, real_index_dir)

    async def session():
        async with Client(_stdio(real_index_dir, tmp_path / "notes.sqlite", "--database-url", url)) as client:
            _, before = await _call(client, "search_knowledge", query="たすきがけ")
            server.stop(data)
            time.sleep(1)
            _, after = await _call(client, "search_knowledge", query="たすきがけ")
            return before, after

    try:
        before, after = _run(session())
    finally:
        server.stop(data)
    assert before["results"][0]["source"] == "database"
    assert after["results"][0]["source"] == "artifacts"
    assert after["results"][0]["id"] == before["results"][0]["id"]
