"""The MCP server under hostile use, through the SDK's real client and real transports, with the
fake embedder: limits on every call, a bounded stdio, a bearer token over HTTP, SIGTERM."""

import asyncio
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from knowledge_build import KnowledgeIndex, NoteStore, SearchService
from knowledge_build.cli import main
from knowledge_build.serve.mcp_server import create_server

from .conftest import ROOT, FakeEmbedder

FAKE_CLI = str(ROOT / "tests" / "fake_cli.py")
# How long a server may take to start or to stop after SIGTERM; generous, for loaded machines.
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "60"))


async def _call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    return result.is_error, (result.content[0].text if result.is_error else result.structured_content)


def test_every_tool_keeps_its_limits_and_answers_hyphen_queries(fake_index_dir, tmp_path):
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            for query in ("x -- y", "2--3", "i--", "--", "!!!"):
                error, data = await _call(client, "search_knowledge", query=query)
                assert not error and data["total"] <= 5, query
                assert (await _call(client, "knowledge_query", query=query))[0] is False
            error, data = await _call(client, "search_knowledge", query="方程式", top_k=10**9)
            assert len(index) > 50 and not error and data["total"] == 50
            huge = "あ" * 1_000_000
            assert await _call(client, "search_knowledge", query=huge) == (
                True, "the query is 1,000,000 characters long; the limit is 2,000. Ask with the question itself "
                      "(a sentence or a short paragraph), not a whole document.")
            error, message = await _call(client, "knowledge_query", query=huge)
            assert error and message.startswith("the query is 1,000,000 characters long")
            error, message = await _call(client, "knowledge_import", title="t", content="い" * 1_000_000,
                                         chunk_size=100, chunk_overlap=99)
            assert error and message == ("the document is 1,000,000 characters long; the limit is 200,000. "
                                         "Import it in parts.")
            error, message = await _call(client, "knowledge_import", title="t", content="い" * 200_000,
                                         chunk_size=100, chunk_overlap=99)
            assert error and message.startswith("the document would make more than 1,000 chunks at chunk_size 100")
            error, message = await _call(client, "save_knowledge", content="う" * 20_001)
            assert error and message.startswith("the note is 20,001 characters long; the limit is 20,000.")
            assert (await _call(client, "knowledge_query", query="い"))[1]["total"] == 0  # nothing was stored

    asyncio.run(session())


def test_counts_below_one_and_booleans_are_tool_errors_not_one_result(fake_index_dir, tmp_path):
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            for top_k in (0, -1):
                for tool in ("search_knowledge", "knowledge_query"):
                    assert await _call(client, tool, query="方程式", top_k=top_k) == (
                        True, "top_k must be 1 or more (larger than 50 gives 50)")
            for tool in ("search_knowledge", "knowledge_query"):
                assert await _call(client, tool, query="方程式", top_k=True) == (True, "top_k must be a number, not true")
            assert await _call(client, "search_knowledge", query="方程式", min_relevance=False) == (
                True, "min_relevance must be a number, not false")
            assert await _call(client, "list_concepts", limit=-5) == (
                True, "limit must be 1 or more (larger than 500 gives 500)")
            assert await _call(client, "list_concepts", limit=True) == (True, "limit must be a number, not true")
            error, page = await _call(client, "list_concepts", limit=10**6)
            assert not error and page["limit"] == 500 and len(page["concepts"]) <= 500
            error, data = await _call(client, "search_knowledge", query="方程式", top_k=2)
            assert not error and data["total"] == 2

    asyncio.run(session())


def _stdio(index_dir, notes):
    return StdioServerParameters(command=sys.executable, args=[FAKE_CLI, "serve", "--index", str(index_dir),
                                                               "--notes", str(notes)])


def test_stdio_refuses_a_huge_query_and_an_oversized_message_and_keeps_answering(fake_index_dir, tmp_path):
    from mcp.shared.exceptions import MCPError

    async def session():
        async with Client(_stdio(fake_index_dir, tmp_path / "notes.sqlite")) as client:
            error, message = await _call(client, "search_knowledge", query="あ" * 1_000_000)  # 3 MB: a tool error
            assert error and message.startswith("the query is 1,000,000 characters long; the limit is 2,000.")
            with pytest.raises(MCPError, match="over the server's limit of 4,194,304 bytes"):
                await client.call_tool("search_knowledge", {"query": "あ" * 2_000_000})  # 6 MB: refused unread
            error, data = await _call(client, "search_knowledge", query="たすきがけ")
            assert not error and data["results"]

    asyncio.run(session())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_http(index_dir, tmp_path, *extra, **popen):
    port = _free_port()
    process = subprocess.Popen([sys.executable, FAKE_CLI, "serve", "--index", str(index_dir), "--notes",
                                str(tmp_path / "notes.sqlite"), "--transport", "http", "--port", str(port), *extra],
                               stdout=subprocess.DEVNULL, **{"stderr": subprocess.PIPE, **popen})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=5)
            return process, base
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"server did not start: {(process.communicate()[1] or b'').decode()[-2000:]}")
            time.sleep(0.1)


