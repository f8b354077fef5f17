"""examples/search_knowledge.mjs, the JavaScript example for tutor projects, run by a real `node`
against the sample site published to a real PostgreSQL + pgvector, through a loopback stand-in for
PostgREST's `POST /rest/v1/rpc/<function>` (no PostgREST binary is available here)."""

import json
import re
import shutil
import socket
import subprocess

import psycopg
import pytest

from knowledge_build.search.loader import join_site_url

from .conftest import ROOT, FakeEmbedder, new_database
from .postgrest import KEY, PostgrestStandIn
from .served import running

pytestmark = pytest.mark.db

EXAMPLE = ROOT / "examples" / "search_knowledge.mjs"
SITE_URL = "https://example.org"
TASUKIGAKE = "たすき掛けによる因数分解"  # the box 因数分解#method-tasukigake of site/junior/因数分解.html


@pytest.fixture(scope="module")
def node() -> str:
    """Node.js 18+ (its global fetch): `make test` installs Debian's nodejs. Missing: a failure, not a skip."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed: `make node` (or `make test`) installs Debian's nodejs (18 or newer)")
    version = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 18:
        pytest.fail(f"node {version} is too old for examples/search_knowledge.mjs: it needs Node.js 18 or newer")
    return found


@pytest.fixture(scope="module")
def database(pg_server, published_template) -> str:
    """The sample site (fake vectors) published to a database of its own, shared by this module (a copy
    of the session's template: tests/conftest.py)."""
    return new_database(pg_server["url"], prefix="kb_js_", template=published_template)


@pytest.fixture(scope="module")
def rest(database):
    with running(PostgrestStandIn(database)) as server:
        yield server


def run(node, rest, *args, key=KEY, stdin=None, **env):
    environment = {"SUPABASE_URL": rest.url, "SUPABASE_ANON_KEY": key, "NODE_NO_WARNINGS": "1", **env}
    environment = {name: value for name, value in environment.items() if value is not None}
    return subprocess.run([node, str(EXAMPLE), *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env=environment)  # NODE_NO_WARNINGS: Node 18 warns that fetch is experimental


def printed(stdout: str) -> list[tuple[str, str, float, bool]]:
    """(title, type, relevance, relevant) of each result the example printed."""
    return [(m[1], m[2], float(m[3]), m[4] == "relevant")
            for m in re.finditer(r"^\d+\. (.+)  \[(\w+), relevance ([\d.]+), (relevant|not relevant)\]$", stdout, re.M)]


def rpc(database, query, vector=None, count=5):
    """search_knowledge as anon, straight from SQL: (title, type, relevance, relevant)."""
    with psycopg.connect(database) as conn:
        conn.execute("set role anon")
        return conn.execute("select title, type, relevance, relevant from search_knowledge(query_text => %s,"
                            " query_embedding => %s::vector, match_count => %s)",
                            (query, None if vector is None else json.dumps(vector), count)).fetchall()


def same(shown, rows) -> bool:
    """The printed results are the RPC's rows, in order (relevance printed to two decimals)."""
    return len(shown) == len(rows) and all(
        a[:2] == b[:2] and a[3] == b[3] and abs(a[2] - b[2]) <= 0.0051 for a, b in zip(shown, rows))


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_hiragana_query_finds_the_kanji_title_box_with_its_url_and_learns(node, rest, database):
    result = run(node, rest, "たすきがけ", "--site-url", SITE_URL)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"1. {TASUKIGAKE}  [method, relevance ")
    assert lines[1] == "   " + join_site_url(SITE_URL, "/math-note/junior/因数分解.html#method-tasukigake")
    assert lines[2:6] == ["   - x² の係数が1でない二次式をたすき掛けで因数分解できる",
                          "   - 係数の組み合わせを図に並べて候補を整理できる",
                          "   - たすき掛けの結果を展開して確かめられる",
                          "   - 和と積の方法とたすき掛けの関係を説明できる"]
    assert same(printed(result.stdout), rpc(database, "たすきがけ")) and len(printed(result.stdout)) == 5


def test_romaji_query_finds_the_same_box_and_count_is_passed_on(node, rest, database):
    result = run(node, rest, "tasukigake", "--count", "3")
    assert result.returncode == 0, result.stderr
    found = printed(result.stdout)
    assert found[0][:2] == (TASUKIGAKE, "method") and found[0][3] is True
    assert same(found, rpc(database, "tasukigake", count=3)) and len(found) == 3
    assert "   /math-note/junior/因数分解.html#method-tasukigake" in result.stdout.splitlines()  # as stored without --site-url


def test_a_query_with_an_embedding_gets_the_hybrid_answer(node, rest, database, tmp_path):
    vector = [float(x) for x in FakeEmbedder().embed_query("たすきがけ")]
    (tmp_path / "vector.json").write_text(json.dumps(vector))
    hybrid, lexical = rpc(database, "たすきがけ", vector), rpc(database, "たすきがけ")
    assert hybrid != lexical  # else this test could not tell whether the vector got through
    from_file = run(node, rest, "たすきがけ", "--embedding", str(tmp_path / "vector.json"))
    from_stdin = run(node, rest, "たすきがけ", "--embedding", "-", stdin=json.dumps(vector))
    for result in (from_file, from_stdin):
        assert result.returncode == 0, result.stderr
        assert same(printed(result.stdout), hybrid) and hybrid[0][0] == TASUKIGAKE


def test_a_filter_reaches_the_rpc(node, rest):
    result = run(node, rest, "たすきがけ", "--type", "rule")
    assert result.returncode == 0, result.stderr
    assert printed(result.stdout) and {kind for _, kind, _, _ in printed(result.stdout)} == {"rule"}


def test_a_wrong_key_is_one_line_with_the_status_and_the_message(node, rest):
    result = run(node, rest, "たすきがけ", key="not-the-key")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: HTTP 401 from {rest.url}/rest/v1/rpc/search_knowledge: Invalid API key"
        " (hint: Double check your Supabase `anon` or `service_role` API key.)"]


