"""Evaluation: metric arithmetic, datasets, reports and the regression gate."""

import json

import pytest
from click.testing import CliRunner

from knowledge_build.cli import main
from knowledge_build.evaluation.evaluate import DatasetError, load_baseline, load_dataset, query_metrics


def test_metrics_of_one_ranking():
    m = query_metrics(["x", "a", "y", "b", "z", "c"], {"a", "b"}, k=5)
    assert m["hit@1"] == 0.0 and m["hit@5"] == 1.0 and m["mrr@10"] == 0.5
    assert m["recall@5"] == 1.0 and m["precision@5"] == 0.4
    assert m["f1@5"] == pytest.approx(2 * 0.4 / 1.4)
    ideal = 1 + 1 / 1.584962500721156
    assert m["ndcg@10"] == pytest.approx((1 / 1.584962500721156 + 1 / 2.321928094887362) / ideal)


def test_no_relevant_result_scores_zero():
    m = query_metrics(["x", "y"], {"a"}, k=5)
    assert m["hit@10"] == 0.0 and m["mrr@10"] == 0.0 and m["ndcg@10"] == 0.0 and m["f1@5"] == 0.0


def test_a_bad_dataset_line_is_named(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"qid": "1", "query": "a", "relevant": ["x#rule-a"]}\n{"qid": "2"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="d.jsonl:2:1: error: .dataset. expected a JSON object with qid, query, "
                                           "relevant .list. and kind; missing query, relevant. Fix: write the line"):
        load_dataset(path)


BAD_LINES = {
    '{"qid": "2", "query": "移項", "relevant": []}': "relevant must be a non-empty list of chunk ids, not []",
    '{"qid": "3", "query": "移項", "relevant": "一次方程式#rule-transposition"}': "relevant must be a non-empty list",
    '{"qid": "4", "query": "移項", "relevant": [null]}': "every relevant id must be a non-empty string",
    '{"qid": "5", "query": "", "relevant": ["x#rule-a"]}': "query must be a non-empty string",
    '{"qid": {"a": 1}, "query": "a", "relevant": ["x#rule-a"]}': "qid must be a non-empty string or a number",
    '{"qid": "7", "query": "a", "relevant": ["x#rule-a"], "kind": 3}': "kind must be a string",
    '["qid", "query"]': "expected a JSON object with qid, query, relevant and kind, found list",
    '{"qid": "9", "query": "a", ': "the line is not JSON",
    '{"qid": "1", "query": "b", "relevant": ["x#rule-b"]}': "qid '1' is used again (first on line 1)",
    '{"qid": "11", "query": "%s", "relevant": ["x#rule-a"]}' % ("あ" * 2001):
        "query is 2,001 characters; search takes at most 2,000",
}


def test_every_bad_dataset_line_is_reported_with_its_line_and_fix(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"qid": "1", "query": "a", "relevant": ["x#rule-a"]}\n' + "\n".join(BAD_LINES) + "\n",
                    encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"{len(BAD_LINES)} bad line(s) in dataset {path}; nothing was evaluated:"
    for number, (line, message) in enumerate(BAD_LINES.items(), start=2):
        reported = lines[number - 1]
        assert reported.startswith(f"{path}:{number}:1: error: [dataset] ") and message in reported, reported
        assert " Fix: " in reported


def test_empty_relevant_list_fails_eval_with_one_message_not_a_traceback(fake_index, tmp_path, cli):
    rows = ROWS + [{"qid": "3", "query": "移項", "relevant": [], "kind": "keyword"}]
    result = cli.invoke(main, ["eval", "--index", str(fake_index), "--dataset", str(_dataset(tmp_path, rows))])
    assert result.exit_code == 1 and not isinstance(result.exception, ZeroDivisionError)
    assert "q.jsonl:3:1: error: [dataset] relevant must be a non-empty list of chunk ids, not []" in result.output
    assert "Traceback" not in result.output


