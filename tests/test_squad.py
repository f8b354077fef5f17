"""convert-squad: SQuAD-format data becomes pages and labelled queries that build and eval take."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build import extract, load_config
from knowledge_build.cli import main
from knowledge_build.evaluation.evaluate import load_dataset

SQUAD = {"data": [
    {"title": "梅雨", "paragraphs": [
        {"context": "梅雨 [SEP] 梅雨は東アジアの雨季である。", "qas": [
            {"id": "q1", "question": "梅雨とは何か", "answers": [], "is_impossible": False},
            {"id": "q2", "question": "答えのない問い", "answers": [], "is_impossible": True}]},
        {"context": "梅雨 [SEP] 北海道には梅雨がない。<b>", "qas": [{"id": "q3", "question": "梅雨がない地域は"}]}]},
    {"title": "台風/熱帯低気圧", "paragraphs": [{"context": "台風は熱帯低気圧である。", "qas": []}]},
]}


def test_squad_converts_to_pages_and_queries(tmp_path):
    source = tmp_path / "squad.json"
    source.write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["convert-squad", str(source), "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "2 pages with 3 paragraphs" in result.output and "2 queries" in result.output
    chunks = {c.id: c for c in extract(load_config(site=tmp_path / "out" / "site", env={})).chunks}
    assert sorted(chunks) == ["a0001#rule-p1", "a0001#rule-p2", "a0002#rule-p1"]
    assert chunks["a0001#rule-p2"].content == "梅雨 (2) 北海道には梅雨がない。<b>"
    queries = load_dataset(tmp_path / "out" / "queries.jsonl")
    assert [(q.qid, q.relevant) for q in queries] == [("q1", ("a0001#rule-p1",)), ("q3", ("a0001#rule-p2",))]


def test_not_squad_is_refused(tmp_path):
    source = tmp_path / "x.json"
    source.write_text("[]", encoding="utf-8")
    result = CliRunner().invoke(main, ["convert-squad", str(source), "--output", str(tmp_path / "o")])
    assert result.exit_code == 1 and "is not SQuAD-format JSON" in result.output


def test_converted_set_keeps_each_paragraph_text_by_chunk_id_for_the_plain_baseline(tmp_path):
    from knowledge_build.evaluation.squad import convert_squad

    source = tmp_path / "squad.json"
    source.write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    converted = convert_squad(source, tmp_path / "out")
    assert converted.texts == {"a0001#rule-p1": "梅雨は東アジアの雨季である。", "a0001#rule-p2": "北海道には梅雨がない。<b>",
                               "a0002#rule-p1": "台風は熱帯低気圧である。"}
    chunks = {c.id: c for c in extract(load_config(site=converted.site, env={})).chunks}
    assert all(chunks[i].embed_text.endswith(text) for i, text in converted.texts.items())


@pytest.mark.parametrize("data", [{"data": [1]}, {"data": [{"paragraphs": [{"qas": []}]}]},
                                  {"data": [{"paragraphs": [{"context": "本文", "qas": [{"question": "何"}]}]}]}])
def test_malformed_squad_is_one_error_line_and_writes_nothing(tmp_path, data):
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["convert-squad", str(source), "--output", str(tmp_path / "out")])
    assert result.exit_code == 1 and "is not SQuAD-format JSON: an article, paragraph or question lacks" in result.output
    assert not (tmp_path / "out").exists() and "Traceback" not in result.output


def test_convert_squad_into_a_file_or_proc_is_one_error_line(tmp_path):
    source = tmp_path / "ok.json"
    source.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "本文。", "qas": []}]}]}),
                      encoding="utf-8")
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me\n", encoding="utf-8")
    for output in (a_file, Path("/proc/knowledge-build-test")):
        result = CliRunner().invoke(main, ["convert-squad", str(source), "--output", str(output)])
        assert result.exit_code == 1 and "cannot write the converted set into" in result.output, result.output
        assert "Fix: give --output a new or empty folder" in result.output
    assert a_file.read_text(encoding="utf-8") == "keep me\n"