@pytest.fixture
def http_with_token(fake_index_dir, tmp_path):
    process, base = _start_http(fake_index_dir, tmp_path, "--token", "s3cret-token")
    yield base
    process.terminate()
    process.wait(timeout=TIMEOUT)


def _post(url, headers):
    request = urllib.request.Request(url, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def _client_with(url, headers):
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)))


def test_http_with_a_token_refuses_calls_without_it_but_health_stays_open(http_with_token):
    with urllib.request.urlopen(http_with_token + "/health", timeout=10) as response:
        assert response.status == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-token"}):
        status, answer = _post(http_with_token + "/mcp", headers)
        assert status == 401 and answer["www-authenticate"].startswith("Bearer"), headers

    async def with_token(tool, **arguments):
        async with _client_with(http_with_token + "/mcp", {"Authorization": "Bearer s3cret-token"}) as client:
            return await _call(client, tool, **arguments)

    async def without_token():
        async with _client_with(http_with_token + "/mcp", {}) as client:
            return await _call(client, "save_knowledge", content="書けてはいけないメモ")

    error, data = asyncio.run(with_token("search_knowledge", query="たすきがけ"))
    assert not error and data["results"]
    from mcp.shared.exceptions import MCPError

    with pytest.raises(ExceptionGroup) as refused:  # the SDK reports the 401 as a failed session
        asyncio.run(without_token())
    assert refused.group_contains(MCPError, depth=None)
    assert asyncio.run(with_token("knowledge_query", query="書けてはいけないメモ"))[1]["total"] == 0


def test_allowed_host_rejects_other_host_headers(fake_index_dir, tmp_path):
    process, base = _start_http(fake_index_dir, tmp_path, "--allowed-host", "kb.example.org")
    try:
        assert _post(base + "/mcp", {"Host": "kb.example.org"})[0] not in (401, 403, 421)
        assert _post(base + "/mcp", {})[0] == 421  # Host 127.0.0.1:port is not on the list
        assert _post(base + "/mcp", {"Host": "kb.example.org", "Origin": "https://evil.example"})[0] == 403
        assert _post(base + "/mcp", {"Host": "kb.example.org", "Origin": "https://kb.example.org"})[0] not in (403, 421)
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


