"""How the MCP server meets the outside: bounded stdio, and streamable HTTP behind a bearer token.

Both transports refuse one JSON-RPC message over MAX_MESSAGE_BYTES (HTTP with 413, stdio with a
JSON-RPC error for that request) without reading more than that into memory. On stdio a line that is
not JSON is answered with a parse error (-32700, id null), JSON that is not a message with -32600.
Over HTTP, a token (`--token` / KB_MCP_TOKEN) is required on every request except GET /health,
Host/Origin headers are checked against `--allowed-host` / KB_ALLOWED_HOSTS (by default the loopback
names when bound to one), and GET /mcp event streams are bounded in number and idle time
(BoundedStreams: `--max-streams`, `--stream-idle-timeout`). HTTP is stateless: no session lives in
one process, so any instance behind a load balancer answers any request of a client (no sticky sessions).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import sys

MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # the SDK's own default HTTP body limit; stdio gets the same
GRACEFUL_SHUTDOWN_SECONDS = 5  # after SIGTERM, open HTTP streams get this long before they are cut
# GET /mcp event streams (BoundedStreams): at most this many open at once, each closed after this many
# seconds without an event. The server is stateless and sends nothing on them, so a client needs none.
MAX_STREAMS = 100
STREAM_IDLE_SECONDS = 60.0
LOOPBACK_NAMES = ("localhost",)
OPEN_PATHS = ("/health",)  # a load balancer's probe needs no token; it reveals no content
log = logging.getLogger("knowledge_build.mcp")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def security_settings(host: str, allowed_hosts: tuple[str, ...]):
    """Host/Origin (DNS rebinding) checks: the given hosts, else the loopback names when bound to
    loopback, else none (a public server behind a token, whose public name is not known here)."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not allowed_hosts and not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = list(allowed_hosts) or ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    # `NAME:*` means any port, the default one too: a client on port 80/443 sends `Host: NAME`
    # without a port, which the SDK's `:*` pattern alone does not match.
    hosts += [h[:-2] for h in hosts if h.endswith(":*") and h[:-2] not in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")])


class BearerToken:
    """ASGI middleware: every HTTP request but OPEN_PATHS must carry `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized",
                           "message": "send the server's token as 'Authorization: Bearer <token>'"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b'Bearer realm="knowledge-build"')]})
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope) -> bool:
        values = [v for k, v in scope["headers"] if k == b"authorization"]
        scheme, _, given = values[0].partition(b" ") if len(values) == 1 else (b"", b"", b"")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token)


class BoundedStreams:
    """ASGI middleware: at most `max_streams` GET event streams on `path` at once (one more gets 503 and
    its connection closed, so idle streams cannot take every file descriptor and starve /health), and
    each stream ends after `idle_seconds` without an event (keep-alive pings do not count). The stream
    is ended as a disconnect would end it, so the SDK closes its side of the request too."""

    def __init__(self, app, max_streams: int = MAX_STREAMS, idle_seconds: float = STREAM_IDLE_SECONDS,
                 path: str = "/mcp"):
        self.app = app
        self.max_streams = max_streams
        self.idle_seconds = idle_seconds
        self.path = path
        self.open = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        if self.open >= self.max_streams:
            await _refuse_stream(send, self.max_streams)
            return
        self.open += 1
        state = {"started": False, "ended": False}
        try:
            await self._stream(scope, receive, send, state)
        finally:
            self._release(state)

    def _release(self, state: dict) -> None:
        # Before the stream's last bytes go out: a client that saw its stream end finds its place free.
        if not state.get("released"):
            state["released"] = True
            self.open -= 1

    async def _stream(self, scope, receive, send, state: dict):
        import anyio

        last_event = [anyio.current_time()]
        expired = anyio.Event()

        async def watched_send(message):
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body":
                if b"data:" in message.get("body", b""):
                    last_event[0] = anyio.current_time()
                if not message.get("more_body", False):
                    state["ended"] = True
                    self._release(state)
            await send(message)

        async def watched_receive():
            if expired.is_set():
                return {"type": "http.disconnect"}
            got = {}
            async with anyio.create_task_group() as race:
                async def real():
                    got["message"] = await receive()
                    race.cancel_scope.cancel()

                async def idle():
                    await expired.wait()
                    race.cancel_scope.cancel()
                race.start_soon(real)
                race.start_soon(idle)
            return got.get("message", {"type": "http.disconnect"})

        async with anyio.create_task_group() as group:
            async def watchdog():
                while (left := last_event[0] + self.idle_seconds - anyio.current_time()) > 0:
                    await anyio.sleep(left)
                expired.set()
            group.start_soon(watchdog)
            await self.app(scope, watched_receive, watched_send)
            group.cancel_scope.cancel()
        if state["started"] and not state["ended"]:
            self._release(state)
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _refuse_stream(send, limit: int) -> None:
    body = json.dumps({"error": "too many open streams",
                       "message": f"the server keeps at most {limit:,} event streams (GET /mcp) open; it sends "
                                  "nothing on them (it is stateless), so a client needs none: retry later, or "
                                  "raise --max-streams"}).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", b"60"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def run_http(server, host: str, port: int, token: str | None, allowed_hosts: tuple[str, ...] = (),
             max_streams: int = MAX_STREAMS, stream_idle_seconds: float = STREAM_IDLE_SECONDS) -> None:
    import anyio
    import uvicorn

    # stateless_http: every request gets a fresh transport and no Mcp-Session-Id, so instances share
    # nothing a client must come back to. The tools neither ask the client back (sampling,
    # elicitation) nor resume streams, which only a session would allow.
    app = server.streamable_http_app(host=host, stateless_http=True, max_request_body_size=MAX_MESSAGE_BYTES,
                                     transport_security=security_settings(host, allowed_hosts))
    app = BoundedStreams(app, max_streams, stream_idle_seconds)
    if token:
        app = BearerToken(app, token)  # outside: a caller without the token cannot take a stream
    # uvicorn turns SIGTERM into a graceful shutdown; the timeout keeps an open event stream from
    # holding it forever.
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS)
    anyio.run(uvicorn.Server(config).serve)


def run_stdio(server) -> None:
    import anyio

    anyio.run(_serve_stdio, server)


async def _serve_stdio(server) -> None:
    from mcp.server.stdio import stdio_server

    stdin = BoundedLines(sys.stdin.buffer, MAX_MESSAGE_BYTES)
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        stdin.replies = write_stream
        # What MCPServer.run_stdio_async does, with a bounded stdin (the SDK has no hook for it).
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


class BoundedLines:
    """stdin as an async iterator of lines of at most `limit` bytes. A longer line is read past
    (in pieces, never held whole) and answered with a JSON-RPC error when its id can be found."""

    _PIECE = 1 << 16

    def __init__(self, buffer, limit: int):
        self._buffer = buffer
        self._limit = limit
        self.replies = None  # the write stream, set once the transport is up

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        import anyio

        while True:
            line = await anyio.to_thread.run_sync(self._buffer.readline, self._limit + 1, abandon_on_cancel=True)
            if not line:
                raise StopAsyncIteration
            if len(line) <= self._limit or (line.endswith(b"\n") and len(line) == self._limit + 1):
                text = line.decode("utf-8", errors="replace")
                if not text.strip():
                    continue  # a blank line is framing noise, not a message: nothing to answer
                if await self._answered_as_invalid(text):
                    continue
                return text
            size = len(line) + await anyio.to_thread.run_sync(self._skip_rest, abandon_on_cancel=True)
            await self._refuse(line, size)

    async def _answered_as_invalid(self, text: str) -> bool:
        """True when the line is not a JSON-RPC message and was answered with the JSON-RPC error for it
        (-32700 for text that is not JSON, -32600 for JSON that is not a message): the SDK would only
        log it, and the client would wait forever for the answer to a request it believes it sent."""
        import mcp_types as types

        try:
            types.jsonrpc_message_adapter.validate_json(text, by_name=False)
            return False
        except ValueError:
            pass
        try:
            value = json.loads(text)
        except ValueError:
            code, message, request_id = types.PARSE_ERROR, "parse error: the line is not JSON", None
        else:
            code, message = types.INVALID_REQUEST, "invalid request: the line is JSON but not a JSON-RPC 2.0 message"
            request_id = value.get("id") if isinstance(value, dict) else None
            if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
                request_id = None
        log.warning("answered a stdio line with %s", message)
        await self._reply(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=code, message=message)))
        return True

    async def _reply(self, error) -> None:
        import anyio
        from mcp.shared.message import SessionMessage

        while self.replies is None:  # set as soon as stdio_server has yielded its streams
            await anyio.sleep(0.01)
        await self.replies.send(SessionMessage(error))

    def _skip_rest(self) -> int:
        skipped = 0
        while True:
            piece = self._buffer.readline(self._PIECE)
            skipped += len(piece)
            if not piece or piece.endswith(b"\n"):
                return skipped

    async def _refuse(self, head: bytes, size: int) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        message = (f"message of {size:,} bytes is over the server's limit of {self._limit:,} bytes; "
                   "send smaller arguments (see the README's MCP limits)")
        request_id = _request_id(head)
        log.warning("refused a stdio %s", message)
        if request_id is None or self.replies is None:
            return
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                   error=types.ErrorData(code=types.INVALID_REQUEST, message=message))
        await self.replies.send(SessionMessage(error))


# A request's id when it comes before its params (as the SDK and common clients write it).
_ID = re.compile(rb'^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*(-?\d+|"[^"\\]*")')


def _request_id(head: bytes):
    match = _ID.match(head)
    return json.loads(match.group(1)) if match else None