def test_a_baseline_that_is_not_an_object_of_metrics_is_refused(tmp_path):
    path = tmp_path / "baseline.json"
    for text in ("[1, 2]", '{"hit@1": "high"}'):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(DatasetError, match="is not usable: .*Fix: write it again with --save-baseline"):
            load_baseline(path)


@pytest.fixture
def fake_index(fake_index_dir):
    return fake_index_dir


@pytest.fixture
def cli(fake_open):
    """The CLI with the fake embedder behind KnowledgeIndex.open."""
    return CliRunner()


def _dataset(tmp_path, rows):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [{"qid": "1", "query": "たすきがけ", "relevant": ["因数分解#method-tasukigake"], "kind": "variant"},
        {"qid": "2", "query": "移項", "relevant": ["一次方程式#rule-transposition"], "kind": "keyword"}]


def test_eval_writes_reports_and_prints_metrics_json(fake_index, tmp_path, cli):
    out = tmp_path / "reports"
    result = cli.invoke(main, ["eval", "--index", str(fake_index), "--dataset", str(_dataset(tmp_path, ROWS)),
                               "--output-dir", str(out), "--format", "json", "--mode", "lexical"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hit@5"] == 1.0 and data["mrr@10"] == 1.0 and data["queries"] == 2
    assert set(data["per_kind"]) == {"variant", "keyword"} and set(data["latency_ms"]) == {"p50", "p95"}
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [q["rank"] for q in report["queries"]] == [1, 1]
    assert "| all | 2 |" in (out / "report.md").read_text(encoding="utf-8")


def test_regression_beyond_the_threshold_fails(fake_index, tmp_path, cli):
    dataset, baseline = _dataset(tmp_path, ROWS), tmp_path / "baseline.json"
    args = ["eval", "--index", str(fake_index), "--dataset", str(dataset), "--output-dir", str(tmp_path / "r"),
            "--mode", "lexical", "--baseline", str(baseline)]
    assert cli.invoke(main, args + ["--save-baseline"]).exit_code == 0
    assert json.loads(baseline.read_text(encoding="utf-8"))["hit@1"] == 1.0
    assert cli.invoke(main, args + ["--fail-on-regression"]).exit_code == 0
    worse = _dataset(tmp_path, ROWS[:1] + [{**ROWS[1], "relevant": ["平方根#def-square-root"]}])
    result = cli.invoke(main, ["eval", "--index", str(fake_index), "--dataset", str(worse), "--output-dir",
                               str(tmp_path / "r"), "--mode", "lexical", "--baseline", str(baseline),
                               "--fail-on-regression"])
    assert result.exit_code == 1 and "REGRESSION hit@1: 1.000 -> 0.500" in result.output


def test_relevant_ids_missing_from_the_index_are_refused(fake_index, tmp_path, cli):
    rows = [{"qid": "1", "query": "x", "relevant": ["nowhere#rule-x"], "kind": "keyword"}]
    result = cli.invoke(main, ["eval", "--index", str(fake_index), "--dataset", str(_dataset(tmp_path, rows))])
    assert result.exit_code == 1 and "1 relevant id(s) are not in the index" in result.output


def test_save_baseline_needs_a_file(fake_index, tmp_path, cli):
    result = cli.invoke(main, ["eval", "--index", str(fake_index), "--dataset", str(_dataset(tmp_path, ROWS)),
                               "--save-baseline"])
    assert result.exit_code == 2 and "--save-baseline needs --baseline FILE" in result.output


def test_unwritable_report_directory_is_one_clear_error(fake_index, tmp_path, cli):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    result = cli.invoke(main, ["eval", "--index", str(fake_index), "--dataset", str(_dataset(tmp_path, ROWS)),
                               "--output-dir", str(blocker / "reports"), "--mode", "lexical"])
    assert result.exit_code == 1 and "Fix: pass --output-dir a writable path" in result.output
