"""The Slack app: the real slack-bolt App in HTTP mode (make_http_server, the server `knowledge-build
slack --mode http` runs) on 127.0.0.1, driven by Events API requests the tests sign (v0 HMAC), its
WebClient pointed at a fake Slack Web API on loopback that records every call. Pages come from the
loopback web server of the crawler tests; answers from the loopback chat server (tests/chat_server.py).

Every wait is a bounded poll (KB_TEST_TIMEOUT seconds, default 60); nothing is timed. "Posts nothing"
is shown with a barrier: a later, valid event's reply is awaited, and nothing came before it.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from knowledge_build.config import load_config
from knowledge_build.serve import slack_app
from knowledge_build.store.sources import SourceStore

from .chat_server import URL_LINE, ChatServer
from .conftest import FakeEmbedder
from .served import send_json
from .test_web_crawler import Route, serving

TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "60"))
SECRET = "test-signing-secret"
BOT = "UBOT"
CHANNEL = "C0CHANNEL"


class FakeSlackApi:
    """The Slack Web API on 127.0.0.1: POST /api/<method> with a form or JSON body, recorded as
    (method, params) in arrival order; auth.test names the bot, chat.postMessage gives each post a ts."""

    def __init__(self, refuse: tuple[str, ...] = ()):
        self.calls: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                method = self.path.split("?")[0].rsplit("/", 1)[-1]
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8")
                if "json" in (self.headers.get("Content-Type") or ""):
                    params = json.loads(raw or "{}")
                else:
                    params = {k: v[-1] for k, v in urllib.parse.parse_qs(raw).items()}
                with api._lock:
                    api.calls.append((method, params))
                answer = {"ok": True}
                if method in refuse:
                    answer = {"ok": False, "error": "invalid_auth"}
                elif method == "auth.test":
                    answer.update(user_id=BOT, user="knowledge-bot", bot_id="B0BOT", team_id="T0TEAM",
                                  team="test", url="https://test.slack.com/")
                elif method == "chat.postMessage":
                    answer.update(channel=params.get("channel"), ts=f"1800000000.{next(api._ts):06d}",
                                  message={"text": params.get("text")})
                send_json(self, 200, answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def posts(self) -> list[dict]:
        with self._lock:
            return [params for method, params in self.calls if method == "chat.postMessage"]

    def texts(self) -> list[str]:
        return [p["text"] for p in self.posts()]

    def wait_for_posts(self, count: int) -> list[dict]:
        deadline = time.monotonic() + TIMEOUT
        while len(self.posts()) < count:
            if time.monotonic() > deadline:
                pytest.fail(f"expected {count} chat.postMessage calls within {TIMEOUT} s, got {self.texts()}")
            time.sleep(0.02)
        return self.posts()

    def wait_for_text(self, predicate) -> list[dict]:
        deadline = time.monotonic() + TIMEOUT
        while not any(predicate(t) for t in self.texts()):
            if time.monotonic() > deadline:
                pytest.fail(f"no matching post within {TIMEOUT} s; posts: {self.texts()}")
            time.sleep(0.02)
        return self.posts()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class RunningApp:
    """The app served on 127.0.0.1; `mention(text)` sends a signed app_mention event."""

    def __init__(self, app, api: FakeSlackApi):
        self.app, self.api = app, api
        self.server = slack_app.make_http_server(app, "127.0.0.1", 0)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._events = itertools.count(1)

    def post(self, body: str, *, secret: str = SECRET, timestamp: int | None = None, headers=None):
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
        request = urllib.request.Request(self.url + "/slack/events", data=body.encode(), method="POST", headers={
            "Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature, **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def mention(self, text: str, *, thread_ts: str | None = None, **options) -> tuple[str, int]:
        """Sends `<@BOT> text` as a new event; returns (the event's ts, the HTTP status)."""
        n = next(self._events)
        ts = f"1700000000.{n:06d}"
        event = {"type": "app_mention", "user": "U0ALICE", "text": f"<@{BOT}> {text}", "ts": ts,
                 "channel": CHANNEL, "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        body = json.dumps({"token": "unused", "team_id": "T0TEAM", "api_app_id": "A0APP", "type": "event_callback",
                           "event_id": f"Ev{n:06d}", "event_time": int(time.time()), "event": event},
                          ensure_ascii=False)
        status, _ = self.post(body, **options)
        return ts, status

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.app.knowledge_bot.close()


