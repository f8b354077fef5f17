"""The relevance signal on the reference corpus with the real model, through the CLI a user runs:
off-topic questions are marked not relevant, the dev set's correct answers stay relevant
(docs/retrieval.md, "Off-topic queries and relevance")."""

import json

import pytest
from click.testing import CliRunner

from knowledge_build.cli import main

from .conftest import ROOT

pytestmark = [pytest.mark.model, pytest.mark.corpus]

EVAL = ROOT / "data" / "eval"


def _answers(index_dir, path):
    """{qid: top-5 results} from `knowledge-build search --queries`."""
    result = CliRunner().invoke(main, ["search", "--queries", str(path), "--index", str(index_dir), "-k", "5"])
    assert result.exit_code == 0, result.output
    return {line["qid"]: line for line in map(json.loads, result.output.splitlines())}


@pytest.mark.parametrize("name", ["offtopic_queries.jsonl", "offtopic_heldout.jsonl"])
def test_at_least_90_percent_of_off_topic_questions_get_no_relevant_result(corpus_real_index, name):
    answers = _answers(corpus_real_index, EVAL / name)
    assert len(answers) >= 36
    rejected = [qid for qid, line in answers.items() if not line["relevant"]]
    assert all(not r["relevant"] for qid in rejected for r in answers[qid]["results"])
    assert len(rejected) / len(answers) >= 0.90, sorted(set(answers) - set(rejected))


def test_at_least_95_percent_of_the_dev_sets_correct_answers_stay_relevant(dev_queries, corpus_real_index):
    dataset = dev_queries
    labels = {item["qid"]: set(item["relevant"]) for item in map(json.loads, dataset.read_text("utf-8").splitlines())}
    answers = _answers(corpus_real_index, dataset)
    correct = [r for qid, line in answers.items() for r in line["results"] if r["id"] in labels[qid]]
    assert len(correct) >= 60
    kept = [r for r in correct if r["relevant"]]
    assert len(kept) / len(correct) >= 0.95, [r["id"] for r in correct if not r["relevant"]]
