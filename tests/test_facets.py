"""Versions and languages as facets (site/facets.py, ranking/facets.py): found in the site, recorded on chunks,
and the same default and filters in every front door: the artifacts, the CLI, MCP, the database and the box."""

import asyncio
import json
import subprocess

import psycopg
import pytest
from click.testing import CliRunner
from mcp import Client

from knowledge_build import KnowledgeIndex, NoteStore, SearchService, UnknownFilterValue, build, load_config
from knowledge_build.browser.search import BrowserIndex
from knowledge_build.cli import main
from knowledge_build.ranking.facets import default_facets
from knowledge_build.serve.mcp_server import create_server
from knowledge_build.site.facets import site_facets
from knowledge_build.store.postgres import connect, hybrid_search, publish

from .conftest import ROOT, FakeEmbedder
from .served import serving
from .test_js_example import node  # noqa: F401  (the fixture: node 18+, a failure when missing)

VERSIONS = ("1.5", "1.6", "1.7")
PAGE = """<!doctype html><html lang="ja"><head><title>{title}</title></head><body>
<nav><a href="/">トップ</a></nav><main><h1>{title}</h1>
<h2 id="install">インストール</h2>
<p>バージョン {v} は pip でインストールします。仮想環境を作り、依存するパッケージをまとめて入れてから設定ファイルを確認します。
手順は環境ごとに少しずつ違うので、最初に動作環境の表を確かめてください。</p>
<h2 id="usage">使い方</h2>
<p>コマンドを実行するとサイトを検索できます。結果は関連の高い順に並び、見出しへのリンクから本文の該当箇所に移動できます。
この版で{feature}が加わりました。</p>
</main></body></html>"""
HOME = """<!doctype html><html lang="ja"><head><title>ドキュメント</title></head><body><main><h1>ドキュメント</h1>
<p>各バージョンの説明はそれぞれのフォルダにあります。古い版も新しい版も同じ目次で読むことができます。</p></main></body></html>"""


