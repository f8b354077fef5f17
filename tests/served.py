"""What the browser tests serve on 127.0.0.1: a folder by a real HTTP server, a server of the tests' own in a thread,
and the sample site with the search box as `knowledge-build install-search` and a layout line give it to a Jekyll
site, built by a real `jekyll build`."""

import functools
import http.server
import json
import re
import shutil
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build import build, load_config
from knowledge_build.cli import main

from .conftest import SITE, FakeEmbedder


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def counting(sent: list) -> type:
    """A quiet handler that appends the bytes of each file it sends to `sent` (no compression)."""
    class Counting(_Quiet):
        def copyfile(self, source, outputfile):
            data = source.read()
            outputfile.write(data)
            sent.append(len(data))

    return Counting


def send_json(handler: http.server.BaseHTTPRequestHandler, status: int, payload, headers: dict | None = None) -> None:
    """Answer a request of `handler` with `payload` as JSON (UTF-8), `headers` added."""
    data = json.dumps(payload, ensure_ascii=False).encode()
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Type", "application/json; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def running(server):
    """`server` (a socketserver) answering in a daemon thread until the block ends."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serving(directory: Path, handler: type | None = None):
    """A real HTTP server on 127.0.0.1 serving `directory` (with `handler`, a SimpleHTTPRequestHandler: quiet, or
    `counting`); yields its origin (http://127.0.0.1:PORT)."""
    handler = functools.partial(handler or _Quiet, directory=str(directory))
    with running(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as httpd:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"


def box_site(base: Path, settings: str = "") -> Path:
    """The sample site copied into `base`/site, given the box by install-search and one include line in its layouts,
    `settings` (YAML lines) added under its _config.yml's knowledge_build, built by jekyll and indexed by
    knowledge-build with the fake embedder (the box's search is lexical only); returns its _site."""
    if shutil.which("jekyll") is None:
        pytest.fail("jekyll is not installed; `make test` installs Debian's jekyll package")
    root = base / "site"
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    config = root / "_config.yml"
    # The plugin would index with the real model; the site is indexed below.
    text = config.read_text(encoding="utf-8").replace("enabled: true", "enabled: false")
    config.write_text(text.replace("knowledge_build:\n", "knowledge_build:\n" + settings, 1), encoding="utf-8")
    # The sample layouts load KaTeX from a CDN; without it the only scripts on the page are the box's, so
    # "no request leaves 127.0.0.1" speaks of the box.
    (root / "_includes" / "katex.html").write_text("", encoding="utf-8")
    installed = CliRunner().invoke(main, ["install-search", "--site", str(root)])
    assert installed.exit_code == 0, installed.output
    line = installed.stdout.splitlines()[2].strip()
    assert line == "{% include knowledge_search.html %}"
    for layout in (root / "_layouts").glob("*.html"):
        text = layout.read_text(encoding="utf-8")
        layout.write_text(re.sub(r"(<p class=\"site-title\">.*?</p>)", rf"\1\n    {line}", text, count=1),
                          encoding="utf-8")
    jekyll = subprocess.run(["jekyll", "build"], cwd=root, capture_output=True, text=True, timeout=600)
    assert jekyll.returncode == 0, jekyll.stdout + jekyll.stderr
    build(load_config(site=root, cache_dir=base / "cache", env={}), embedder=FakeEmbedder())
    return root / "_site"
