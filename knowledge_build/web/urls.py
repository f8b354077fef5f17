"""Which URLs the crawler may fetch: http/https only, and never an address inside the network (SSRF).

`validate_url` resolves the host and checks every address it resolves to, so a public-looking name
that points at 10.0.0.5 or the cloud metadata service (169.254.169.254) is refused like the literal
address. `checked_transport` makes the same check when a connection is opened and connects to the
checked address, so the answer cannot change in between (DNS rebinding). `allow_hosts` is the one
way past the check (an intranet site, the tests' loopback server).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit, urlunsplit

from ..errors import KnowledgeBuildError

__all__ = ["MAX_URL_CHARS", "UrlRefused", "checked_address", "checked_transport", "host_key", "normalise_url",
           "refused_address", "validate_url"]

SCHEMES = ("http", "https")
# RFC 9110 (section 4.1) asks for at least 8,000 octets of URI; httpx refuses longer than 65,536 with an
# exception of its own. A longer URL is refused here, before it is parsed, resolved or echoed.
MAX_URL_CHARS = 8000
DEFAULT_PORTS = {"http": 80, "https": 443}
# NAT64 (RFC 6052) embeds an IPv4 address in its last 32 bits: 64:ff9b::10.0.0.5 reaches 10.0.0.5.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# The only IPv6 block assigned for global unicast (RFC 4291 and IANA's registry): everything outside it
# (IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, local-use NAT64, site-local fec0::/10,
# unassigned space) is refused, apart from the two forms below whose embedded IPv4 address is checked.
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
# IETF protocol assignments: Python before 3.12 calls most of it global (192.0.0.8, 192.0.0.170 …).
_IETF_V4 = ipaddress.ip_network("192.0.0.0/24")


class UrlRefused(KnowledgeBuildError):
    """The URL is not one the crawler fetches; the message is the reason ("refused: …")."""


def normalise_url(url: str) -> str:
    """The URL without its fragment, scheme and host lower-cased; nothing else is rewritten (a path's
    case, its query and a trailing slash can all name different pages)."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc
    if parts.hostname:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = (userinfo + "@" if userinfo else "") + hostport.lower()
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))


def host_key(url: str) -> str:
    """scheme://host[:port] of a URL: the unit robots.txt and the per-host delay apply to."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2].lower()}"


async def validate_url(url: str, allow_hosts: tuple[str, ...] = ()) -> str:
    """The normalised URL (see normalise_url) when the crawler may fetch it; UrlRefused otherwise.

    Every address the host resolves to is checked (not just the first): a name with one public and
    one private address could otherwise be steered to the private one by the resolver's order."""
    if len(url) > MAX_URL_CHARS:
        raise UrlRefused(f"refused: the URL is {len(url):,} characters long; at most {MAX_URL_CHARS:,} are fetched")
    normal = normalise_url(url)
    parts = urlsplit(normal)
    if parts.scheme not in SCHEMES:
        shown = f"{parts.scheme}://" if parts.scheme else repr(url)
        raise UrlRefused(f"refused: {shown} is not http or https")
    host = parts.hostname
    if not host:
        raise UrlRefused(f"refused: {url!r} has no host")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise UrlRefused(f"refused: {url!r} has an invalid port") from None
    await checked_address(host, port, allow_hosts)
    return normal


async def checked_address(host: str, port: int, allow_hosts: tuple[str, ...] = ()) -> str:
    """The address to connect to for host:port: the host itself when allow-listed, else its first
    resolved address after every one was checked (UrlRefused when any is private)."""
    if _allowed_host(host, port, allow_hosts):
        return host
    literal = _ip(host)
    if literal is not None:
        if refused_address(literal):
            raise UrlRefused(f"refused: {literal} is a private address")
        return host
    addresses = await _resolve(host, port)
    for address in addresses:
        if refused_address(address):
            raise UrlRefused(f"refused: {host} resolves to {address}, a private address")
    return str(addresses[0])


def checked_transport(allow_hosts: tuple[str, ...], max_connections: int):
    """An httpx transport whose every connection goes to an address checked at connect time, so a
    name that resolved to a public address for validate_url and to 10.0.0.5 a moment later (DNS
    rebinding) is still refused; TLS still verifies the certificate against the host name."""
    import httpcore
    import httpx

    class CheckedBackend(httpcore.AsyncNetworkBackend):
        def __init__(self):
            self.inner = httpcore.AnyIOBackend()

        async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            address = await checked_address(host, port, allow_hosts)
            return await self.inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                                socket_options=socket_options)

        async def connect_unix_socket(self, path, timeout=None, socket_options=None):
            raise UrlRefused("refused: a Unix socket is not http or https")

        async def sleep(self, seconds):
            await self.inner.sleep(seconds)

    transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=max_connections), trust_env=False)
    # httpx has no public hook for the network backend; its pool keeps it here (httpx 0.27-0.28,
    # httpcore 1.x). test_web_urls checks a rebinding name is refused, so a change here is seen.
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise RuntimeError("this httpx version has no connection pool to check addresses in; "
                           "install httpx>=0.27,<0.29 (pip install 'knowledge-build[web]')")
    pool._network_backend = CheckedBackend()
    return transport


def refused_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """True for an address inside a network rather than on the internet: loopback, RFC 1918, link-local,
    unique-local, unspecified, multicast, reserved — and every IPv6 form outside global unicast, or
    embedding an IPv4 address that is one of those (::ffff:127.0.0.1, ::127.0.0.1, 2002:7f00:1::)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return refused_address(embedded)
        if address not in _GLOBAL_UNICAST_V6:
            return True
        if address.sixtofour is not None and refused_address(address.sixtofour):
            return True
    elif address in _IETF_V4:
        return True
    # is_global is False for every special-purpose block (RFC 6890: 127/8, 10/8, 172.16/12, 192.168/16,
    # 169.254/16, 100.64/10, 0/8, ::1, fc00::/7, fe80::/10 …); multicast is "global" for some ranges.
    return not address.is_global or address.is_multicast


def _allowed_host(host: str, port: int, allow_hosts: tuple[str, ...]) -> bool:
    allowed = {entry.strip().lower() for entry in allow_hosts}
    bracketed = f"[{host}]" if ":" in host else host
    return bool(allowed & {host, bracketed, f"{bracketed}:{port}"})


def _ip(host: str):
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def _resolve(host: str, port: int) -> list:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise UrlRefused(f"cannot resolve host {host} ({exc})") from None
    addresses = []
    for *_, sockaddr in infos:
        # An IPv6 sockaddr's host may carry a zone ("fe80::1%eth0"), which ip_address rejects.
        address = _ip(str(sockaddr[0]).split("%", 1)[0])
        if address is None:
            raise UrlRefused(f"refused: {host} resolves to {sockaddr[0]!r}, not an IP address")
        addresses.append(address)
    if not addresses:
        raise UrlRefused(f"cannot resolve host {host} (no addresses)")
    return addresses
