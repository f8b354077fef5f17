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


# ---------------------------------------------------------------- answers outside boxes (issue: content outside boxes)

OUTSIDE_BOX_QUERIES = EVAL / "outside_box_queries.jsonl"
OFFTOPIC_SITES = EVAL / "offtopic_sites.jsonl"
OUTSIDE_BOX_KINDS = {"section", "table", "kana", "romaji"}


def _norm(text: str) -> str:
    import unicodedata

    return "".join(unicodedata.normalize("NFKC", text).lower().split())


def test_outside_box_queries_meet_the_minimums_of_the_issue():
    lines = _lines(OUTSIDE_BOX_QUERIES)
    kinds = [line["kind"] for line in lines]
    assert len(lines) >= 75
    assert len({line["qid"] for line in lines}) == len(lines)
    assert len({line["query"] for line in lines}) == len(lines)
    assert set(kinds) <= OUTSIDE_BOX_KINDS
    assert kinds.count("table") >= 20
    assert kinds.count("kana") + kinds.count("romaji") >= 8
    assert sum(line["box_page"] is True for line in lines) >= 15
    assert all(isinstance(line["box_page"], bool) and line["material"] for line in lines)
    per_page = {}
    for line in lines:
        per_page[line["material"]] = per_page.get(line["material"], 0) + 1
    assert max(per_page.values()) <= 3


def test_outside_box_snippets_are_short_plain_text_and_kana_and_romaji_queries_are_what_they_say():
    import re

    lines = _lines(OUTSIDE_BOX_QUERIES)
    assert all(2 <= len(line["snippet"]) <= 20 and not re.search(r"[\\<>{}]", line["snippet"]) for line in lines)
    kana = [line["query"] for line in lines if line["kind"] == "kana"]
    romaji = [line["query"] for line in lines if line["kind"] == "romaji"]
    assert all(re.fullmatch(r"[\u3041-\u309f\u30fc ]+", query) for query in kana)
    assert all(re.fullmatch(r"[a-z0-9 ]+", query) for query in romaji)


def test_offtopic_site_queries_are_twenty_new_offtopic_questions():
    lines = _lines(OFFTOPIC_SITES)
    assert len(lines) == 20
    assert len({line["qid"] for line in lines}) == len(lines)
    assert all(line["query"].strip() and line["kind"] == "offtopic" and line["topic"] for line in lines)
    others = {line["query"] for path in (OFFTOPIC_QUERIES, EVAL / "offtopic_heldout.jsonl") for line in _lines(path)}
    assert not others & {line["query"] for line in lines}


def _page_text_outside_and_inside_boxes(path: Path) -> tuple[str, str, int]:
    """A source page's text with every element holding a knowledge id taken out, the text of those
    elements, and their number."""
    import re

    import lxml.html

    from knowledge_build.kinds import KNOWLEDGE_ID

    body = re.sub(r"\A---\s*\n.*?\n---\s*\n", "", path.read_text(encoding="utf-8"), flags=re.S)
    root = lxml.html.fragment_fromstring(body, create_parent="div")
    boxes = [el for el in root.iter() if isinstance(el.tag, str) and el is not root
             and KNOWLEDGE_ID.match(el.get("id") or "")]
    inside = "\n".join(_norm(box.text_content()) for box in boxes)
    for box in boxes:
        if box.getparent() is not None:  # not already gone with an enclosing box
            box.drop_tree()
    return _norm(root.text_content()), inside, len(boxes)


@pytest.mark.corpus
def test_every_outside_box_snippet_is_on_its_page_outside_every_box_and_in_no_box():
    """The labels are checked against the corpus's source pages: the page exists (by file stem, which
    is unique), the snippet is in its text once the boxes are taken out and in none of its boxes (so a
    box chunk alone can never score the hit), and box_page says whether the page has boxes."""
    from .conftest import CORPUS, require_shared

    require_shared(CORPUS)
    pages = [p for p in CORPUS.rglob("*.html") if not any(part.startswith("_") for part in p.relative_to(CORPUS).parts)]
    by_stem = {p.stem: p for p in pages}
    assert len(by_stem) == len(pages)
    wrong = []
    for line in _lines(OUTSIDE_BOX_QUERIES):
        page = by_stem.get(line["material"])
        if page is None:
            wrong.append((line["qid"], "no such page"))
            continue
        outside, inside, boxes = _page_text_outside_and_inside_boxes(page)
        snippet = _norm(line["snippet"])
        if snippet not in outside:
            wrong.append((line["qid"], "snippet not outside the boxes"))
        if snippet in inside:
            wrong.append((line["qid"], "snippet inside a box"))
        if line["box_page"] != (boxes > 0):
            wrong.append((line["qid"], f"box_page is {line['box_page']}, the page has {boxes} boxes"))
    assert not wrong
