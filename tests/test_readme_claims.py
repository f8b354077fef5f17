"""README sentences that no other test checked, each through the path a user takes: the CLI
(CliRunner or a subprocess), a real HTTP server, the Python snippet as printed. The audit that
maps every README claim to its test is in the coordinator's notes (readme_audit.md)."""

import json
import re
import shutil
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build import KnowledgeIndex, pipeline
from knowledge_build.cli import main

from .conftest import FakeEmbedder, ROOT, manual_text
from .test_mcp_bounds import TIMEOUT, _post, _start_http

README = manual_text()


@pytest.fixture
def fake_cli(fake_open, monkeypatch):
    """The CLI with the FakeEmbedder wherever the real one would be made (build and search)."""
    monkeypatch.setattr(pipeline, "get_embedder", lambda *args, **kwargs: FakeEmbedder())
    return CliRunner()


def _page(title: str, boxes: str) -> str:
    return f"---\ntitle: {title}\nlayout: material\n---\n<h1>{title}</h1>\n{boxes}\n"


def _small_site(root, pages: dict) -> None:
    root.mkdir()
    (root / "_config.yml").write_text("title: t\nbaseurl: ''\n", encoding="utf-8")
    for name, text in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _no_traceback(result) -> None:
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output, result.output


def test_build_to_an_output_that_cannot_be_written_is_one_error_line_not_a_traceback(site_dir, fake_cli):
    blocked = site_dir / "_config.yml" / "v1"  # its parent is a file
    result = fake_cli.invoke(main, ["build", "--site", str(site_dir), "--output", str(blocked)])
    assert result.exit_code == 1
    _no_traceback(result)
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "cannot write the artifact set to" in lines[0] and "Fix:" in lines[0]
    assert not (site_dir / "_site").exists()


