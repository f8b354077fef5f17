"""A real OpenAI-compatible chat server on 127.0.0.1 for tests (http.server in a thread).

POST /v1/chat/completions is recorded (`.requests`: every request body, parsed) and answered from
the prompt it was given: the answer names the question and every `URL:` line of the messages, so a
test can see that an answer is grounded in the context it was sent. Modes:
- "answer" (default): 200 with that answer (or `.reply`, a fixed text, when set);
- "error": HTTP `.status` (500) with an OpenAI-style error body;
- "not-json": 200 `application/json` whose body is not JSON (a proxy's HTML page, say);
- "slow": waits `.delay` seconds (default 30) before answering, to run past a client's timeout;
- "trickle": any POST (chat or embeddings) or GET (a web page) gets its headers at once (200, no
  Content-Length: the body ends with the connection), then one byte of body every `.interval`
  seconds (default 0.1) until the client hangs up or the server stops: each read gets a byte long
  before a read timeout, so only a deadline for the whole request ends it;
- "trickle-headers": the same, a byte at a time from the status line on, so the headers never end.

    with ChatServer() as chat:
        ... base_url=chat.url ...
        chat.requests[-1]["messages"]
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

URL_LINE = re.compile(r"(?m)^URL:\s*(\S+)")
NO_CONTEXT = "資料なし"


class ChatServer:
    def __init__(self, mode: str = "answer", *, status: int = 500, delay: float = 30.0, reply: str | None = None,
                 interval: float = 0.1):
        self.mode, self.status, self.delay, self.reply, self.interval = mode, status, delay, reply, interval
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self._release = threading.Event()  # set on stop: a "slow" handler gives up waiting
        self._server: ThreadingHTTPServer | None = None
        self._url = ""

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> ChatServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL a client is given (…/v1); kept after stop (then nobody listens on it)."""
        return self._url

    # what the tests read ---------------------------------------------------------------------
    @property
    def prompts(self) -> list[str]:
        """Each request's messages joined into one text (system prompt, context and question)."""
        return ["\n".join(str(m.get("content") or "") for m in body.get("messages", [])) for body in self.requests]

    @property
    def last_prompt(self) -> str:
        return self.prompts[-1] if self.requests else ""

    # answers ---------------------------------------------------------------------------------
    def answer_for(self, body: dict) -> str:
        """The grounded echo: the question, then the URLs of the context (or that there was none)."""
        if self.reply is not None:
            return self.reply
        messages = body.get("messages") or []
        text = "\n".join(str(m.get("content") or "") for m in messages)
        question = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        urls = list(dict.fromkeys(URL_LINE.findall(text)))
        grounds = "根拠: " + " ".join(urls) if urls else f"根拠: {NO_CONTEXT}"
        return f"「{question}」への回答です。\n{grounds}"


def _handler(chat: ChatServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if not chat.mode.startswith("trickle"):
                return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            chat.paths.append(self.path)
            self._trickle("text/html; charset=utf-8")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                return self._send(400, {"error": {"message": "the body is not JSON", "type": "invalid_request_error"}})
            chat.requests.append(body)
            chat.paths.append(self.path)
            if chat.mode.startswith("trickle"):
                return self._trickle()
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            if chat.mode == "error":
                return self._send(chat.status, {"error": {"message": "the model crashed", "type": "server_error"}})
            if chat.mode == "not-json":
                return self._send_bytes(200, b"<html><body>Service Unavailable</body></html>")
            if chat.mode == "slow" and chat._release.wait(chat.delay):
                return  # the server is stopping: no answer
            content = chat.answer_for(body)
            self._send(200, {"id": f"chatcmpl-{len(chat.requests)}", "object": "chat.completion", "created": 0,
                             "model": body.get("model", "loopback"),
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": content}}],
                             "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

        def _trickle(self, content_type: str = "application/json") -> None:
            try:
                if chat.mode == "trickle-headers":
                    stream = itertools.chain(b"HTTP/1.1 200 OK\r\nX-Trickle: ", itertools.repeat(ord("a")))
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", content_type)
                    self.end_headers()
                    self.wfile.flush()
                    stream = itertools.repeat(ord(" "))  # JSON allows any amount of white space before a value
                for byte in stream:
                    if chat._release.wait(chat.interval):
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: what a deadline is for
            self.close_connection = True

        def _send(self, status: int, payload: dict) -> None:
            self._send_bytes(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"))

        def _send_bytes(self, status: int, data: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer

    return Handler