def test_serving_on_a_public_address_without_a_token_is_refused(tmp_path):
    result = CliRunner().invoke(main, ["serve", "--index", str(tmp_path / "none"), "--transport", "http",
                                       "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: refusing to serve on 0.0.0.0 without a token")
    assert "KB_MCP_TOKEN" in result.output
    # With the token (from the environment) the check passes and the next one (the index) speaks.
    result = CliRunner().invoke(main, ["serve", "--index", str(tmp_path / "none"), "--transport", "http",
                                       "--host", "0.0.0.0"], env={"KB_MCP_TOKEN": "t0ken"})
    assert result.exit_code == 1 and "no artifact set at" in result.output


def test_http_server_refuses_a_message_over_4_mib_and_stops_on_sigterm_with_a_client_connected(
        fake_index_dir, tmp_path):
    process, base = _start_http(fake_index_dir, tmp_path)
    # Only the headers: the server answers from Content-Length alone and reads no body.
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=30)
    connection.putrequest("POST", "/mcp")
    for name, value in (("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
                        ("Content-Length", str(4 * 1024 * 1024 + 1))):
        connection.putheader(name, value)
    connection.endheaders()
    assert connection.getresponse().status == 413
    connection.close()

    async def connected_then_terminated():
        async with Client(base + "/mcp") as client:
            assert (await _call(client, "search_knowledge", query="移項"))[0] is False
            process.send_signal(signal.SIGTERM)
            return await asyncio.to_thread(process.wait, TIMEOUT)

    try:
        returncode = asyncio.run(connected_then_terminated())
    except BaseException:
        process.kill()
        raise
    assert returncode is not None


def _embedding_started(tmp_path, monkeypatch):
    """A function waiting until the server's SlowFakeEmbedder (tests/fake_cli.py) has started a call."""
    started = tmp_path / "embedding-started"
    monkeypatch.setenv("KB_TEST_EMBED_STARTED", str(started))

    def wait(process) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not started.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the server never reached the embedder")
            time.sleep(0.02)
    return wait


def test_sigterm_during_a_long_import_stops_the_http_server_and_stores_nothing(fake_index_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_TEST_EMBED_SECONDS", "1")  # the import below would take 100 seconds
    embedding = _embedding_started(tmp_path, monkeypatch)
    process, base = _start_http(fake_index_dir, tmp_path)

    async def long_import():
        async with Client(base + "/mcp") as client:
            await _call(client, "knowledge_import", title="長い文書", content="あ" * 20_000, chunk_size=200,
                        chunk_overlap=0)

    async def import_then_terminate():
        call = asyncio.create_task(long_import())
        await asyncio.to_thread(embedding, process)  # the call is in the embedder
        process.send_signal(signal.SIGTERM)
        returncode = await asyncio.to_thread(process.wait, TIMEOUT)
        with contextlib.suppress(Exception):  # the client sees its connection go, as it should
            await asyncio.wait_for(call, TIMEOUT)
        return returncode

    try:
        returncode = asyncio.run(import_then_terminate())
    except BaseException:
        process.kill()
        raise
    assert returncode is not None
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite")
    assert store._sql("select count(*) from knowledge_documents").fetchone()[0] == 0


def test_stdio_server_stops_on_sigterm_during_a_long_import(fake_index_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_TEST_EMBED_SECONDS", "1")
    embedding = _embedding_started(tmp_path, monkeypatch)
    process = subprocess.Popen([sys.executable, FAKE_CLI, "serve", "--index", str(fake_index_dir), "--notes",
                                str(tmp_path / "notes.sqlite")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)

    def send(message):
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        process.stdin.flush()

    try:
        send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                         "clientInfo": {"name": "t", "version": "1"}}})
        assert json.loads(process.stdout.readline())["id"] == 1  # up and answering
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "knowledge_import", "arguments": {
            "title": "長い文書", "content": "あ" * 20_000, "chunk_size": 200, "chunk_overlap": 0}}})
        embedding(process)  # the call is in the embedder
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=TIMEOUT) is not None
    finally:
        if process.poll() is None:
            process.kill()
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite")
    assert store._sql("select count(*) from knowledge_documents").fetchone()[0] == 0


def test_allowed_host_with_any_port_accepts_every_port_and_the_default_one(fake_index_dir, tmp_path):
    process, base = _start_http(fake_index_dir, tmp_path, "--allowed-host", "kb.example.org:*")
    try:
        for host in ("kb.example.org", "kb.example.org:8443"):
            assert _post(base + "/mcp", {"Host": host})[0] not in (401, 403, 421), host
            for origin in ("https://kb.example.org", "http://kb.example.org:8080"):
                assert _post(base + "/mcp", {"Host": host, "Origin": origin})[0] not in (403, 421), (host, origin)
        assert _post(base + "/mcp", {"Host": "kb.example.org.evil.example"})[0] == 421
        assert _post(base + "/mcp", {"Host": "evil.example:8443"})[0] == 421
        assert _post(base + "/mcp", {"Host": "kb.example.org", "Origin": "https://evil.example"})[0] == 403
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


def test_stdio_answers_a_line_that_is_not_a_message_with_a_json_rpc_error_and_keeps_answering(fake_index_dir,
                                                                                               tmp_path):
    import select

    process = subprocess.Popen([sys.executable, FAKE_CLI, "serve", "--index", str(fake_index_dir), "--notes",
                                str(tmp_path / "notes.sqlite")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)

    def exchange(line: bytes) -> dict:
        process.stdin.write(line + b"\n")
        process.stdin.flush()
        # The old server read the line, logged it and never answered: the client waited forever.
        ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
        assert ready, f"no answer to {line[:40]!r} within {TIMEOUT} s"
        return json.loads(process.stdout.readline())

    try:
        parse = exchange(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"')  # cut short
        assert parse == {"jsonrpc": "2.0", "id": None,
                         "error": {"code": -32700, "message": "parse error: the line is not JSON"}}
        assert exchange(b"\xff\xfe garbage")["error"]["code"] == -32700
        invalid = exchange(b'{"jsonrpc": "2.0", "id": 7, "params": {}}')  # JSON, but no method
        assert invalid["id"] == 7 and invalid["error"]["code"] == -32600
        process.stdin.write(b"  \n")  # a blank line gets no answer: the next answer is the next line's
        assert exchange(b'{"jsonrpc": "2.0", "id": "x", "method": 5}')["id"] == "x"
        assert exchange(b"[1, 2]") == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "invalid request: the line is JSON but not a JSON-RPC 2.0 message"}}
        answer = exchange(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode())
        assert answer["id"] == 2 and "result" in answer  # still serving
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()