@pytest.fixture
def web():
    yield from serving()


@pytest.fixture
def slack(tmp_path):
    """start(config, **injected) -> a RunningApp with its own fake Slack API; all stopped afterwards."""
    from slack_sdk.web import WebClient

    running = []

    def start(config, **injected) -> RunningApp:
        api = FakeSlackApi()
        client = WebClient(token="xoxb-test", base_url=api.base_url, timeout=int(TIMEOUT))
        app = slack_app.create_app(config, client=client, signing_secret=SECRET, **injected)
        running.append(RunningApp(app, api))
        return running[-1]

    yield start
    for app in running:
        app.close()
        app.api.close()


@pytest.fixture
def store(tmp_path):
    with SourceStore(FakeEmbedder(), tmp_path / "sources.sqlite") as opened:
        yield opened


def _config(tmp_path, site=None, **values):
    hosts = (site.host,) if site is not None else ()
    return load_config(cwd=tmp_path, env={}, allow_hosts=hosts, crawl_delay=0.0, store=str(tmp_path / "unused.sqlite"),
                       **values)


def _page(title: str, text: str) -> str:
    return (f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
            f"<h2>{title}の説明</h2><p>{text}</p></main></body></html>")


def _in_thread(posts: list[dict], ts: str) -> None:
    for post in posts:
        assert post["channel"] == CHANNEL
        assert post.get("thread_ts") == ts, post
        assert not post.get("reply_broadcast"), post


def test_rag_crawl_posts_start_progress_every_interval_and_summary_all_in_the_thread(tmp_path, web, slack, store):
    pages = [f"/docs/{n:02d}.html" for n in range(1, 12)]  # 11 pages, and one missing: 12 links
    links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in [*pages, "/docs/missing.html"])
    routes = {"/docs/": Route(f"<html><head><title>目次</title></head><body><ul>{links}</ul></body></html>")}
    routes.update({p: Route(_page(f"記事{n}", f"記事{n}の本文です。")) for n, p in enumerate(pages, 1)})
    site = web(routes)
    app = slack(_config(tmp_path, site, progress_interval=5), store=store)

    ts, status = app.mention(f"rag crawl <{site.url('/docs/')}> \\.html$")
    assert status == 200
    posts = app.api.wait_for_text(lambda t: t.startswith("└─ 完了"))

    chunks = store.status()["chunks"]
    assert chunks > 0
    missing = site.url("/docs/missing.html")
    assert [p["text"] for p in posts] == [
        "クロールを開始しました... (リンク収集中)",
        "└─ 5ページ取得中...",
        "└─ 10ページ取得中...",
        f"└─ 完了: 11ページ / {chunks}チャンク / エラー: 1件\n   • {missing} — 原因: HTTP 404 Not Found",
    ]
    _in_thread(posts, ts)
    assert store.status()["sources"] == 11


def test_a_crawl_in_a_thread_replies_in_that_thread(tmp_path, web, slack, store):
    site = web({"/": Route("<html><body><a href='/a.html'>a</a></body></html>"),
                "/a.html": Route(_page("ページA", "本文A"))})
    app = slack(_config(tmp_path, site), store=store)

    _, status = app.mention(f"rag crawl {site.url('/')}", thread_ts="1699999999.000001")
    assert status == 200
    posts = app.api.wait_for_text(lambda t: t.startswith("└─ 完了"))
    assert [p["text"].splitlines()[0] for p in posts] == [
        "クロールを開始しました... (リンク収集中)", f"└─ 完了: 1ページ / {store.status()['chunks']}チャンク / エラー: 0件"]
    _in_thread(posts, "1699999999.000001")


