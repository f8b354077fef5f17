"""The Slack app (issue 15): answers @mentions from the knowledge and runs the `rag` commands.

Built on slack-bolt. An app_mention is acknowledged at once (Bolt acks Events API requests before any
listener work) and handled by a lazy listener in Bolt's thread pool, so neither a crawl nor a slow chat
model delays the acknowledgement Slack waits 3 seconds for. An event Slack delivers again
(X-Slack-Retry-Num: our acknowledgement came late) is acknowledged and not handled twice, so a crawl
never runs twice. Every reply goes into the mention's thread (thread_ts: the event's thread_ts, else
its ts), never into the channel. The messages are the design's (seeds/003), in the constants below.

HTTP mode: make_http_server() serves POST /slack/events (Bolt verifies the v0 signature and the
timestamp) and GET /health. Socket Mode: slack_bolt's SocketModeHandler (cli_slack.py).
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import KnowledgeBuildError

log = logging.getLogger("knowledge_build.slack")
BOLT_LOG = "knowledge_build.slack.bolt"  # slack-bolt's and its WebClient's messages

# The design's messages (seeds/003). Progress: `└─ 5ページ取得中...` (no space between the number and
# ページ, as in the design's format line and examples and in the summary line `Nページ`).
START = "クロールを開始しました... (リンク収集中)"
PROGRESS = "└─ {done}ページ取得中..."
SUMMARY = "└─ 完了: {pages}ページ / {chunks}チャンク / エラー: {errors}件"
ADDED = "ページを取り込みました: {url} ({chunks}チャンク)"
STATUS = "ナレッジベース統計:\n総チャンク数: {chunks}\nソースURL数: {sources}"
DELETED = "削除しました: {url} ({chunks}チャンク)"
DISABLED = "エラー: RAG機能が無効です。管理者に連絡してください。"
CRAWL_FAILED = "エラー: クロールに失敗しました。\n原因: {cause}"
ADD_FAILED = "エラー: ページの取り込みに失敗しました。\nURL: {url}\n原因: {cause}"
DELETE_FAILED = "エラー: 削除に失敗しました。\nURL: {url}\n原因: {cause}"
STATUS_FAILED = "エラー: ナレッジベース統計を取得できませんでした。\n原因: {cause}"
ANSWER_FAILED = "エラー: 回答を生成できませんでした。\n原因: {cause}"
INTERNAL_FAILED = "エラー: 処理に失敗しました。\n原因: {cause}"
NOT_STORED = "登録されていないURLです"
USAGE = "使い方: rag crawl <URL> [パターン] / rag add <URL> / rag status / rag delete <URL>"
ASK_USAGE = "使い方: @bot 質問文 (または " + USAGE.removeprefix("使い方: ") + ")"
ERROR_LINES = 10  # failed pages listed under a crawl's summary at most

_TIMEOUT = re.compile(r"^timed out after (\S+) s$")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|[^>]*)?>")
_LEADING_MENTIONS = re.compile(r"^(?:\s*<@[A-Z0-9]+(?:\|[^>]*)?>)+")


class SlackSetupError(KnowledgeBuildError):
    """The Slack app cannot start: a token is refused or Slack cannot be reached."""


def create_app(config, *, token: str | None = None, signing_secret: str | None = None, client=None,
               store=None, index=None, chat_client=None, token_verification: bool = True):
    """A slack_bolt.App answering app_mention events. `client`: a slack_sdk WebClient (with its token
    and base_url) instead of one made from `token`; store/index/chat_client: the source store, the
    site's search and the OpenAI client to use instead of opening them from `config` on first need."""
    from slack_bolt import App
    from slack_bolt.error import BoltError
    from slack_sdk.errors import SlackClientError
    from slack_sdk.web import WebClient

    bot = KnowledgeBot(config, store=store, index=index, chat_client=chat_client)
    # One of client/token only: given both, Bolt warns that the token is unused (it reads SLACK_BOT_TOKEN).
    given = {"client": client} if client is not None else {"token": token}
    if token_verification:
        _check_token(client.token if client is not None else token,
                     client.base_url if client is not None else WebClient.BASE_URL)
    try:  # App calls auth.test again and learns the bot's user id from it
        app = App(**given, signing_secret=signing_secret or "", token_verification_enabled=token_verification,
                  process_before_response=False, logger=logging.getLogger(BOLT_LOG))
    except (BoltError, SlackClientError, OSError) as exc:
        raise SlackSetupError(f"the Slack app cannot start ({exc}). Fix: check SLACK_BOT_TOKEN and the network, "
                              "then start again.") from None

    def acknowledge(ack):
        ack()

    def on_mention(event, client, context, request):
        if request.headers.get("x-slack-retry-num"):
            log.info("Slack delivered event %s again; it is being handled already", event.get("event_ts"))
            return
        bot.handle_mention(event, client, context.get("bot_user_id"))

    app.event("app_mention")(ack=acknowledge, lazy=[on_mention])
    app.knowledge_bot = bot  # for close() by the command that runs the app
    return app