def _open_event_stream(port: int) -> socket.socket:
    stream = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    stream.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n" % port)
    return stream


def _first_bytes(streams: list, count: int) -> list[bytes]:
    """The first `count` bytes each stream got within TIMEOUT in all (b"" for one that got nothing)."""
    import selectors

    selector = selectors.DefaultSelector()  # epoll: select() cannot watch descriptors above 1023
    for stream in streams:
        selector.register(stream, selectors.EVENT_READ)
    got = {}
    deadline = time.monotonic() + TIMEOUT
    while len(got) < len(streams) and (left := deadline - time.monotonic()) > 0:
        for key, _ in selector.select(left):
            got[key.fileobj] = key.fileobj.recv(count)
            selector.unregister(key.fileobj)
    selector.close()
    return [got.get(stream, b"") for stream in streams]


def _read_to_end(stream: socket.socket) -> bytes:
    """Everything the server sends until it ends the response (last chunk) or closes the connection;
    TimeoutError after TIMEOUT in all (keep-alive pings every 15 s must not keep a read going)."""
    data = b""
    deadline = time.monotonic() + TIMEOUT
    while not data.endswith(b"\r\n0\r\n\r\n"):
        stream.settimeout(max(deadline - time.monotonic(), 0.001))
        piece = stream.recv(65536)
        if not piece:
            break
        data += piece
    return data


def test_idle_event_streams_are_bounded_so_health_keeps_answering(fake_index_dir, tmp_path):
    """1,000 idle GET /mcp streams against a server with 256 file descriptors: before, they took
    every descriptor and /health was never accepted; now 10 are kept, the rest get 503 at once."""
    import resource

    def few_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    # Its stderr goes to a file: the accept loop logs every EMFILE, and a full pipe would stop the server.
    log = (tmp_path / "server.log").open("wb")
    process, base = _start_http(fake_index_dir, tmp_path, "--max-streams", "10", "--stream-idle-timeout", "3600",
                                preexec_fn=few_descriptors, stderr=log)
    port = int(base.rsplit(":", 1)[1])
    streams = []
    try:
        streams = [_open_event_stream(port) for _ in range(1000)]
        heads = _first_bytes(streams, 12)
        refused = [stream for stream, head in zip(streams, heads) if head == b"HTTP/1.1 503"]
        assert (heads.count(b"HTTP/1.1 200"), len(refused)) == (10, 990)
        answer = _read_to_end(refused[0])
        assert b"connection: close" in answer and b'"error": "too many open streams"' in answer
        assert b"at most 10 event streams (GET /mcp) open" in answer
        with urllib.request.urlopen(base + "/health", timeout=TIMEOUT) as response:  # all 1,000 still open
            assert response.status == 200 and json.load(response)["status"] == "healthy"
    finally:
        for stream in streams:
            stream.close()
        process.terminate()
        process.wait(timeout=TIMEOUT)
        log.close()


def test_an_idle_event_stream_is_ended_by_the_server_and_gives_its_place_back(fake_index_dir, tmp_path):
    process, base = _start_http(fake_index_dir, tmp_path, env={**os.environ, "KB_MCP_MAX_STREAMS": "2",
                                                               "KB_MCP_STREAM_IDLE_TIMEOUT": "1"})
    port = int(base.rsplit(":", 1)[1])
    streams = []
    try:
        for _ in range(2):
            opened = [_open_event_stream(port), _open_event_stream(port)]
            streams += opened
            # Before, nothing ended them: the read waited until the socket's timeout.
            for stream in opened:
                answer = _read_to_end(stream)
                assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n0\r\n\r\n")
    finally:
        for stream in streams:
            stream.close()
        process.terminate()
        process.wait(timeout=TIMEOUT)


def test_the_stream_limits_default_to_100_streams_and_60_seconds():
    result = CliRunner().invoke(main, ["serve", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "[env var: KB_MCP_MAX_STREAMS; default: 100; x>=1]" in text
    assert "[env var: KB_MCP_STREAM_IDLE_TIMEOUT; default: 60.0; x>0]" in text