def _versioned_site(root, versions=VERSIONS, pages=("guide", "api")):
    for v in versions:
        for name in pages:
            path = root / f"v{v}" / "ja" / f"{name}.html"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(PAGE.format(title=f"{name} {v}", v=v, feature=f"機能{v.replace('.', '')}"), encoding="utf-8")
    (root / "index.html").write_text(HOME, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def versioned_index(tmp_path_factory):
    work = tmp_path_factory.mktemp("versioned")
    site = _versioned_site(work / "site")
    config = load_config(site=site, output=work / "out", cache_dir=work / "cache", env={})
    return build(config, embedder=FakeEmbedder()).output


@pytest.fixture(scope="module")
def index(versioned_index):
    return KnowledgeIndex.open(versioned_index, embedder=FakeEmbedder())


# --- finding the facets -----------------------------------------------------------------------------------


def test_version_folders_are_found_by_their_names_and_the_pages_they_repeat():
    rels = [f"v{v}/ja/{p}.html" for v in VERSIONS for p in ("a", "b")] + ["index.html"]
    facets = site_facets(ROOT, rels, {})
    assert facets.versions == ("v1.7", "v1.6", "v1.5")  # newest first: the highest number
    assert facets.version["v1.6/ja/a.html"] == "v1.6" and facets.version["index.html"] == ""
    assert facets.languages == ()  # one language: no facet


def test_numbered_chapters_are_not_versions_when_no_page_repeats_below_them():
    rels = ["1/intro.html", "1/sets.html", "2/functions.html", "2/limits.html", "index.html"]
    facets = site_facets(ROOT, rels, {})
    assert facets.versions == () and facets.version == {}


def test_mikes_versions_json_gives_the_order_and_the_aliases(tmp_path):
    (tmp_path / "versions.json").write_text(json.dumps([
        {"version": "2.0", "title": "2.0", "aliases": ["latest"]}, {"version": "10.0", "title": "10.0 (beta)",
                                                                      "aliases": []},
        {"version": "1.0", "title": "1.0", "aliases": []}]), encoding="utf-8")
    rels = [f"{v}/{p}.html" for v in ("1.0", "2.0", "10.0") for p in ("a", "b")]
    facets = site_facets(tmp_path, rels, {})
    assert facets.versions == ("2.0", "10.0", "1.0")  # the file's order, not the numbers'
    assert facets.aliases == {"latest": "2.0"}


def test_language_folders_and_page_languages_are_facets_only_with_two_languages():
    rels = [f"{lang}/{p}.html" for lang in ("ja", "en") for p in ("a", "b")]
    by_folder = site_facets(ROOT, rels, {})
    assert by_folder.languages == ("en", "ja") or by_folder.languages == ("ja", "en")
    assert by_folder.language["en/a.html"] == "en"
    by_page = site_facets(ROOT, ["a.html", "b.html", "c.html"], {"a.html": "ja", "b.html": "ja", "c.html": "en"})
    assert by_page.languages == ("ja", "en") and by_page.language["c.html"] == "en"
    assert site_facets(ROOT, ["a.html", "b.html"], {"a.html": "ja", "b.html": "ja"}).language == {}
    # a theme's English 404 and search pages beside 40 Japanese ones: one language
    pages = {f"p{i}.html": "ja" for i in range(40)} | {"404.html": "en", "search.html": "en"}
    assert site_facets(ROOT, list(pages), pages).languages == ()


def test_read_the_docs_layout_language_then_version_gives_both_facets():
    """Read the Docs serves /<language>/<version>/: `ja/latest/`, `ja/1.7/`, `en/1.7/`."""
    rels = [f"{lang}/{v}/{p}.html" for lang in ("ja", "en") for v in ("latest", "1.7", "1.6") for p in ("a", "b")]
    facets = site_facets(ROOT, rels, {})
    assert facets.versions == ("1.7", "1.6", "latest")  # a number before a channel name
    assert facets.version["en/1.6/b.html"] == "1.6" and facets.language["en/1.6/b.html"] == "en"
    assert set(facets.languages) == {"ja", "en"}


def test_the_default_is_the_newest_version_and_japanese_for_a_question_in_japanese_script():
    assert default_facets({"version": None, "language": None}, "二次方程式", ["2.0", "1.0"], ["ja", "en"]) == {
        "version": "2.0", "language": "ja"}
    # Latin letters may be romaji: every language
    assert default_facets({"version": None, "language": None}, "tasukigake", ["2.0"], ["ja", "en"])["language"] is None
    assert default_facets({"version": "all", "language": "all"}, "式", ["2.0"], ["ja"]) == {
        "version": None, "language": None}
    assert default_facets({"version": None}, "式", [], []) == {"version": None}


# --- the artifacts, the CLI and MCP -------------------------------------------------------------------------


def test_chunks_and_manifest_record_the_versions(versioned_index, index):
    manifest = json.loads((versioned_index / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["site"]["facets"] == {"versions": ["v1.7", "v1.6", "v1.5"]}
    assert index.get("v1.5/ja/guide#sec-insutoru").version == "v1.5"
    assert index.get("index#sec-dokyumento").version == ""


def test_a_search_without_a_version_answers_from_the_newest_and_links_the_others(index):
    results = index.search("インストール", k=5)
    versions = {r.version for r in results}
    assert versions <= {"v1.7", ""} and "v1.7" in versions
    lead = next(r for r in results if r.version)
    assert [o["version"] for o in lead.other_versions] == ["v1.6", "v1.5"]
    assert lead.other_versions[1]["id"] == lead.id.replace("v1.7", "v1.5")


def test_a_version_filter_takes_the_version_with_or_without_its_v(index):
    for asked in ("1.5", "v1.5"):
        assert {r.version for r in index.search("インストール", k=5, version=asked)} <= {"v1.5", ""}
    with pytest.raises(UnknownFilterValue, match="v1.7"):
        index.search("インストール", version="9.9")


def test_every_version_shows_each_place_once(index):
    results = index.search("インストール", k=5, version="all")
    places = [r.url.replace(r.version, "") if r.version else r.url for r in results]
    assert len(places) == len(set(places)) >= 3  # without the filter: 3 of the 5 would repeat one place
    assert all(len(r.other_versions) == 2 for r in results if r.version)
    assert {r.version for r in results} <= {"v1.7", ""}  # each place led by its newest version


def test_the_cli_filters_by_version(versioned_index, fake_open):
    result = CliRunner().invoke(main, ["search", "インストール", "--index", str(versioned_index), "--doc-version",
                                       "1.6", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["results"] and {r.get("version", "") for r in data["results"]} <= {"v1.6", ""}
    unknown = CliRunner().invoke(main, ["search", "インストール", "--index", str(versioned_index), "--doc-version", "9"])
    assert unknown.exit_code == 1 and "Traceback" not in unknown.output
    assert "no version '9'; known: all (every version), v1.5, v1.6, v1.7." in unknown.output


def test_mcp_search_takes_a_version(index, tmp_path):
    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            result = await client.call_tool("search_knowledge", {"query": "インストール", "version": "1.5"})
            data = result.structured_content
            assert not result.is_error and {r.get("version", "") for r in data["results"]} <= {"v1.5", ""}
            result = await client.call_tool("search_knowledge", {"query": "インストール"})
            assert {r.get("version", "") for r in result.structured_content["results"]} <= {"v1.7", ""}

    asyncio.run(session())


def test_a_site_without_versions_writes_no_facet(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(HOME, encoding="utf-8")
    out = build(load_config(site=site, output=tmp_path / "out", cache_dir=tmp_path / "cache", env={}),
                embedder=FakeEmbedder()).output
    assert "facets" not in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["site"]
    assert all("version" not in json.loads(line) for line in (out / "knowledge_chunks.jsonl").read_text().splitlines())
    assert "versions" not in json.loads((out / "knowledge-search.json").read_text(encoding="utf-8"))


def test_facets_false_records_no_version(tmp_path):
    site = _versioned_site(tmp_path / "site")
    config = load_config(site=site, output=tmp_path / "out", cache_dir=tmp_path / "cache", env={"KB_FACETS": "false"})
    out = build(config, embedder=FakeEmbedder()).output
    assert "facets" not in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["site"]
    index = KnowledgeIndex.open(out, embedder=FakeEmbedder())
    assert len({r.url.split("/")[1] for r in index.search("インストール", k=5)}) > 1  # every version answers


# --- the box -------------------------------------------------------------------------------------------------


def test_the_box_answers_from_the_newest_version_and_filters_by_another(versioned_index, index):
    box = BrowserIndex(versioned_index)
    assert [v["value"] for v in box.entry["versions"]] == ["v1.7", "v1.6", "v1.5"]
    newest = {index.get(r.id).version for r in box.search("インストール", k=5)}
    assert newest <= {"v1.7", ""} and "v1.7" in newest
    older = {index.get(r.id).version for r in box.search("インストール", k=5, version="v1.5")}
    assert older <= {"v1.5", ""} and "v1.5" in older


def test_every_version_in_the_box_shows_each_place_once(versioned_index, index):
    """Six sections in three versions hold the word: two places, each shown once, first (the dense channel may add
    places that do not hold it below them)."""
    results = BrowserIndex(versioned_index).search("インストール", k=5, version="all")
    places = [index.get(r.id).url.replace(index.get(r.id).version, "*") for r in results]
    assert sorted(places[:2]) == ["/*/ja/api.html#install", "/*/ja/guide.html#install"]
    assert len(set(places)) == len(places)
    assert {index.get(r.id).version for r in results[:2]} == {"v1.7"}  # led by the newest version


@pytest.fixture(scope="module")
def served(versioned_index):
    """The artifact set served by a real HTTP server on 127.0.0.1 (the box fetches its bundle from it)."""
    with serving(versioned_index) as origin:
        yield f"{origin}/"


def test_the_box_javascript_answers_as_its_python_mirror_with_each_version_filter(node, served,  # noqa: F811
                                                                                   versioned_index):
    module = ROOT / "knowledge_build" / "browser" / "static" / "knowledge-search.js"
    asked = [{}, {"version": "v1.5"}, {"version": "all"}]
    code = (f"const m = await import({json.dumps(module.as_uri())}); const box = await m.open({json.dumps(served)});"
            f" const out = []; for (const o of {json.dumps(asked)}) out.push((await box.search('インストール',"
            f" {{ k: 5, ...o }})).map((r) => r.id)); console.log(JSON.stringify(out));")
    done = subprocess.run([node, "--input-type=module", "-e", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    mirror = BrowserIndex(versioned_index)
    expected = [[r.id for r in mirror.search("インストール", k=5, **o)] for o in asked]
    assert json.loads(done.stdout) == expected
    assert all(i.startswith(("v1.7/", "index")) for i in expected[0]) and any(i.startswith("v1.5/") for i in expected[1])


# --- the database --------------------------------------------------------------------------------------------


@pytest.mark.db
def test_the_database_function_filters_by_version_and_the_service_defaults_to_the_newest(versioned_index, fresh_db):
    with connect(fresh_db) as conn:
        publish(conn, versioned_index)
        conn.commit()
    with psycopg.connect(fresh_db) as conn:
        rows = hybrid_search(conn, "インストール", None, 10, version="v1.6")
        versions = {conn.execute("select version from knowledge_chunks where id = %s", (r[0],)).fetchone()[0]
                    for r in rows}
    assert rows and versions <= {"v1.6", ""} and "v1.6" in versions
    service = SearchService(KnowledgeIndex.open(versioned_index, embedder=FakeEmbedder()), fresh_db,
                            build_check_interval=0)
    results = service.search("インストール", k=5, mode="lexical")
    assert {r.source for r in results} == {"database"}
    assert {r.version for r in results} <= {"v1.7", ""} and "v1.7" in {r.version for r in results}
    chunk = service.get("v1.6/ja/guide#sec-insutoru")
    assert chunk["source"] == "database" and chunk["version"] == "v1.6"
    assert "version" not in service.get("index#sec-dokyumento")