class KnowledgeBot:
    """What the app does with a mention; the store and the search are opened once, when first needed."""

    def __init__(self, config, *, store=None, index=None, chat_client=None):
        self.config = config
        self._store, self._index, self._chat = store, index, chat_client
        self._owned: list = []  # opened here, closed by close()
        self._lock = threading.Lock()
        self._index_failed = False

    def handle_mention(self, event: dict, client, bot_user_id: str | None = None) -> None:
        thread_ts = event.get("thread_ts") or event["ts"]

        def reply(text: str) -> None:
            from slack_sdk.errors import SlackClientError

            try:
                client.chat_postMessage(channel=event["channel"], thread_ts=thread_ts, text=text,
                                        unfurl_links=False, unfurl_media=False)
            except (SlackClientError, OSError) as exc:  # Slack refused a post: the work goes on
                log.warning("posting to Slack failed: %s", exc)

        text = mention_text(event.get("text") or "", bot_user_id)
        try:
            words = text.split(maxsplit=1)
            if words and words[0].lower() == "rag":
                self.command(words[1] if len(words) > 1 else "", reply)
            elif text:
                self.answer(text, reply)
            else:
                reply(ASK_USAGE)
        except Exception as exc:  # the user sees that it failed, the log has the traceback
            log.exception("handling a Slack mention failed")
            reply(INTERNAL_FAILED.format(cause=f"{type(exc).__name__}: {exc}"))

    # -- rag commands ------------------------------------------------------------------------------

    def command(self, text: str, reply) -> None:
        """One `rag …` command (the words after `rag`)."""
        if not self.config.rag_enabled:
            reply(DISABLED)
            return
        args = text.split()
        name = args[0].lower() if args else ""
        if name == "crawl" and len(args) in (2, 3):
            self.crawl(args[1], args[2] if len(args) == 3 else None, reply)
        elif name == "add" and len(args) == 2:
            self.add(args[1], reply)
        elif name == "status" and len(args) == 1:
            self.status(reply)
        elif name == "delete" and len(args) == 2:
            self.delete(args[1], reply)
        else:
            reply(USAGE)

    def crawl(self, url: str, pattern: str | None, reply) -> None:
        from ..web.ingest import crawl_into, crawler_settings

        reply(START)
        interval = self.config.progress_interval

        def progress(done: int, total: int) -> None:
            if done % interval == 0 and done < total:
                reply(PROGRESS.format(done=done))

        try:
            report = asyncio.run(crawl_into(self.sources(), crawler_settings(self.config), url, pattern, progress))
        except KnowledgeBuildError as exc:
            reply(CRAWL_FAILED.format(cause=cause(exc)))
            return
        reply(summary(report))

    def add(self, url: str, reply) -> None:
        from ..web.ingest import add_page, crawler_settings

        try:
            report = asyncio.run(add_page(self.sources(), crawler_settings(self.config), url))
        except KnowledgeBuildError as exc:
            reply(ADD_FAILED.format(url=url, cause=cause(exc)))
            return
        stored = report.stored[0]
        reply(ADDED.format(url=stored["url"], chunks=stored["chunks"]))

    def status(self, reply) -> None:
        try:
            stats = self.sources().status()
        except KnowledgeBuildError as exc:
            reply(STATUS_FAILED.format(cause=cause(exc)))
            return
        reply(STATUS.format(chunks=stats["chunks"], sources=stats["sources"]))

    def delete(self, url: str, reply) -> None:
        from ..store.common import NotFound
        from ..web.urls import normalise_url

        try:
            deleted = self.sources().delete_source(normalise_url(url))
        except NotFound:
            reply(DELETE_FAILED.format(url=url, cause=NOT_STORED))
            return
        except KnowledgeBuildError as exc:
            reply(DELETE_FAILED.format(url=url, cause=cause(exc)))
            return
        reply(DELETED.format(url=url, chunks=deleted))

    # -- questions ---------------------------------------------------------------------------------

    def answer(self, question: str, reply) -> None:
        from .answer import ask, format_answer

        enabled = self.config.rag_enabled
        try:
            result = ask(question, self.config, index=self.search() if enabled else None,
                         sources=self._sources_or_none() if enabled else None, client=self._chat, channel="slack")
        except KnowledgeBuildError as exc:
            reply(ANSWER_FAILED.format(cause=str(exc)))
            return
        reply(format_answer(result, self.config.show_sources))

    # -- what is opened once -----------------------------------------------------------------------

    def search(self):
        """The site's search (artifacts, and the database when configured); None when it cannot be
        opened (ask then answers without the site and says why)."""
        with self._lock:
            if self._index is None and not self._index_failed:
                from .service import open_search

                try:
                    self._index = open_search(self.config)
                    self._owned.append(self._index)
                except KnowledgeBuildError as exc:
                    log.warning("the site's search cannot be opened: %s", exc)
                    self._index_failed = True
            return self._index

    def sources(self):
        """The web sources store (the `store` setting), with the site index's embedder when there is one."""
        index = self.search()
        with self._lock:
            if self._store is None:
                from ..config import store_target
                from ..store.sources import SourceStore

                self._store = SourceStore(_embedder(self.config, index), store_target(self.config))
                self._owned.append(self._store)
            return self._store

    def _sources_or_none(self):
        """The store for a question: None when it does not exist yet (asking creates no file) or
        cannot be opened (ask then searches the site alone)."""
        from pathlib import Path

        from ..config import is_database_url, store_target

        try:
            if self._store is None:
                target = store_target(self.config)
                if not is_database_url(target) and not Path(target).is_file():
                    return None
            return self.sources()
        except KnowledgeBuildError as exc:
            log.warning("the web sources store cannot be opened: %s", exc)
            return None

    def close(self) -> None:
        for opened in reversed(self._owned):
            close = getattr(opened, "close", None)
            if close is not None:
                close()
        self._owned.clear()


