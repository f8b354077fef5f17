"""Hostile input to the library and CLI: queries of hyphens and punctuation, queries, notes and
documents over their limits, and texts far longer than the Japanese tokenizer can take at once."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, NoteStore, QueryTooLong
from knowledge_build.cli import main
from knowledge_build.errors import ContentTooLarge, TooManyChunks
from knowledge_build.index.postings import from_token_lists
from knowledge_build.index.verify_v2 import open_set
from knowledge_build.ranking.settings import MAX_QUERY_CHARS
from knowledge_build.search.channels import field_scores
from knowledge_build.store import notes as notes_module
from knowledge_build.text.ja import analyze, pieces

from .conftest import ROOT, SITE, FakeEmbedder

HOSTILE_QUERIES = ["x -- y", "2--3", "i--", "--", "---", '""', "''", "!!!", "、。", "-", "\x00", "x\x00y", "()[]{}"]


@pytest.fixture
def index(fake_index_dir):
    return KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())


@pytest.fixture
def cli(fake_open):
    """The CLI with the fake embedder behind KnowledgeIndex.open."""
    return CliRunner()


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "dense"])
@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_query_with_double_hyphen_or_only_punctuation_does_not_crash_search(index, query, mode):
    results = index.search(query, k=3, mode=mode)
    assert len(results) <= 3 and all(r.id in {c.id for c in index.chunks} for r in results)


def test_a_run_of_hyphens_is_one_token_and_no_token_is_ever_empty():
    assert analyze("x -- y")["lemma"] == ["x", "--", "y"]
    assert analyze("ガス")["lemma"] == ["ガス"]  # UniDic's "ガス-gas" lemma keeps its Japanese side
    for text in HOSTILE_QUERIES + ["2---3", "a-b", "ガス-gas", "e--mail"]:
        assert all(token for tokens in analyze(text).values() for token in tokens), text


def test_a_document_without_tokens_matches_no_query_token():
    models = from_token_lists({"lemma": [[], ["x", "y"], ["", "\x00"]]}, np.ones(3, dtype=bool))
    for query in ([""], ["\x00"], ["--"], ["x", ""], ["x", "\x00"]):
        scores = field_scores(models, {"lemma": query}, {"lemma": 1.0}, 3)
        assert scores[0] == 0 and scores[2] == 0, query
    assert field_scores(models, {"lemma": ["x"]}, {"lemma": 1.0}, 3)[1] > 0


def test_cli_search_and_eval_answer_queries_with_double_hyphens(fake_index_dir, cli, tmp_path):
    for query in ("x -- y", "2--3", "i--", "--"):
        # After "--" every word is the query, even one that looks like an option.
        result = cli.invoke(main, ["search", "--index", str(fake_index_dir), "--format", "json", "--", query])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["query"] == query
    lines = "".join(json.dumps({"qid": str(i), "query": q}) + "\n" for i, q in enumerate(HOSTILE_QUERIES))
    (tmp_path / "q.jsonl").write_text(lines, encoding="utf-8")
    result = cli.invoke(main, ["search", "--index", str(fake_index_dir), "--queries", str(tmp_path / "q.jsonl")])
    assert result.exit_code == 0, result.output
    # One JSON line per query on stdout (a query without a usable vector also warns, on stderr).
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["query"] for a in answers] == HOSTILE_QUERIES
    dataset = tmp_path / "d.jsonl"
    dataset.write_text("".join(json.dumps({"qid": str(i), "query": q, "relevant": ["一次方程式#rule-transposition"]})
                               + "\n" for i, q in enumerate(["x -- y", "2--3", "i--", "--"])), encoding="utf-8")
    for mode in ("hybrid", "lexical"):
        result = cli.invoke(main, ["eval", "--index", str(fake_index_dir), "--dataset", str(dataset), "--mode", mode,
                                   "--output-dir", str(tmp_path / "r"), "--format", "json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["queries"] == 4


def test_a_query_over_the_limit_is_refused_with_a_clear_message(index, fake_index_dir, cli):
    assert index.search("二次方程式" * (MAX_QUERY_CHARS // 5), k=1)  # exactly at the limit: answered
    with pytest.raises(QueryTooLong, match=f"the query is 2,001 characters long; the limit is {MAX_QUERY_CHARS:,}"):
        index.search("あ" * (MAX_QUERY_CHARS + 1))
    result = cli.invoke(main, ["search", "あ" * 1_000_000, "--index", str(fake_index_dir)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: the query is 1,000,000 characters long; the limit is 2,000.")
    assert "Traceback" not in result.output


def test_long_text_is_cut_at_breaks_into_pieces_that_add_up_to_it():
    text = ("三角比の正弦は斜辺に対する対辺の比である。" * 40 + "\n\n") * 30 + "あいうえお" * 5000
    parts = pieces(text, 1000)
    assert "".join(parts) == text and all(len(p) <= 1000 for p in parts)
    assert len(parts) == 30 + 25 and all(p.endswith("\n\n") for p in parts[:30])  # one paragraph each
    assert all(len(p) == 1000 for p in parts[30:])  # the unbroken kana run is cut by length
    sentences = pieces("一文目です。" * 400, 1000)
    assert all(p.endswith("。") and len(p) > 500 for p in sentences[:-1])


def test_analysis_in_pieces_gives_the_tokens_of_the_whole_text(monkeypatch):
    text = "\n\n".join(f"第{i}段落。たすきがけで因数分解する。二次方程式の解の公式を使う。" for i in range(200))
    whole = analyze(text)
    monkeypatch.setattr("knowledge_build.text.ja.MAX_PIECE_CHARS", 300)
    assert analyze(text) == whole


def _long_box_site(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    page = site / "junior" / "二次方程式.html"
    # 700,000 characters of kana without a single break: the worst case for the tokenizer, which
    # crashed on one piece of ~480,000 such characters.
    body = ("たすきがけでいんすうぶんかいするときはかけざんのくみあわせをさがす" * 25_000)[:700_000]
    box = f'<div class="tip-box" id="tip-long-box">\n<strong>とても長い説明</strong>\n<p>{body}最後に双曲線を学ぶ</p>\n</div>\n'
    anchor = '<div class="rule-box" id="rule-quadratic-formula">'
    page.write_text(page.read_text(encoding="utf-8").replace(anchor, box + anchor, 1), encoding="utf-8")
    return site


def test_a_box_of_700k_characters_builds_and_its_last_words_are_indexed(tmp_path):
    site = _long_box_site(tmp_path)
    script = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
              "from pathlib import Path\nfrom knowledge_build import build, load_config\n"
              "from tests.fakes import FakeEmbedder\n"
              f"build(load_config(site=Path({str(site)!r}), cache_dir=Path({str(tmp_path / 'cache')!r}), env={{}}),"
              " embedder=FakeEmbedder())\n")
    # In a subprocess: a tokenizer crash is a segfault, which would take the test run down with it.
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    v2 = site / "_site" / "knowledge" / "v2"
    opened = open_set(v2, json.loads((v2 / "manifest.json").read_text(encoding="utf-8")), full=True)
    row = [c.id for c in opened.chunks].index("二次方程式#tip-long-box")
    assert len(opened.chunks[row].content) > 700_000
    rows = np.array([row])
    for lemma in ("最後", "曲線", "学ぶ"):  # the box's last words, found nowhere else in it
        assert opened.postings.term_frequencies("lemma", lemma, rows)[0] >= 1, lemma
    assert opened.postings.term_frequencies("kana2", "タス", rows)[0] >= 20_000  # from every piece, not just the first


def test_notes_and_imports_over_their_limits_store_nothing(tmp_path):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite")
    with pytest.raises(ContentTooLarge, match="the note is 20,001 characters long; the limit is 20,000"):
        store.save("あ" * (notes_module.MAX_NOTE_CHARS + 1))
    with pytest.raises(ContentTooLarge, match="the document is 1,000,000 characters long; the limit is 200,000"):
        store.import_document("大きな文書", "あ" * 1_000_000, chunk_size=100, chunk_overlap=99)
    with pytest.raises(TooManyChunks, match="more than 1,000 chunks at chunk_size 100 and chunk_overlap 99"):
        store.import_document("多すぎる分割", "あ" * notes_module.MAX_DOCUMENT_CHARS, chunk_size=100, chunk_overlap=99)
    with pytest.raises(QueryTooLong):
        store.search("あ" * (MAX_QUERY_CHARS + 1))
    assert store.search("あ", top_k=10) == []
    assert store._sql("select count(*) from knowledge_documents").fetchone()[0] == 0
    saved = store.import_document("ちょうど", "あ" * notes_module.MAX_DOCUMENT_CHARS, chunk_size=10_000, chunk_overlap=0)
    assert saved["chunks_created"] == 20


def test_an_import_that_fails_while_writing_leaves_no_half_document(tmp_path, monkeypatch):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite")
    rows = store._rows

    def rows_with_a_duplicate(items):  # the second insert of one id fails inside the transaction
        made = rows(items)
        return made + made[:1]

    monkeypatch.setattr(store, "_rows", rows_with_a_duplicate)
    with pytest.raises(Exception, match="UNIQUE"):
        store.import_document("途中で失敗", "一文目。\n\n二文目。" * 200, chunk_size=200)
    assert store._sql("select count(*) from knowledge_documents").fetchone()[0] == 0
    assert store._sql("select count(*) from knowledge_notes").fetchone()[0] == 0


@pytest.mark.model
def test_the_local_model_embeds_a_passage_from_its_first_8000_characters_with_a_warning(caplog):
    from knowledge_build.embed.local import MAX_INPUT_CHARS, LocalEmbedder

    # The model reads every token it is given (a 50,000-character passage took 72 s; a 5 MB box, hours).
    head = "二次方程式の解の公式を使って方程式を解く。" * 400
    long_text = head[:MAX_INPUT_CHARS] + "確率と統計のまったく別の話題。" * 3000
    embedder = LocalEmbedder()
    with caplog.at_level("WARNING"):
        cut, short = embedder.embed_documents([long_text, head[:MAX_INPUT_CHARS]])
    assert np.array_equal(cut, short)  # the text after the first 8,000 characters was not read
    assert f"a text of {len(long_text)} characters exceeds 8000 characters and is truncated" in caplog.text
