"""Filters as a teacher writes them (the site's names), values that match nothing as clear errors,
absolute links and paged concept lists: through the library, the CLI and the real MCP SDK client,
with the fake embedder."""

import asyncio
import json

import pytest
from click.testing import CliRunner
from mcp import Client

from knowledge_build import (
    KnowledgeIndex,
    NoteStore,
    SearchService,
    UnknownFilterValue,
    build,
    load_config,
)
from knowledge_build.cli import main
from knowledge_build.search.filters import FilterVocabulary
from knowledge_build.serve.mcp_server import create_server
from knowledge_build.site.jekyll import open_site

from .conftest import FakeEmbedder

SAMPLE_CATEGORIES = "equations (方程式), functions (関数), geometry (図形と計量), numbers (数と式)"


@pytest.fixture(scope="module")
def index(fake_index_dir):
    return KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())


def _categories(index, results):
    return {index.get(r.id).category for r in results}


def test_a_category_given_by_the_name_the_site_shows_finds_that_category(index):
    results = index.search("面積", k=10, category="図形と計量")
    assert results and _categories(index, results) == {"geometry"}
    assert [r.id for r in results] == [r.id for r in index.search("面積", k=10, category="geometry")]


def test_a_category_no_chunk_has_is_an_error_naming_the_known_ones(index):
    with pytest.raises(UnknownFilterValue) as caught:
        index.search("面積", category="図形x")
    assert str(caught.value) == f"no category '図形x'; known: {SAMPLE_CATEGORIES}."


def test_a_type_written_as_its_plural_or_id_prefix_is_understood(index):
    assert {r.type for r in index.search("公式", k=10, type="rules")} == {"rule"}
    assert {r.type for r in index.search("とは", k=10, type="def")} == {"definition"}
    with pytest.raises(UnknownFilterValue, match="^no type 'rulez'; known: definition, example, method, rule, section, table, tip.$"):
        index.search("公式", type="rulez")


def test_a_level_no_page_uses_is_an_error_naming_the_levels(index):
    with pytest.raises(UnknownFilterValue, match="^no level '難しい'; known: 基礎, 標準, 発展.$"):
        index.search("公式", level="難しい")


def test_a_title_that_names_two_materials_is_an_error_naming_both():
    class Page:
        def __init__(self, material, title):
            self.material, self.material_title, self.category = material, title, ""

    vocabulary = FilterVocabulary([Page("円_中学_教材", "円"), Page("円_高校_教材", "円"), Page("三角比_教材", "三角比")])
    assert vocabulary.resolve("material", "三角比") == "三角比_教材"
    assert vocabulary.resolve("material", "三角比＿教材 ") == "三角比_教材"  # full width, a stray space
    with pytest.raises(UnknownFilterValue, match="^no material '円'; known: 円_中学_教材, 円_高校_教材. It names 2"):
        vocabulary.resolve("material", "円")


@pytest.fixture(scope="module")
def renamed_index(tmp_path_factory):
    """The sample site with one page named like the reference site (`…_教材.html`) and no `url`
    in _config.yml."""
    import shutil

    from .conftest import SITE

    base = tmp_path_factory.mktemp("renamed")
    site = base / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    (site / "junior" / "三平方の定理.html").rename(site / "junior" / "三平方の定理_教材.html")
    config = site / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace('url: "https://example.github.io"\n', ""),
                      encoding="utf-8")
    output = build(load_config(site=site, cache_dir=base / "cache", env={}), embedder=FakeEmbedder()).output
    return KnowledgeIndex.open(output, embedder=FakeEmbedder())


def test_a_material_given_by_its_page_title_finds_the_suffixed_page(renamed_index):
    results = renamed_index.search("直角三角形", k=5, material="三平方の定理")
    assert results and {r.material for r in results} == {"三平方の定理_教材"}


def test_results_have_no_absolute_url_when_the_site_url_is_unknown(renamed_index):
    result = renamed_index.search("直角三角形", k=1)[0]
    assert result.absolute_url is None and result.url.startswith("/math-note/")


def test_results_link_absolutely_and_percent_encoded_when_the_site_url_is_known(index):
    result = index.search("解の公式", k=1, material="二次方程式")[0]
    assert result.url == "/math-note/junior/二次方程式.html#" + result.anchor  # v1: root-relative, unchanged
    assert result.absolute_url == ("https://example.github.io/math-note/junior/"
                                   "%E4%BA%8C%E6%AC%A1%E6%96%B9%E7%A8%8B%E5%BC%8F.html#" + result.anchor)


def test_categories_yml_of_the_wrong_shape_is_a_diagnostic_on_its_line(site_dir):
    (site_dir / "_data" / "categories.yml").write_text(
        "- id: numbers\n  name: 数と式\n- id: geometry\n  name: [図形]\n", encoding="utf-8")
    site = open_site(site_dir)
    assert site.categories == {"numbers": "数と式"}
    assert [d.format() for d in site.diagnostics] == [
        (f"{site_dir / '_data' / 'categories.yml'}:4:1: error: [categories-yaml] category 2 needs an 'id' and a "
        "'name', each a single text. Fix: write each category as `- id: geometry` with a `name:` line "
        "holding the name the site shows")]


