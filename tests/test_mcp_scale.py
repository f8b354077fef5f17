"""Scaling out: two `serve --transport http` processes behind a load balancer that sends each request
to the other one answer one real MCP client; the Host check can be turned on from the environment."""

import asyncio
import http.client
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from mcp import Client

pytestmark = pytest.mark.model
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "60"))
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(base: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server at {base} exited with {process.returncode}"
        try:
            urllib.request.urlopen(base + "/health", timeout=2)
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"the server at {base} did not answer /health within {TIMEOUT}s")


def _serve(index_dir, notes, port, env=None):
    return subprocess.Popen([sys.executable, "-m", "knowledge_build.cli", "serve", "--index", str(index_dir),
                             "--notes", str(notes), "--transport", "http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


class Alternating(ThreadingHTTPServer):
    """A load balancer without sticky sessions: request n goes to upstream n % 2. `served` records
    (upstream index, HTTP method, JSON-RPC method or None, status) per request, and `sessions` the
    Mcp-Session-Id headers the servers answered with."""

    daemon_threads = True

    def __init__(self, upstreams: list[int]):
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstreams = upstreams
        self.turn = itertools.count()
        self.lock = threading.Lock()
        self.served: list[tuple[int, str, str | None, int]] = []
        self.sessions: list[str] = []


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: streams pass through as they come

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._forward()

    def do_POST(self):
        self._forward()

    def do_DELETE(self):
        self._forward()

    def _forward(self):
        with self.server.lock:
            which = next(self.server.turn) % len(self.server.upstreams)
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        method = json.loads(body).get("method") if body.startswith(b"{") else None
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstreams[which], timeout=TIMEOUT)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        response = upstream.getresponse()
        with self.server.lock:
            self.server.served.append((which, self.command, method, response.status))
            self.server.sessions += [v for k, v in response.getheaders() if k.lower() == "mcp-session-id"]
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.end_headers()
        while piece := response.read1(65536):
            self.wfile.write(piece)
            self.wfile.flush()
        upstream.close()


@pytest.fixture
def two_servers(real_index_dir, tmp_path):
    """Two server processes over the same index, each with its own notes file (as two containers
    without a database would have), and the alternating balancer in front of them."""
    ports = [_free_port(), _free_port()]
    processes = [_serve(real_index_dir, tmp_path / f"notes-{i}.sqlite", port) for i, port in enumerate(ports)]
    balancer = Alternating(ports)
    thread = threading.Thread(target=balancer.serve_forever, daemon=True)
    try:
        for process, port in zip(processes, ports):
            _wait_healthy(f"http://127.0.0.1:{port}", process)
        thread.start()
        yield balancer
    finally:
        balancer.shutdown() if thread.is_alive() else None
        balancer.server_close()
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=TIMEOUT)


async def _calls(url: str, mode: str):
    queries = ["たすきがけ", "判別式", "移項", "解の公式"]
    async with Client(url, mode=mode, read_timeout_seconds=TIMEOUT) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        answers = []
        for query in queries:
            result = await client.call_tool("search_knowledge", {"query": query, "top_k": 3})
            answers.append((result.is_error, result.structured_content))
        chunk = await client.call_tool("get_chunk_by_id", {"id": "二次方程式#rule-quadratic-formula"})
        return tools, answers, chunk


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_one_client_s_calls_alternate_between_two_server_processes_and_all_succeed(two_servers, mode):
    """legacy: the initialize handshake of the 2025 protocol, answered by one process, then calls
    answered by the other (a stateful server answers those with 404 "session not found")."""
    url = f"http://127.0.0.1:{two_servers.server_address[1]}/mcp"
    tools, answers, chunk = asyncio.run(_calls(url, mode))

    assert "search_knowledge" in tools
    assert [error for error, _ in answers] == [False] * 4
    assert answers[0][1]["results"][0]["url"] == "/math-note/junior/因数分解.html#method-tasukigake"
    assert not chunk.is_error and chunk.structured_content["title"] == "解の公式"
    calls = [(which, status) for which, verb, method, status in two_servers.served if method == "tools/call"]
    assert len(calls) == 5 and {which for which, _ in calls} == {0, 1}  # both processes answered tool calls
    assert all(status == 200 for _, status in calls)
    assert two_servers.sessions == []  # no session is issued: nothing for one process to remember
    if mode == "legacy":
        handshake = [which for which, _, method, _ in two_servers.served if method == "initialize"]
        assert len(handshake) == 1 and any(which != handshake[0] for which, _ in calls)


def _status(port: int, host_header: str) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", method="POST", headers={
        "Host": host_header, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode())
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_kb_allowed_hosts_turns_the_host_check_on_from_the_environment(real_index_dir, tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "KB_ALLOWED_HOSTS"}
    env["KB_ALLOWED_HOSTS"] = f"kb.example.org, 127.0.0.1:{port}"
    process = _serve(real_index_dir, tmp_path / "notes.sqlite", port, env)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}", process)
        assert _status(port, "kb.example.org") == 200
        assert _status(port, f"127.0.0.1:{port}") == 200
        assert _status(port, "evil.example.com") == 421
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)
