"""The project's own evaluation sets on the reference corpus (data/eval/corpus_queries.jsonl,
data/eval/offtopic_queries.jsonl): their format, their size, and that every label names a real box.

The corpus-marked tests extract the corpus (no model) to check the labels; the others only read
the files, so a broken line is caught by the fast unit selection too."""

import json
from pathlib import Path

import pytest

from knowledge_build import extract, load_config
from knowledge_build.evaluation.evaluate import load_dataset

EVAL = Path(__file__).resolve().parent.parent / "data" / "eval"
CORPUS_QUERIES = EVAL / "corpus_queries.jsonl"
OFFTOPIC_QUERIES = EVAL / "offtopic_queries.jsonl"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus_chunks(corpus_dir):
    extraction = extract(load_config(site=corpus_dir, env={}))
    return extraction.chunks


def test_corpus_queries_load_as_an_eval_dataset_of_at_least_100_queries_with_unique_qids():
    queries = load_dataset(CORPUS_QUERIES)
    assert len(queries) >= 100
    assert len({q.qid for q in queries}) == len(queries)
    assert len({q.query for q in queries}) == len(queries)
    assert all(1 <= len(q.relevant) <= 3 and q.kind for q in queries)


def test_offtopic_queries_have_unique_qids_and_no_relevant_box():
    lines = _lines(OFFTOPIC_QUERIES)
    assert len(lines) >= 25
    assert len({line["qid"] for line in lines}) == len(lines)
    assert all(line["query"].strip() and line["kind"] == "offtopic" and not line.get("relevant") for line in lines)


def test_offtopic_queries_share_no_qid_or_query_with_the_corpus_queries():
    own = _lines(CORPUS_QUERIES)
    off = _lines(OFFTOPIC_QUERIES)
    assert not {q["qid"] for q in own} & {q["qid"] for q in off}
    assert not {q["query"] for q in own} & {q["query"] for q in off}


@pytest.mark.corpus
def test_every_corpus_query_label_is_a_chunk_id_of_the_reference_corpus(corpus_chunks):
    ids = {chunk.id for chunk in corpus_chunks}
    unknown = [(q.qid, r) for q in load_dataset(CORPUS_QUERIES) for r in q.relevant if r not in ids]
    assert not unknown


@pytest.mark.corpus
def test_no_corpus_query_repeats_a_chunk_title_or_a_long_run_of_corpus_text(corpus_chunks):
    """The queries are written in our own words: none is a box title, and none of 12+ characters
    occurs verbatim in a box (the corpus has no licence to be copied into the project)."""
    titles = {chunk.title.strip() for chunk in corpus_chunks}
    texts = [chunk.content for chunk in corpus_chunks]
    queries = [(line["qid"], line["query"]) for line in _lines(CORPUS_QUERIES) + _lines(OFFTOPIC_QUERIES)]
    assert not [qid for qid, query in queries if query.strip() in titles]
    assert not [qid for qid, query in queries if len(query) >= 12 and any(query in text for text in texts)]
