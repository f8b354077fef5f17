"""Web sources with the real model, as a user runs them: `knowledge-build sources add` and `query` as
processes against a real HTTP server on 127.0.0.1 (the seed's case: a table of game characters)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .test_sources_cli import _page, _table_page
from .test_web_crawler import Route, serving

pytestmark = pytest.mark.model
CLI = [sys.executable, "-m", "knowledge_build.cli", "sources"]


@pytest.fixture
def web():
    start = next(gen := serving())
    yield start({
        "/robots.txt": Route("", status=404),
        "/table.html": Route(_table_page()),
        "/game.html": Route(_page("しれんのしろ", "しれんのしろには伝説のアイテムが眠っています。")),
        "/math.html": Route(_page("二次方程式の解き方", "解の公式を使って二次方程式を解く方法を説明します。")),
    })
    next(gen, None)


def _run(*args, store, cwd):
    done = subprocess.run([*CLI, *args, "--store", str(store)], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_name_in_one_cell_finds_that_row_and_a_keyword_finds_its_page_first(web, tmp_path):
    store = tmp_path / "store.sqlite"
    for path in ("/table.html", "/game.html", "/math.html"):
        _run("add", web.url(path), "--allow-host", web.host, "--delay", "0", store=store, cwd=tmp_path)
    found = json.loads(_run("query", "ミルフィーユの職業は？", "--format", "json", store=store, cwd=tmp_path))
    first = found["results"][0]
    assert first["source"] == web.url("/table.html") and first["kind"] == "table"
    assert "ミルフィーユ | 魔法使い" in first["text"] and first["text"].startswith("名前 | 職業 | 属性")
    keyword = json.loads(_run("query", "しれんのしろ", "--format", "json", store=store, cwd=tmp_path))
    assert keyword["results"][0]["source"] == web.url("/game.html")
