"""validate_url: http/https only, fragments removed, and no address inside the network (SSRF)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from knowledge_build.errors import KnowledgeBuildError
from knowledge_build.web.urls import UrlRefused, normalise_url, validate_url


def _validate(url, allow_hosts=()):
    return asyncio.run(validate_url(url, allow_hosts))


@pytest.fixture
def fake_dns(monkeypatch):
    """Names the tests make up resolve to the addresses given here; asyncio's getaddrinfo calls
    socket.getaddrinfo in a thread, so patching the socket module covers the event loop too."""
    table = {
        "intranet.test": ["10.0.0.5"],
        "public.test": ["93.184.216.34"],
        "mixed.test": ["93.184.216.34", "192.168.1.20"],
        "mapped.test": ["::ffff:127.0.0.1"],
    }

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        infos = []
        for address in table[host]:
            if ":" in address:
                infos.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                infos.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return infos

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.mark.parametrize("url, reason", [
    ("http://localhost/", "refused: localhost resolves to 127.0.0.1, a private address"),
    ("http://127.0.0.1/", "refused: 127.0.0.1 is a private address"),
    ("http://10.0.0.1/", "refused: 10.0.0.1 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is a private address"),
    ("http://[::1]/", "refused: ::1 is a private address"),
    ("http://172.16.3.4/", "refused: 172.16.3.4 is a private address"),
    ("http://192.168.0.10:8080/", "refused: 192.168.0.10 is a private address"),
    ("http://[fe80::1]/", "refused: fe80::1 is a private address"),
    ("http://[fd12:3456::1]/", "refused: fd12:3456::1 is a private address"),
    ("http://0.0.0.0/", "refused: 0.0.0.0 is a private address"),
    ("http://[::ffff:10.0.0.1]/", "refused: ::ffff:a00:1 is a private address"),
    ("file:///etc/passwd", "refused: file:// is not http or https"),
    ("ftp://example.com/", "refused: ftp:// is not http or https"),
    ("javascript:alert(1)", "refused: javascript:// is not http or https"),
])
def test_private_addresses_and_other_schemes_are_refused_without_allow_hosts(url, reason, monkeypatch):
    if url.startswith("http://localhost"):
        real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo",
                            lambda host, *a, **k: real("127.0.0.1", *a, **k) if host == "localhost" else real(host, *a, **k))
    with pytest.raises(UrlRefused) as caught:
        _validate(url)
    assert str(caught.value) == reason
    assert isinstance(caught.value, KnowledgeBuildError)


def test_a_hostname_resolving_to_a_private_address_is_refused_and_named(fake_dns):
    with pytest.raises(UrlRefused, match=r"^refused: intranet.test resolves to 10.0.0.5, a private address$"):
        _validate("https://intranet.test/wiki")


def test_every_resolved_address_is_checked_not_only_the_first(fake_dns):
    with pytest.raises(UrlRefused, match="mixed.test resolves to 192.168.1.20"):
        _validate("http://mixed.test/")


def test_an_ipv4_mapped_loopback_from_dns_is_refused(fake_dns):
    with pytest.raises(UrlRefused, match="mapped.test resolves to ::ffff:7f00:1"):
        _validate("http://mapped.test/")


def test_an_unresolvable_host_is_refused_with_its_name(fake_dns):
    with pytest.raises(UrlRefused, match="^cannot resolve host nowhere.test"):
        _validate("http://nowhere.test/")


def test_a_public_host_passes_and_loses_its_fragment(fake_dns):
    assert _validate("HTTPS://Public.TEST/Path/ページ?q=1#section-2") == "https://public.test/Path/ページ?q=1"


def test_allow_hosts_lets_a_named_private_host_through(fake_dns):
    assert _validate("http://intranet.test/a#b", ("intranet.test",)) == "http://intranet.test/a"
    assert _validate("http://127.0.0.1:8123/", ("127.0.0.1:8123",)) == "http://127.0.0.1:8123/"
    assert _validate("http://[::1]:8123/", ("[::1]:8123",)) == "http://[::1]:8123/"


def test_allow_hosts_with_a_port_does_not_open_the_other_ports():
    with pytest.raises(UrlRefused, match="127.0.0.1 is a private address"):
        _validate("http://127.0.0.1:9999/", ("127.0.0.1:8123",))


def test_normalise_url_removes_only_the_fragment_and_lowers_scheme_and_host():
    assert normalise_url("HTTP://User@Example.COM:8080/A/b/?x=Y#frag") == "http://User@example.com:8080/A/b/?x=Y"
    assert normalise_url("https://example.com/page#a") == normalise_url("https://example.com/page#b")


def test_a_name_that_resolves_to_a_private_address_at_connect_time_is_refused(monkeypatch):
    """DNS rebinding: public when validate_url asks, loopback a moment later when the connection is
    opened. The connection is checked again, so the loopback server never sees a request."""
    from knowledge_build.web.crawler import Crawler, CrawlError, CrawlSettings
    from tests.test_web_crawler import Route, _page, serving

    answers = iter(["93.184.216.34"])
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in ("rebind.test", b"rebind.test"):  # anyio passes the name IDNA-encoded
            return real(next(answers, "127.0.0.1"), port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    servers = serving()
    site = next(servers)({"/": Route(_page("内部のページ"))})
    port = site.host.rsplit(":", 1)[1]
    try:
        with pytest.raises(CrawlError, match="^refused: rebind.test resolves to 127.0.0.1, a private address$"):
            asyncio.run(Crawler(CrawlSettings(delay=0, respect_robots_txt=False)).fetch(f"http://rebind.test:{port}/"))
        assert site.requests == []
    finally:
        next(servers, None)


@pytest.mark.parametrize("host", [
    "::127.0.0.1",          # IPv4-compatible (::/96, deprecated): reaches 127.0.0.1 on some stacks
    "::10.0.0.1",
    "::8.8.8.8",            # the whole block is refused, not only its private part
    "::ffff:127.0.0.1",     # IPv4-mapped
    "::ffff:0:127.0.0.1",   # IPv4-translated (SIIT, RFC 2765)
    "64:ff9b::127.0.0.1",   # well-known NAT64 prefix around a private IPv4
    "64:ff9b:1::7f00:1",    # local-use NAT64 (RFC 8215)
    "2002:7f00:1::",        # 6to4 around 127.0.0.1
    "2002:a00:1::1",        # 6to4 around 10.0.0.1
    "::",                   # unspecified: connects to this host
    "::1",
    "fec0::1",              # deprecated site-local
    "5f00::1",              # outside 2000::/3, the only block assigned for global unicast
    "ff02::1",              # multicast
    "2001:db8::1",          # documentation
])
def test_every_ipv6_form_of_a_non_public_address_is_refused(host):
    with pytest.raises(UrlRefused, match=r"^refused: .* is a private address$"):
        _validate(f"http://[{host}]/")


@pytest.mark.parametrize("host", ["0.0.0.0", "0.1.2.3", "127.1.2.3", "100.64.0.1", "192.0.0.8", "198.18.0.1",
                                  "224.0.0.1", "240.0.0.1", "255.255.255.255"])
def test_every_ipv4_special_purpose_address_is_refused(host):
    with pytest.raises(UrlRefused, match=r"^refused: .* is a private address$"):
        _validate(f"http://{host}/")


@pytest.mark.parametrize("host", ["2606:4700:4700::1111", "64:ff9b::8.8.8.8", "::ffff:8.8.8.8"])
def test_public_ipv6_addresses_still_pass(host):
    assert _validate(f"http://[{host}]/").startswith("http://[")


def test_an_ipv4_compatible_loopback_from_dns_is_refused(fake_dns):
    fake_dns["compat.test"] = ["::127.0.0.1"]
    with pytest.raises(UrlRefused, match=r"^refused: compat.test resolves to ::7f00:1, a private address$"):
        _validate("http://compat.test/")