def test_a_database_error_is_postgrests_code_and_message_in_one_line(node, rest, tmp_path):
    (tmp_path / "short.json").write_text("[0.1, 0.2, 0.3]")
    result = run(node, rest, "たすきがけ", "--embedding", str(tmp_path / "short.json"))
    assert result.returncode == 1 and result.stdout == ""
    # PostgreSQL names the two dimensions in the order of the operands the function compares
    assert result.stderr.splitlines() in (
        [f"error: HTTP 400 from {rest.url}/rest/v1/rpc/search_knowledge: 22000 different vector dimensions {a} and {b}"]
        for a, b in ((3, 64), (64, 3)))


def test_missing_settings_and_bad_arguments_are_usage_errors(node, rest, tmp_path):
    unset = run(node, rest, "たすきがけ", SUPABASE_URL=None, SUPABASE_ANON_KEY=None)
    assert unset.returncode == 2 and unset.stderr.splitlines() == [
        "error: set SUPABASE_URL (Supabase dashboard › Project Settings › API)"]
    (tmp_path / "words.json").write_text('["a", "b"]')
    for args, message in ((["--count", "0", "x"], "error: --count must be a whole number ≥ 1, got 0"),
                          (["x", "--embedding", str(tmp_path / "words.json")],
                           f"error: --embedding {tmp_path / 'words.json'}: expected a JSON array of numbers"),
                          ([], 'error: give a query, e.g. node search_knowledge.mjs "たすきがけ" (--help for more)')):
        result = run(node, rest, *args)
        assert result.returncode == 2 and result.stderr.splitlines() == [message], result.stderr


def test_unreachable_database_is_one_line(node, rest):
    port = free_port()
    result = run(node, rest, "x", SUPABASE_URL=f"http://127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"error: cannot reach http://127.0.0.1:{port}/rest/v1/rpc/search_knowledge: ECONNREFUSED"]


def test_help_needs_no_settings(node):
    result = subprocess.run([node, str(EXAMPLE), "--help"], capture_output=True, text=True, timeout=120, env={})
    assert result.returncode == 0 and result.stdout.startswith("Usage: node search_knowledge.mjs QUERY [options]")
    for option in ("--count", "--embedding", "--site-url", "--type", "SUPABASE_URL", "SUPABASE_ANON_KEY"):
        assert option in result.stdout