def test_request_with_an_invalid_signature_is_refused_and_posts_nothing(tmp_path, slack, store):
    app = slack(_config(tmp_path), store=store)

    _, wrong_secret = app.mention("rag status", secret="not-the-secret")
    _, stale = app.mention("rag status", timestamp=int(time.time()) - 3600)
    assert (wrong_secret, stale) == (401, 401)

    ts, status = app.mention("rag status")  # the barrier: its reply is the first and only post
    assert status == 200
    posts = app.api.wait_for_posts(1)
    assert [p["text"] for p in posts] == ["ナレッジベース統計:\n総チャンク数: 0\nソースURL数: 0"]
    _in_thread(posts, ts)


def test_an_event_slack_delivers_again_is_not_handled_twice(tmp_path, slack, store):
    app = slack(_config(tmp_path), store=store)

    _, status = app.mention("rag status", headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert status == 200  # acknowledged, so Slack stops retrying
    ts, _ = app.mention("rag status")
    posts = app.api.wait_for_posts(1)
    assert len(posts) == 1 and posts[0]["thread_ts"] == ts


def test_url_verification_challenge_is_answered_and_health_is_ok(tmp_path, slack, store):
    app = slack(_config(tmp_path), store=store)

    status, body = app.post(json.dumps({"type": "url_verification", "challenge": "c-123", "token": "x"}))
    assert status == 200 and "c-123" in body
    with urllib.request.urlopen(app.url + "/health", timeout=TIMEOUT) as response:
        assert (response.status, response.read()) == (200, b"ok")


def test_rag_add_status_delete_answer_with_the_design_messages(tmp_path, web, slack, store):
    site = web({"/guide.html": Route(_page("はじめに", "二次方程式の解の公式を使います。"))})
    app = slack(_config(tmp_path, site), store=store)
    url = site.url("/guide.html")

    app.mention(f"rag add <{url}|guide>")  # Slack's link markup, as a pasted URL arrives
    app.api.wait_for_posts(1)
    chunks = store.status()["chunks"]
    assert chunks > 0
    app.mention("rag status")
    app.api.wait_for_posts(2)
    app.mention(f"rag delete <{url}>")
    app.api.wait_for_posts(3)
    app.mention(f"rag delete {url}")
    posts = app.api.wait_for_posts(4)

    assert [p["text"] for p in posts] == [
        f"ページを取り込みました: {url} ({chunks}チャンク)",
        f"ナレッジベース統計:\n総チャンク数: {chunks}\nソースURL数: 1",
        f"削除しました: {url} ({chunks}チャンク)",
        f"エラー: 削除に失敗しました。\nURL: {url}\n原因: 登録されていないURLです",
    ]
    assert store.status()["chunks"] == 0


def test_rag_add_of_a_missing_page_answers_the_error_with_http_404(tmp_path, web, slack, store):
    site = web({})
    app = slack(_config(tmp_path, site), store=store)
    url = site.url("/gone.html")

    ts, _ = app.mention(f"rag add {url}")
    posts = app.api.wait_for_posts(1)
    assert posts[0]["text"] == f"エラー: ページの取り込みに失敗しました。\nURL: {url}\n原因: HTTP 404 Not Found"
    _in_thread(posts, ts)


def test_rag_crawl_whose_index_page_times_out_names_the_timeout(tmp_path, web, slack, store):
    site = web({"/slow/": Route(_page("目次", "…"), sleep=TIMEOUT)})  # answers long after the crawler gave up
    app = slack(_config(tmp_path, site, crawl_timeout=0.5, respect_robots_txt=False), store=store)

    app.mention(f"rag crawl {site.url('/slow/')}")
    posts = app.api.wait_for_posts(2)
    assert [p["text"] for p in posts] == [
        "クロールを開始しました... (リンク収集中)",
        "エラー: クロールに失敗しました。\n原因: 接続がタイムアウトしました (0.5秒)",
    ]


def test_every_rag_command_answers_disabled_when_rag_is_off(tmp_path, web, slack, store):
    site = web({"/a.html": Route(_page("A", "本文"))})
    app = slack(_config(tmp_path, site, rag_enabled=False), store=store)

    commands = [f"rag crawl {site.url('/')}", f"rag add {site.url('/a.html')}", "rag status",
                f"rag delete {site.url('/a.html')}", "rag", "rag frobnicate"]
    for n, command in enumerate(commands, 1):
        app.mention(command)
        app.api.wait_for_posts(n)
    assert app.api.texts() == ["エラー: RAG機能が無効です。管理者に連絡してください。"] * len(commands)
    assert site.paths() == []  # nothing was fetched
    assert store.status()["chunks"] == 0


def test_unknown_or_incomplete_rag_command_answers_the_usage(tmp_path, slack, store):
    app = slack(_config(tmp_path), store=store)

    for n, command in enumerate(["rag frobnicate", "rag add", "rag crawl", "RAG"], 1):
        app.mention(command)
        app.api.wait_for_posts(n)
    assert app.api.texts() == [slack_app.USAGE] * 4
    assert slack_app.USAGE == "使い方: rag crawl <URL> [パターン] / rag add <URL> / rag status / rag delete <URL>"


def test_an_empty_mention_answers_how_to_ask(tmp_path, slack, store):
    app = slack(_config(tmp_path), store=store)

    ts, _ = app.mention("")
    posts = app.api.wait_for_posts(1)
    assert posts[0]["text"] == ("使い方: @bot 質問文 (または rag crawl <URL> [パターン] / rag add <URL> / rag status / "
                                "rag delete <URL>)")
    _in_thread(posts, ts)


def test_mention_question_is_answered_in_the_thread_with_its_sources_at_the_end(
        tmp_path, web, slack, store, fake_index_dir):
    from knowledge_build import KnowledgeIndex

    site = web({"/kaiho.html": Route(_page("解の公式ガイド", "解の公式は二次方程式の解を求める公式です。"))})
    index = KnowledgeIndex.open(fake_index_dir, FakeEmbedder())
    with ChatServer() as chat:
        # The fake embedder's relevance is ~0 for every chunk, site or web: count every result.
        config = _config(tmp_path, site, chat_base_url=chat.url, chat_timeout=TIMEOUT, relevance_threshold=0.0)
        app = slack(config, store=store, index=index)
        app.mention(f"rag add {site.url('/kaiho.html')}")
        app.api.wait_for_posts(1)

        ts, status = app.mention("解の公式ガイドについて教えて")
        assert status == 200
        posts = app.api.wait_for_posts(2)

    answer = posts[1]["text"]
    given = list(dict.fromkeys(URL_LINE.findall(chat.last_prompt)))  # what the chat model was shown
    assert any(url.startswith(site.url("/kaiho.html")) for url in given)  # a section of the added page
    assert answer.startswith("「解の公式ガイドについて教えて」への回答です。")
    assert answer.endswith("\n\n---\n参照元:\n" + "\n".join(f"• {url}" for url in given))
    _in_thread(posts[1:], ts)


def test_question_when_rag_is_off_is_answered_without_context_and_says_so(tmp_path, slack):
    with ChatServer() as chat:
        app = slack(_config(tmp_path, chat_base_url=chat.url, chat_timeout=TIMEOUT, rag_enabled=False))
        ts, _ = app.mention("三平方の定理とは？")
        posts = app.api.wait_for_posts(1)
    assert "URL:" not in chat.last_prompt
    assert posts[0]["text"].endswith("※ 登録された資料を使わずに回答しました（retrieval disabled (rag_enabled: false)）。")
    assert "参照元" not in posts[0]["text"]
    _in_thread(posts, ts)


def test_a_question_is_asked_of_the_site_its_manifest_names(tmp_path, slack, fake_index_dir):
    from .test_site_identity import MATH_SITE, with_site

    named = with_site(fake_index_dir, tmp_path / "v2", name="Rust 入門", description="所有権から学ぶ講座", lang="ja")
    with ChatServer() as chat:
        app = slack(_config(tmp_path, chat_base_url=chat.url, chat_timeout=TIMEOUT, rag_enabled=False, index=named))
        app.mention("所有権とは？")
        app.api.wait_for_posts(1)
    system = chat.requests[-1]["messages"][0]["content"]
    assert system.startswith("あなたは『Rust 入門』（所有権から学ぶ講座）の案内役です。") and MATH_SITE not in system


def test_a_failing_chat_model_is_answered_with_the_error(tmp_path, slack):
    with ChatServer(mode="error", status=500) as chat:
        app = slack(_config(tmp_path, chat_base_url=chat.url, chat_timeout=TIMEOUT, rag_enabled=False))
        app.mention("三平方の定理とは？")
        posts = app.api.wait_for_posts(1)
    text = posts[0]["text"]
    assert text.startswith("エラー: 回答を生成できませんでした。\n原因: the chat model at ")
    assert "HTTP 500" in text


def test_mention_text_unwraps_slack_markup():
    text = "<@UBOT> rag crawl <https://example.com/docs|example.com/docs> /a&amp;b/.*\\.html$ &lt;x&gt;"
    assert slack_app.mention_text(text, "UBOT") == "rag crawl https://example.com/docs /a&b/.*\\.html$ <x>"
    assert slack_app.mention_text("<@UOTHER> と <@UBOT> の違いは？", "UBOT") == "と  の違いは？"


@pytest.mark.parametrize(("mode", "missing", "where"), [
    ("http", "SLACK_SIGNING_SECRET", "Basic Information › App Credentials"),
    ("socket", "SLACK_APP_TOKEN", "App-Level Tokens"),
])
def test_slack_command_without_a_token_names_the_variable_and_where_to_get_it(mode, missing, where):
    from knowledge_build.cli import main

    env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s", "SLACK_APP_TOKEN": "xapp-test", missing: ""}
    result = CliRunner().invoke(main, ["slack", "--mode", mode], env=env)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {missing} is not set") and where in lines[0]
    assert "Traceback" not in result.output


def test_a_bot_token_slack_refuses_is_one_clear_error(tmp_path):
    from slack_sdk.web import WebClient

    api = FakeSlackApi(refuse=("auth.test",))
    try:
        client = WebClient(token="xoxb-wrong", base_url=api.base_url, timeout=int(TIMEOUT))
        with pytest.raises(slack_app.SlackSetupError, match=r"^Slack refused the bot token \(invalid_auth\)\. Fix: set SLACK_BOT_TOKEN"):
            slack_app.create_app(_config(tmp_path), client=client, signing_secret=SECRET)
    finally:
        api.close()


@pytest.mark.parametrize("depth, stored", [(None, 2), (1, 1)])
def test_rag_crawl_follows_links_to_the_crawl_depth_setting(tmp_path, web, slack, store, depth, stored):
    site = web({"/": Route("<html><body><a href='/a.html'>a</a></body></html>"),
                "/a.html": Route(_page("ページA", "本文A").replace("</main>", "<a href='/b.html'>b</a></main>")),
                "/b.html": Route(_page("ページB", "本文B"))})
    app = slack(_config(tmp_path, site, crawl_depth=depth), store=store)

    app.mention(f"rag crawl {site.url('/')}")
    app.api.wait_for_text(lambda t: t.startswith("└─ 完了"))
    assert store.status()["sources"] == stored
    assert ("/b.html" in site.paths()) == (stored == 2)
