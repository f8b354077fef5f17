"""robots.txt: whether a site lets the crawler fetch a page, and the delay it asks for.

One `RobotsCache` keeps each host's parsed robots.txt for `ttl` seconds (monotonic clock), so a
long-running server crawling the same site again does not ask for it every time. The rules are
RFC 9309's, read by Protego: the group for our user agent, else the `*` group; of the Allow and
Disallow rules matching a path the longest wins (Allow on a tie), `*` matches any characters and a
final `$` the end of the path. A robots.txt that cannot be
fetched (timeout, refused connection, 5xx, a redirect: robots.txt's own redirects are not followed,
only pages' are) allows everything with a warning on the "knowledge_build.web" logger: the seed design fails open, and the
page fetch that follows reports its own error if the site is really down. A 4xx (404: no robots.txt)
allows everything silently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .urls import host_key

if TYPE_CHECKING:
    from protego import Protego

__all__ = ["RobotsCache"]

log = logging.getLogger("knowledge_build.web")

MAX_ROBOTS_BYTES = 512_000  # RFC 9309 asks parsers to read at least 500 KiB; the rest is ignored


@dataclass
class _Entry:
    parser: Protego | None  # None: everything allowed (no robots.txt, or it failed)
    fetched: float  # monotonic time


class RobotsCache:
    def __init__(self, ttl: float = 3600.0, user_agent: str = "knowledge-build", timeout: float | None = None,
                 gate: Callable[[str], AbstractAsyncContextManager] | None = None):
        """`timeout`: seconds for the whole robots.txt request (None: the client's own timeouts only).
        `gate(url)` wraps the robots.txt request (the crawler's per-host delay: robots.txt is a request to
        the site like any other)."""
        self.ttl = ttl
        self.timeout = timeout
        self.user_agent = user_agent
        self.gate = gate
        self.fetches = 0  # robots.txt requests made (what the TTL saves is visible)
        self._entries: dict[str, _Entry] = {}
        self._pending: dict[str, asyncio.Future] = {}

    async def allowed(self, client, url: str) -> bool:
        return (await self.check(client, url))[0]

    async def crawl_delay(self, client, url: str) -> float | None:
        return (await self.check(client, url))[1]

    async def check(self, client, url: str) -> tuple[bool, float | None]:
        """(allowed, Crawl-delay) from one look at the host's robots.txt."""
        parser = await self._parser(client, url)
        if parser is None:
            return True, None
        delay = parser.crawl_delay(self.user_agent)
        return parser.can_fetch(url, self.user_agent), float(delay) if delay is not None else None

    async def _parser(self, client, url: str) -> Protego | None:
        key = host_key(url)
        entry = self._entries.get(key)
        if entry is not None and time.monotonic() - entry.fetched < self.ttl:
            return entry.parser
        pending = self._pending.get(key)
        if pending is not None:  # another page of the same host is fetching it: one request, not four
            return await asyncio.shield(pending)
        future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            parser = await self._fetch(client, key)
            self._entries[key] = _Entry(parser, time.monotonic())
            future.set_result(parser)
            return parser
        except BaseException:  # cancelled (fetch errors are caught below): the waiters are cancelled too
            future.cancel()
            raise
        finally:
            del self._pending[key]

    async def _fetch(self, client, key: str) -> Protego | None:
        import httpx
        from protego import Protego

        robots_url = key + "/robots.txt"
        gate = self.gate(robots_url) if self.gate is not None else nullcontext()
        self.fetches += 1
        try:
            async with gate, asyncio.timeout(self.timeout), client.stream("GET", robots_url) as response:
                if 400 <= response.status_code < 500:
                    return None
                if response.status_code != 200:
                    log.warning("robots.txt of %s not used (HTTP %d %s); crawling as if it allowed everything",
                                key, response.status_code, response.reason_phrase)
                    return None
                body = await _read_capped(response, MAX_ROBOTS_BYTES)
        except (httpx.HTTPError, OSError, TimeoutError) as exc:
            log.warning("robots.txt of %s could not be fetched (%s); crawling as if it allowed everything",
                        key, _describe(exc))
            return None
        return Protego.parse(body.decode("utf-8", errors="replace"))


async def _read_capped(response, limit: int) -> bytes:
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= limit:
            break
    return bytes(data[:limit])


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