def test_cli_search_by_display_names_answers_and_an_unknown_category_exits_1_with_one_line(fake_index_dir,
                                                                                            fake_open):
    found = CliRunner().invoke(main, ["search", "面積", "--index", str(fake_index_dir), "--category", "図形と計量",
                                      "--format", "json"])
    assert found.exit_code == 0, found.output
    results = json.loads(found.output)["results"]
    assert results and all(r["absolute_url"].startswith("https://example.github.io/math-note/") for r in results)
    refused = CliRunner().invoke(main, ["search", "面積", "--index", str(fake_index_dir), "--category", "図形x"])
    assert refused.exit_code == 1
    assert refused.output == f"Error: no category '図形x'; known: {SAMPLE_CATEGORIES}.\n"


async def _call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    return result.is_error, (result.content[0].text if result.is_error else result.structured_content)


def test_mcp_refuses_unknown_arguments_and_filter_values_and_filters_by_level(index, tmp_path):
    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["search_knowledge"].input_schema["additionalProperties"] is False
            assert "level" in tools["search_knowledge"].input_schema["properties"]
            assert await _call(client, "search_knowledge", query="公式", categroy="geometry") == (
                True, ("search_knowledge does not take 'categroy'; its arguments are: query, top_k, type, category, "
                      "material, level, min_relevance, include_sources, version, language"))
            assert await _call(client, "search_knowledge", query="公式", type="rulez") == (
                True, "no type 'rulez'; known: definition, example, method, rule, section, table, tip.")
            assert await _call(client, "list_concepts", category="図形x") == (
                True, f"no category '図形x'; known: {SAMPLE_CATEGORIES}.")
            error, data = await _call(client, "search_knowledge", query="公式", top_k=20, level="発展")
            assert not error and data["total"] > 0
            assert {index.get(r["id"]).level for r in data["results"]} == {"発展"}
            error, chunk = await _call(client, "get_chunk_by_id", id="二次方程式#rule-quadratic-formula")
            assert not error and chunk["absolute_url"] == index.absolute_url(chunk["url"]) is not None
            error, data = await _call(client, "search_knowledge", query="公式", type="rules", category="方程式")
            assert not error and data["total"] > 0 and {r["type"] for r in data["results"]} == {"rule"}

    asyncio.run(session())


def test_mcp_list_concepts_pages_through_every_concept_once(index, tmp_path):
    server = create_server(SearchService(index), NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            error, first = await _call(client, "list_concepts")
            assert not error and first["total"] == len(index) and len(first["concepts"]) == 100
            seen, offset = [], 0
            while offset is not None:
                error, page = await _call(client, "list_concepts", limit=50, offset=offset)
                assert not error and page["total"] == len(index) and len(page["concepts"]) <= 50
                seen += [c["id"] for c in page["concepts"]]
                offset = page["next_offset"]
            assert seen == sorted(c.id for c in index.chunks)
            error, clamped = await _call(client, "list_concepts", limit=10**6)
            assert not error and clamped["limit"] == 500
            assert await _call(client, "list_concepts", offset=-1) == (True, "offset must be 0 or more")
            error, geometry = await _call(client, "list_concepts", category="図形と計量", limit=500)
            assert {c["category"] for c in geometry["concepts"]} == {"geometry"}
            assert geometry["concepts"][0]["absolute_url"].startswith("https://example.github.io/math-note/")

    asyncio.run(session())


@pytest.mark.db
def test_the_database_path_resolves_display_names_and_pages_like_the_artifacts(fake_index_dir, fresh_db):
    from knowledge_build.store.postgres import connect, publish

    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    with connect(fresh_db) as conn:
        publish(conn, fake_index_dir)
    service = SearchService(index, fresh_db)
    try:
        results = service.search("面積", k=5, category="図形と計量")
        assert results and {r.source for r in results} == {"database"}
        assert _categories(index, results) == {"geometry"}
        page = service.concept_page(category="図形と計量", limit=3, offset=2)
        artifacts = SearchService(index).concept_page(category="図形と計量", limit=3, offset=2)
        assert {c["source"] for c in page["concepts"]} == {"database"}
        strip = [{k: v for k, v in c.items() if k != "source"} for c in page["concepts"]]
        assert strip == [{k: v for k, v in c.items() if k != "source"} for c in artifacts["concepts"]]
        assert page["total"] == artifacts["total"] and page["next_offset"] == 5
        with pytest.raises(UnknownFilterValue, match="^no category '図形x'"):
            service.concepts(category="図形x")
        chunk = service.get("二次方程式#rule-quadratic-formula")
        assert chunk["source"] == "database" and chunk["absolute_url"].startswith("https://example.github.io/")
    finally:
        service.close()