def _check_token(token: str | None, api_url: str) -> None:
    """auth.test with the bot token; SlackSetupError saying what is wrong (refused, or Slack unreachable).
    Its client logs nowhere: the one error line is the report."""
    from slack_sdk.errors import SlackApiError, SlackClientError
    from slack_sdk.web import WebClient

    quiet = logging.getLogger("knowledge_build.slack.token_check")
    quiet.propagate, quiet.disabled = False, True
    try:
        WebClient(token=token, base_url=api_url, logger=quiet).auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error") if exc.response is not None else None
        raise SlackSetupError(f"Slack refused the bot token ({error or exc}). Fix: set SLACK_BOT_TOKEN to the "
                              "app's Bot User OAuth Token (xoxb-…, Slack app settings › OAuth & Permissions, "
                              "after installing the app to the workspace).") from None
    except (SlackClientError, OSError) as exc:
        raise SlackSetupError(f"Slack's Web API at {api_url} cannot be reached ({exc}). Fix: check the "
                              "network connection (and a proxy), then start again.") from None


def _embedder(config, index):
    inner = getattr(index, "index", index)  # a SearchService wraps the KnowledgeIndex
    embedder = getattr(inner, "embedder", None)
    if embedder is not None:
        return embedder
    from ..embed import get_embedder

    return get_embedder(config.embedder, config.embedding_model, config.embedding_dimensions,
                        base_url=config.base_url, timeout=config.embedding_timeout)


# -- text ------------------------------------------------------------------------------------------

def mention_text(text: str, bot_user_id: str | None = None) -> str:
    """The mention's words: without the leading mentions (and the bot's own anywhere), Slack's link
    markup <https://x|label> as the bare URL, and &lt; &gt; &amp; as the characters typed."""
    text = _LEADING_MENTIONS.sub("", text)
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", "", text)
    text = _LINK.sub(lambda m: m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


def cause(exc: BaseException) -> str:
    """The reason shown after 原因: — HTTP statuses as the server said them, a timeout in Japanese."""
    reason = getattr(exc, "reason", None) or str(exc)
    match = _TIMEOUT.match(reason)
    if match:
        return f"接続がタイムアウトしました ({match.group(1)}秒)"
    return reason


def summary(report) -> str:
    """The crawl's summary line; the failed pages (at most ERROR_LINES) below it with their cause."""
    lines = [SUMMARY.format(pages=report.pages, chunks=report.chunks, errors=len(report.errors))]
    for error in report.errors[:ERROR_LINES]:
        lines.append(f"   • {error['url']} — 原因: {cause(_Reason(error['reason']))}")
    if len(report.errors) > ERROR_LINES:
        lines.append(f"   • ほか{len(report.errors) - ERROR_LINES}件")
    return "\n".join(lines)


class _Reason(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# -- HTTP mode -------------------------------------------------------------------------------------

MAX_BODY = 1_000_000  # bytes; Slack's event payloads are far smaller


def make_http_server(app, host: str = "0.0.0.0", port: int = 3000, path: str = "/slack/events"):
    """A threading HTTP server: POST `path` goes to the Bolt app (which verifies the signature), GET
    /health answers ok. Not started: call serve_forever() (port 0: see server.server_address)."""
    from slack_bolt.request import BoltRequest

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.partition("?")[0] == "/health":
                self._send(200, {"Content-Type": ["text/plain"]}, "ok")
            else:
                self._send(404, {}, "")

        def do_POST(self):
            route, _, query = self.path.partition("?")
            length = self.headers.get("Content-Length") or "0"
            if route != path:
                self._send(404, {}, "")
                return
            if not length.isdigit() or int(length) > MAX_BODY:
                self._send(413, {}, "")
                return
            body = self.rfile.read(int(length)).decode("utf-8", errors="replace")
            response = app.dispatch(BoltRequest(body=body, query=query, headers=self.headers))
            self._send(response.status, response.headers, response.body)

        def _send(self, status: int, headers: dict, body) -> None:
            import json

            data = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
            self.send_response(status)
            for name, values in headers.items():
                for value in values if isinstance(values, (list, tuple)) else [values]:
                    if name.lower() != "content-length":
                        self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):
            log.debug("%s " + format, self.address_string(), *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
