"""A total deadline for every HTTP request the openai SDK sends for the tool (chat answers for `ask`,
`learns generate` and the Slack app; embeddings from OpenAI-compatible servers).

httpx (and httpx2, which openai>=3 uses) bound each network operation, not the request: a server that
sends its headers and then one byte every second never trips a 20 s read timeout (encode/httpx#1450,
open). Here a request's own timeout (the client's, or `with_options(timeout=...)`'s) is a deadline
for the whole request: connect, send, the headers and all of the body. A request hook starts the
clock; the client's connections come from a network backend whose streams wait at most the time that
is left and, once it is gone, raise the library's own timeout error, so the caller sees the error it
already handles (openai.APITimeoutError, retried as a timeout is). The crawler, which is async, bounds
each request with asyncio.timeout instead (web/crawler.py).
"""

from __future__ import annotations

import importlib
import time
from contextvars import ContextVar

from .errors import KnowledgeBuildError

# The deadline (time.monotonic()) of the request this thread is sending or reading: set by the request
# hook, read by the streams. Per thread: the embedder sends several requests at once from a pool.
_DEADLINE: ContextVar[float | None] = ContextVar("knowledge_build_http_deadline", default=None)
_CORE = {"httpx": "httpcore", "httpx2": "httpcore2"}  # the connection library under each client library
_CLOSING: dict[type, type] = {}


def openai_http_client(openai_module):
    """An http_client for openai.OpenAI(...): the SDK's default client (its own limits, redirects and
    proxies from the environment), each of whose requests ends within its timeout."""
    client = _closing_class(openai_module.DefaultHttpxClient)(event_hooks={"request": [start_clock]})
    core = _core_of(client)
    for transport in [client._transport, *client._mounts.values()]:  # the direct one, then proxies'
        if transport is not None:
            _bound(transport, core)
    return client


def _closing_class(base) -> type:
    """`base`, closing its connections when dropped, as the SDK's own client does (an `ask` per Slack
    question makes a client and lets it go)."""
    if base not in _CLOSING:
        class Closing(base):
            def __del__(self):
                try:
                    self.close()
                except Exception:  # noqa: BLE001  (at interpreter exit, anything may be gone)
                    pass

        _CLOSING[base] = Closing
    return _CLOSING[base]


def start_clock(request) -> None:
    """The request hook: this request must end within the longest of its own timeouts."""
    timeouts = request.extensions.get("timeout") or {}
    seconds = [value for value in timeouts.values() if value is not None]
    _DEADLINE.set(time.monotonic() + max(seconds) if seconds else None)


def _core_of(client):
    for cls in type(client).__mro__:
        root = cls.__module__.split(".")[0]
        if root in _CORE:
            return importlib.import_module(_CORE[root])
    raise KnowledgeBuildError(f"the openai SDK's HTTP client ({type(client).__module__}) is neither httpx nor "
                              "httpx2; no deadline can be put on its requests. Fix: install the openai version in "
                              "pyproject.toml.")


def _bound(transport, core) -> None:
    # httpx has no public hook for the network backend; its pool keeps it here (httpx 0.27-0.28 with
    # httpcore 1.x, httpx2 with httpcore2; web/urls.py relies on the same). test_deadline sees a change.
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise KnowledgeBuildError(f"this {type(transport).__module__} has no connection pool to put a deadline "
                                  "on. Fix: install the httpx / openai versions in pyproject.toml.")
    if not isinstance(pool._network_backend, _backend_class(core)):
        pool._network_backend = _backend_class(core)(pool._network_backend)


_CLASSES: dict[str, type] = {}


def _backend_class(core) -> type:
    """The deadline backend for one connection library (httpcore or httpcore2: the same interface)."""
    if core.__name__ in _CLASSES:
        return _CLASSES[core.__name__]

    def left(timeout: float | None, error: type[Exception]) -> float | None:
        """The wait allowed for one network operation: its own timeout, at most what the request has left."""
        deadline = _DEADLINE.get()
        if deadline is None:
            return timeout
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise error("the request did not end within its timeout")
        return remaining if timeout is None else min(timeout, remaining)

    class Stream(core.NetworkStream):
        def __init__(self, inner):
            self.inner = inner

        def read(self, max_bytes, timeout=None):
            return self.inner.read(max_bytes, left(timeout, core.ReadTimeout))

        def write(self, buffer, timeout=None):
            self.inner.write(buffer, left(timeout, core.WriteTimeout))

        def close(self):
            self.inner.close()

        def start_tls(self, ssl_context, server_hostname=None, timeout=None):
            return Stream(self.inner.start_tls(ssl_context, server_hostname, left(timeout, core.ConnectTimeout)))

        def get_extra_info(self, info):
            return self.inner.get_extra_info(info)

    class Backend(core.NetworkBackend):
        def __init__(self, inner):
            self.inner = inner

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            return Stream(self.inner.connect_tcp(host, port, left(timeout, core.ConnectTimeout), local_address,
                                                 socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):
            return Stream(self.inner.connect_unix_socket(path, left(timeout, core.ConnectTimeout), socket_options))

        def sleep(self, seconds):
            self.inner.sleep(seconds)

    _CLASSES[core.__name__] = Backend
    return Backend
