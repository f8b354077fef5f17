"""Retrieval quality with the real model over site/: spelling variants and the CI eval gate."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build.cli import main

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("query", ["たすきがけ", "タスキガケ", "襷掛け", "tasukigake"])
def test_every_spelling_of_tasukigake_finds_the_box(real_index, query):
    assert "因数分解#method-tasukigake" in [r.id for r in real_index.search(query, k=5)]


def test_arabic_and_kanji_numerals_give_the_same_first_result(real_index):
    arabic = real_index.search("2次方程式の解の公式", k=1)[0]
    kanji = real_index.search("二次方程式の解の公式", k=1)[0]
    assert arabic.id == kanji.id == "二次方程式#rule-quadratic-formula"


def test_full_width_and_half_width_digits_agree(real_index):
    full = [r.id for r in real_index.search("３０°と６０°の直角三角形", k=5)]
    half = [r.id for r in real_index.search("30°と60°の直角三角形", k=5)]
    assert full == half


def test_similarity_threshold_drops_weak_results(real_index):
    results = real_index.search("二次方程式", k=10)
    cut = sorted(r.similarity for r in results)[5]
    kept = real_index.search("二次方程式", k=10, min_similarity=cut)
    dropped = {r.id for r in results if r.similarity < cut}
    assert kept and dropped and all(r.similarity >= cut for r in kept)
    assert not dropped & {r.id for r in kept}


def test_site_queries_do_not_regress_against_the_committed_baseline(real_index_dir, tmp_path):
    result = CliRunner().invoke(main, [
        "eval", "--index", str(real_index_dir), "--dataset", str(ROOT / "data" / "eval" / "site_queries.jsonl"),
        "--baseline", str(ROOT / "data" / "eval" / "site_baseline.json"), "--fail-on-regression",
        "--output-dir", str(tmp_path / "eval"), "--format", "json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output)
    assert metrics["regressions"] == []
    assert metrics["per_kind"]["variant"]["hit@5"] >= 0.9