def test_build_into_a_directory_that_does_not_exist_yet_creates_it(site_dir, fake_cli, tmp_path):
    target = tmp_path / "new" / "parent" / "v1"
    result = fake_cli.invoke(main, ["build", "--site", str(site_dir), "--output", str(target), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == str(target) and (target / "manifest.json").is_file()


def test_two_pages_with_the_same_file_name_are_named_by_their_paths(site_dir, fake_cli):
    shutil.copy(site_dir / "junior" / "一次方程式.html", site_dir / "senior" / "一次方程式.html")
    result = fake_cli.invoke(main, ["build", "--site", str(site_dir), "--format", "json"])
    assert result.exit_code == 0, result.output
    chunks = json.loads((site_dir / "_site" / "knowledge" / "v2" / "manifest.json").read_text(encoding="utf-8"))
    assert chunks["counts"]["materials"] == 11


def test_two_pages_with_the_same_path_fail_the_build_and_write_nothing(site_dir, fake_cli):
    # 一次方程式.html twice: the file name is not unique, so both pages are named by their paths,
    # and junior/一次方程式/index.html's path is junior/一次方程式 too
    shutil.copy(site_dir / "junior" / "一次方程式.html", site_dir / "senior" / "一次方程式.html")
    (site_dir / "junior" / "一次方程式").mkdir()
    shutil.copy(site_dir / "junior" / "一次方程式.html", site_dir / "junior" / "一次方程式" / "index.html")
    result = fake_cli.invoke(main, ["build", "--site", str(site_dir)])
    assert result.exit_code == 1
    _no_traceback(result)
    assert "error: [duplicate-page] pages 'junior/一次方程式/index.html' and 'junior/一次方程式.html' both get the " \
           "page id 'junior/一次方程式'" in result.output
    assert "Fix: rename or remove one of the two" in result.output
    assert not (site_dir / "_site").exists()


def test_a_failed_cli_build_leaves_the_previous_set_byte_for_byte(site_dir, fake_cli):
    assert fake_cli.invoke(main, ["build", "--site", str(site_dir)]).exit_code == 0
    out = site_dir / "_site" / "knowledge"
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    page = site_dir / "junior" / "一次方程式.html"
    page.write_bytes(page.read_bytes().replace("移項".encode(), b"\xff\xfe", 1))  # invalid UTF-8
    result = fake_cli.invoke(main, ["build", "--site", str(site_dir)])
    assert result.exit_code == 1 and "no artifacts were written" in result.output
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_an_english_school_term_in_the_query_finds_the_japanese_box(tmp_path, fake_cli):
    site = tmp_path / "s"
    _small_site(site, {
        "確率.html": _page("確率", '<div class="def-box" id="def-expected-value"><strong>期待値</strong>'
                                 "<p>値とその確率の積の和を期待値という。</p></div>"),
        "図形.html": _page("図形", '<div class="rule-box" id="rule-angle-sum"><strong>内角の和</strong>'
                                 "<p>三角形の内角の和は180°である。</p></div>"),
    })
    assert fake_cli.invoke(main, ["build", "--site", str(site)]).exit_code == 0
    index = site / "_site" / "knowledge" / "v2"
    result = fake_cli.invoke(main, ["search", "expected value", "--index", str(index), "--mode", "lexical",
                                    "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in json.loads(result.output)["results"]] == ["確率#def-expected-value"]


def test_the_readme_python_example_runs_as_written_and_shows_the_defaults(site_dir, fake_cli, tmp_path,
                                                                           monkeypatch):
    snippet = re.search(r"# Python API\n\n```python\n(.*?)```", README, flags=re.S).group(1)
    monkeypatch.chdir(site_dir.parent)  # the snippet names "site" and "site/_site/knowledge/v2"
    namespace: dict = {}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    assert namespace["result"].output == site_dir / "_site" / "knowledge" / "v2"
    assert namespace["index"].get("二次方程式#rule-quadratic-formula").title
    assert namespace["settings"] == kb.SearchSettings()  # "defaults shown"


def test_eval_report_md_lists_the_queries_that_missed(fake_index_dir, fake_cli, tmp_path):
    dataset = tmp_path / "d.jsonl"
    rows = [{"qid": "hit", "query": "たすきがけ", "relevant": ["因数分解#method-tasukigake"], "kind": "variant"},
            {"qid": "miss", "query": "たすきがけ", "relevant": ["三角比#def-sine"], "kind": "variant"}]
    dataset.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    assert "三角比#def-sine" in {c.id for c in index.chunks}
    out = tmp_path / "reports"
    result = fake_cli.invoke(main, ["eval", "--index", str(fake_index_dir), "--dataset", str(dataset),
                                    "--mode", "lexical", "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text(encoding="utf-8")
    misses = report.split("## Queries without a relevant result in the top 5", 1)[1]
    assert "| miss |" in misses and "| hit |" not in misses


def test_a_loopback_server_without_allowed_host_accepts_only_loopback_names(fake_index_dir, tmp_path):
    process, base = _start_http(fake_index_dir, tmp_path)
    port = base.rsplit(":", 1)[1]
    try:
        assert _post(base + "/mcp", {"Host": "attacker.example"})[0] == 421  # DNS rebinding
        assert _post(base + "/mcp", {"Host": f"attacker.example:{port}"})[0] == 421
        for name in ("127.0.0.1", "localhost"):
            assert _post(base + "/mcp", {"Host": f"{name}:{port}"})[0] not in (401, 403, 421), name
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


def test_health_shows_version_backend_and_build_id_and_no_content(fake_index_dir, tmp_path):
    import urllib.request

    process, base = _start_http(fake_index_dir, tmp_path, "--token", "s3cret")
    try:
        with urllib.request.urlopen(base + "/health", timeout=TIMEOUT) as response:  # no token needed
            health = json.loads(response.read())
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)
    manifest = json.loads((fake_index_dir / "manifest.json").read_text(encoding="utf-8"))
    assert health["status"] == "healthy" and health["version"] == kb.__version__
    assert health["backend"] == "artifacts" and health["build_id"] == manifest["build_id"]
    assert "たすき" not in json.dumps(health, ensure_ascii=False)  # no content of the site


class _EmbeddingsServer(ThreadingHTTPServer):
    """An OpenAI-compatible /v1/embeddings that records the length of every input it is sent."""

    def __init__(self):
        self.lengths: list[int] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(handler):
                body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
                self.lengths.extend(len(text) for text in body["input"])
                data = [{"object": "embedding", "index": i,
                         "embedding": np.random.default_rng(zlib.crc32(t.encode())).standard_normal(8).tolist()}
                        for i, t in enumerate(body["input"])]
                payload = json.dumps({"object": "list", "data": data, "model": body.get("model") or "m",
                                      "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
                handler.send_response(200)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(payload)))
                handler.end_headers()
                handler.wfile.write(payload)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


def test_build_truncates_a_text_over_8191_tokens_with_a_warning(tmp_path):
    server = _EmbeddingsServer()
    try:
        site = tmp_path / "s"
        long_text = "二次方程式の解の公式を使って方程式を解く。" * 3000  # far over 8,191 tokens
        _small_site(site, {"長文.html": _page("長文", '<div class="rule-box" id="rule-long"><strong>長い箱</strong>'
                                                   f"<p>{long_text}</p></div>")})
        result = CliRunner().invoke(main, ["build", "--site", str(site), "--embedder", "openai-compatible",
                                           "--base-url", f"http://127.0.0.1:{server.server_address[1]}/v1",
                                           "--embedding-model", "m", "--embedding-dimensions", "8"])
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 0, result.output
    assert server.lengths and max(server.lengths) < len(long_text)
    assert "exceeds 8191 tokens and is truncated for embedding" in result.output
    lines = (site / "_site" / "knowledge" / "v2" / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()
    chunks = [json.loads(line) for line in lines]
    assert long_text[-200:] in json.dumps(chunks, ensure_ascii=False)  # the artifact keeps the whole text


def test_every_readme_link_to_a_file_of_the_repository_resolves():
    """Every link of the README and of each docs page to a file, from where it is written (the docs build checks
    the anchors: tests/test_docs.py), and every path of the repository the manual names in code."""
    written_by_the_tool = {"data/learns.generated.yml", "site/_site"}  # outputs, not sources
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"
        for path in set(re.findall(r"`((?:knowledge_build|data|bench|_plugins|site|tools)/[\w./*-]+)`", text)):
            assert path in written_by_the_tool or list(ROOT.glob(path)), f"{page.relative_to(ROOT)}: {path}"
    assert (ROOT / ".pre-commit-hooks.yaml").is_file() and (ROOT / ".github" / "workflows" / "index.yml").is_file()


@pytest.mark.parametrize("option, value, field", [("--type", "method", "type"), ("--category", "geometry", "category"),
                                                  ("--material", "因数分解", "material"), ("--level", "発展", "level")])
def test_cli_search_filters_restrict_every_result(fake_index_dir, fake_cli, option, value, field):
    chunks = {c.id: c for c in KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder()).chunks}
    result = fake_cli.invoke(main, ["search", "方程式を解く", "--index", str(fake_index_dir), "-k", "10",
                                    option, value, "--format", "json"])
    assert result.exit_code == 0, result.output
    ids = [r["id"] for r in json.loads(result.output)["results"]]
    assert ids and all(getattr(chunks[i], field) == value for i in ids), ids
    unfiltered = fake_cli.invoke(main, ["search", "方程式を解く", "--index", str(fake_index_dir), "-k", "10",
                                        "--format", "json"])
    assert {getattr(chunks[r["id"]], field) for r in json.loads(unfiltered.output)["results"]} != {value}


def test_learns_generate_all_asks_again_for_generated_learns_but_never_for_human_ones(site_dir):
    from .test_learns_generate import _generate, _start_chat_server

    chat_server = _start_chat_server()
    try:
        first = json.loads(_generate(site_dir, chat_server).stdout)
        asked = len(chat_server["prompts"])
        assert first["generated"] and json.loads(_generate(site_dir, chat_server).stdout)["requests"] == 0
        again = _generate(site_dir, chat_server, "--all")
    finally:
        chat_server["stop"]()
    assert again.exit_code == 0, again.output
    assert sorted(json.loads(again.stdout)["generated"]) == sorted(first["generated"])
    assert len(chat_server["prompts"]) == 2 * asked  # the generated ones once more, nothing human-written
