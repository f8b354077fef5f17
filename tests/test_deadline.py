"""Every outgoing HTTP call ends within its timeout, however the server answers (issue 37, finding 4).

The server is real (tests/chat_server.py on 127.0.0.1, mode "trickle"): it sends its headers at once,
then one byte every 0.1 s for ever, so no single read ever waits long enough to time out. Each caller
is given a short timeout and must end with its own clear timeout error. Nothing is timed: the test's
guard is a generous outer bound (KB_TEST_TIMEOUT seconds, the subprocess's timeout or a thread's join);
a caller that only bounds each read trickles on past it, and the test fails.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

import pytest

from .chat_server import ChatServer
from .test_slack import _config, slack  # noqa: F401  (slack: the fixture)

GUARD = float(os.environ.get("KB_TEST_TIMEOUT", "60"))
CLI = [sys.executable, "-m", "knowledge_build.cli"]
SECONDS = "1"  # the timeout each caller is given


@pytest.fixture
def trickle():
    with ChatServer(mode="trickle") as server:
        yield server


def _run(*args, env=None, cwd=None):
    try:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=GUARD, cwd=cwd,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        pytest.fail(f"knowledge-build {args[0]} was still waiting on the trickling server after {GUARD:g} s")


def _within_guard(call):
    """call() in a thread: its result or exception, or a failure when it has not ended by the guard."""
    outcome = {}

    def target():
        try:
            outcome["result"] = call()
        except BaseException as exc:  # noqa: BLE001  (handed to the test)
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(GUARD)
    if thread.is_alive():
        pytest.fail(f"still waiting on the trickling server after {GUARD:g} s")
    return outcome


def test_ask_ends_with_the_timeout_error_when_the_chat_server_trickles_bytes(trickle, tmp_path):
    result = _run("ask", "三平方の定理とは？", "--chat-base-url", trickle.url, cwd=tmp_path,
                  env={"KB_CHAT_TIMEOUT": SECONDS, "KB_RAG_ENABLED": "false"})
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == (f"Error: the chat model at {trickle.url}/ did not answer within {SECONDS} s. "
                                     "Fix: check that the server is working, or allow longer with chat_timeout "
                                     "(KB_CHAT_TIMEOUT, seconds).")
    assert len(trickle.requests) == 2  # the request and its one retry, each ended by the deadline


def test_learns_generate_ends_with_the_timeout_error_when_the_chat_server_trickles_bytes(trickle, site_dir):
    result = _run("learns", "generate", "--site", str(site_dir), "--base-url", trickle.url, "--timeout", SECONDS,
                  "--retries", "0", env={"OPENAI_API_KEY": ""})
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith(f"Error: the chat model at {trickle.url}/ did not answer within {SECONDS} s. Fix: ")
    assert lines[0].endswith(f"0 new answer(s) already saved in {site_dir / '_data' / 'learns.generated.yml'}")


@pytest.mark.parametrize("kind", ["query", "documents"])
def test_the_embedder_ends_with_the_timeout_error_when_the_server_trickles_bytes(trickle, kind):
    from knowledge_build.embed.openai import EmbeddingRequestFailed, OpenAIEmbedder

    embedder = OpenAIEmbedder(base_url=trickle.url, dimensions=8, timeout=float(SECONDS), max_retries=0)
    call = (lambda: embedder.embed_query("二次方程式")) if kind == "query" else \
        (lambda: embedder.embed_documents(["二次方程式", "解の公式"]))
    outcome = _within_guard(call)
    assert isinstance(outcome.get("error"), EmbeddingRequestFailed), outcome
    assert str(outcome["error"]) == (f"the embedding server at {trickle.url}/ did not answer in {SECONDS} s (after 0 "
                                     "retries). Check the server, or raise the timeout with --embedding-timeout or "
                                     "KB_EMBEDDING_TIMEOUT.")


def test_the_slack_app_answers_the_timeout_error_when_the_chat_server_trickles_bytes(
        trickle, tmp_path, slack):  # noqa: F811  (the fixture imported above)
    app = slack(_config(tmp_path, chat_base_url=trickle.url, chat_timeout=float(SECONDS), rag_enabled=False))
    ts, status = app.mention("三平方の定理とは？")
    posts = app.api.wait_for_posts(1)  # bounded by KB_TEST_TIMEOUT: a hang fails here
    assert status == 200 and posts[0]["thread_ts"] == ts
    assert posts[0]["text"] == (f"エラー: 回答を生成できませんでした。\n原因: the chat model at {trickle.url}/ did not answer "
                                f"within {SECONDS} s. Fix: check that the server is working, or allow longer with "
                                "chat_timeout (KB_CHAT_TIMEOUT, seconds).")


def test_the_crawler_ends_a_trickling_page_with_its_timeout(trickle):
    from knowledge_build.web.crawler import CrawlError, CrawlSettings, Crawler

    settings = CrawlSettings(timeout=float(SECONDS), respect_robots_txt=False, allow_hosts=("127.0.0.1",))
    page = trickle.url.removesuffix("/v1") + "/page.html"
    outcome = _within_guard(lambda: asyncio.run(Crawler(settings).fetch(page)))
    assert isinstance(outcome.get("error"), CrawlError), outcome
    assert outcome["error"].reason == f"timed out after {SECONDS} s"


def _embedding_timeout(base_url: str):
    from knowledge_build.embed.openai import EmbeddingRequestFailed, OpenAIEmbedder

    embedder = OpenAIEmbedder(base_url=base_url, dimensions=8, timeout=float(SECONDS), max_retries=0)
    outcome = _within_guard(lambda: embedder.embed_query("二次方程式"))
    assert isinstance(outcome.get("error"), EmbeddingRequestFailed), outcome
    assert f"did not answer in {SECONDS} s (after 0 retries)" in str(outcome["error"])


def test_a_server_trickling_its_headers_is_cut_off_too():
    with ChatServer(mode="trickle-headers") as server:
        _embedding_timeout(server.url)
        assert server.paths == ["/v1/embeddings"]


def test_a_trickling_proxy_from_the_environment_is_cut_off_too(trickle, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy"):  # the request goes through it
        monkeypatch.setenv(name, trickle.url.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    _embedding_timeout("http://embeddings.invalid/v1")
    assert trickle.paths == ["http://embeddings.invalid/v1/embeddings"]
