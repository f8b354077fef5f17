"""`knowledge-build sources …` end to end: a real HTTP server on 127.0.0.1 (allowed with --allow-host),
the real crawler, the SQLite store; the fake embedder stands in for the model (the model's own test
is test_sources_model.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from knowledge_build.cli import main
from knowledge_build.cli import sources as cli_sources

from .conftest import FakeEmbedder
from .test_web_crawler import Route, serving

CHARACTERS = [("ゴンザレス", "剣士", "炎"), ("ミルフィーユ", "魔法使い", "氷"), ("ポポロン", "僧侶", "光")] + [
    (f"村人{i}", "商人", "土") for i in range(1, 21)]


def _table_page() -> str:
    rows = "".join(f"<tr><td>{n}</td><td>{j}</td><td>{e}</td></tr>" for n, j, e in CHARACTERS)
    return ("<html><head><title>キャラクター一覧</title></head><body><main><h1>キャラクター一覧</h1>"
            "<h2>仲間たち</h2><table><tr><th>名前</th><th>職業</th><th>属性</th></tr>" + rows + "</table>"
            "</main></body></html>")


def _page(title: str, text: str) -> str:
    return (f"<html><head><title>{title}</title></head><body><nav>メニュー</nav><main><h1>{title}</h1>"
            f"<h2>概要</h2><p>{text}</p></main></body></html>")


@pytest.fixture
def site():
    start = next(gen := serving())
    routes = {
        "/robots.txt": Route("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"}),
        "/index.html": Route("<html><body>" + "".join(
            f'<a href="{p}">{p}</a>' for p in ("/a.html", "/b.html", "/table.html", "/private/x.html",
                                                "/missing.html", "https://other.example/")) + "</body></html>"),
        "/a.html": Route(_page("二次方程式の解き方", "解の公式を使って二次方程式を解く方法を説明します。")),
        "/b.html": Route(_page("しれんのしろ", "しれんのしろには伝説のアイテムが眠っています。")),
        "/table.html": Route(_table_page()),
        "/private/x.html": Route(_page("秘密", "見せない")),
    }
    yield start(routes)
    next(gen, None)


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_sources, "_embedder", lambda config: FakeEmbedder())
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "store.sqlite")

    def invoke(*args, host=None):
        extra = ["--store", store]
        if host and args[0] in ("crawl", "add"):
            extra += ["--allow-host", host, "--delay", "0"]
        result = CliRunner().invoke(main, ["sources", *args, *extra])
        return result

    return invoke


def test_crawl_stores_the_linked_pages_and_reports_the_others_with_their_reason(site, run):
    result = run("crawl", site.url("/index.html"), "--format", "json", host=site.host)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    stored = {p["url"] for p in report["stored"]}
    assert stored == {site.url(p) for p in ("/a.html", "/b.html", "/table.html")}
    reasons = {e["url"]: e["reason"] for e in report["errors"]}
    assert reasons == {site.url("/private/x.html"): "disallowed by robots.txt",
                       site.url("/missing.html"): "HTTP 404 Not Found"}
    assert any(s["reason"].startswith("other domain") for s in report["skipped"])
    assert report["pages"] == 3 and report["chunks"] >= 3


def test_crawl_prints_a_start_line_progress_every_interval_and_a_summary(site, run):
    result = run("crawl", site.url("/index.html"), "--progress-interval", "2", host=site.host)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == f"Crawl started: {site.url('/index.html')} (collecting links)"
    assert "  2/5 pages fetched…" in result.stderr and "  4/5 pages fetched…" in result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("Done: 3 pages / ")
    assert result.stdout.strip().endswith("errors: 2")


def test_status_query_and_delete_through_the_cli(site, run):
    assert run("add", site.url("/table.html"), host=site.host).exit_code == 0
    assert run("add", site.url("/b.html"), host=site.host).exit_code == 0
    status = json.loads(run("status", "--format", "json").stdout)
    assert status["sources"] == 2 and status["chunks"] >= 2 and status["last_crawl"]
    found = json.loads(run("query", "ミルフィーユ", "--format", "json").stdout)["results"]
    assert found[0]["source"] == site.url("/table.html") and "ミルフィーユ" in found[0]["text"]
    assert "名前" in found[0]["text"]  # the header travels with the row
    deleted = json.loads(run("delete", site.url("/table.html"), "--format", "json").stdout)
    assert deleted["deleted"] == status["chunks"] - json.loads(run("status", "--format", "json").stdout)["chunks"]
    assert json.loads(run("status", "--format", "json").stdout)["sources"] == 1


def test_add_names_the_cause_of_a_failure_and_stores_nothing(site, run):
    result = run("add", site.url("/missing.html"), host=site.host)
    assert result.exit_code == 1 and "HTTP 404 Not Found" in result.output
    assert json.loads(run("status", "--format", "json").stdout)["sources"] == 0


@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1:9/", "refused: 127.0.0.1 is a private address"),
    ("http://10.0.0.1/", "refused: 10.0.0.1 is a private address"),
    ("file:///etc/passwd", "is not http or https"),
])
def test_add_refuses_private_addresses_without_allow_host(run, url, reason):
    result = run("add", url)
    assert result.exit_code == 1 and reason in result.output and "Traceback" not in result.output


def test_delete_of_an_unknown_source_is_one_clear_line(run):
    result = run("delete", "https://example.com/never-added")
    assert result.exit_code == 1 and "https://example.com/never-added" in result.output


def test_query_gives_one_result_per_place_with_relevance_and_its_other_chunks_under_it(site, run):
    assert run("add", site.url("/table.html"), host=site.host).exit_code == 0
    assert run("add", site.url("/a.html"), host=site.host).exit_code == 0
    data = json.loads(run("query", "村人 商人 土", "-k", "2", "--format", "json").stdout)
    results = data["results"]
    assert len(results) == 2 and len({r["url"] for r in results}) == 2  # -k counts places
    table = results[0]
    assert table["source"] == site.url("/table.html") and table["sub_results"]
    assert all(s["url"] == table["url"] for s in table["sub_results"])
    assert all(0 <= r["relevance"] <= 1 and r["relevant"] == (r["relevance"] >= 0.5) for r in results)
    assert data["relevant"] == any(r["relevant"] for r in results)
    text = run("query", "村人 商人 土", "-k", "2").stdout
    assert [line.split()[1] for line in text.splitlines() if line.startswith("     + ")] == [
        s["id"] for s in table["sub_results"]]
    assert "relevance " in text.splitlines()[0]
    none = json.loads(run("query", "村人 商人 土", "--min-relevance", "1", "--format", "json").stdout)
    assert none["results"] == [] and none["relevant"] is False


@pytest.mark.parametrize("path_or_host", ["path", "host"])
def test_add_of_a_100_kb_url_is_one_clear_line_not_a_traceback(site, run, path_or_host):
    long = "a" * 100_000
    url = site.url("/" + long) if path_or_host == "path" else f"http://{long}.example/"
    result = run("add", url, host=site.host)
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, repr(result.exception)
    assert result.output == f"Error: refused: the URL is {len(url):,} characters long; at most 8,000 are fetched\n"
    assert json.loads(run("status", "--format", "json").stdout)["sources"] == 0
