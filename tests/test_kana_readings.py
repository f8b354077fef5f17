"""Readings for kana and romaji queries (issue 25, item 4): an all-kana or romaji query reaches its
kanji term through the kana_terms field (the readings of nouns and noun runs of each chunk)."""

from pathlib import Path

import numpy as np
import pytest

from knowledge_build.text.ja import ANALYZER, FIELDS, analyze, analyze_box, analyze_query, box_text, kana_spans


def _known(*readings):
    return set(readings).__contains__


def test_a_text_holds_the_readings_of_its_nouns_and_of_their_runs():
    terms = analyze("判別式と指数法則、二次方程式")["kana_terms"]
    assert {"ハンベツシキ", "ハンベツ", "シキ", "シスウホウソク", "シスウ", "ホウソク"} <= set(terms)
    assert {"ニジホウテイシキ", "ホウテイシキ"} <= set(terms)
    # A particle or punctuation ends a run: no reading spans two terms.
    assert not any("ト" in t and "シスウ" in t for t in terms)


def test_a_verb_is_not_a_kana_term():
    assert "ツカウ" not in analyze("判別式を使う")["kana_terms"]


def test_a_box_has_kana_terms_and_the_field_is_part_of_the_analyzer():
    assert "kana_terms" in FIELDS and "kana_terms" in ANALYZER
    assert "サンカクヒ" in analyze_box(box_text("三角比", "定義", "三角比とは"))["kana_terms"]


def test_an_all_hiragana_query_is_its_known_reading_and_not_the_taggers_guesses():
    fields = analyze_query("はんべつしき", known_reading=_known("ハンベツシキ", "ハンベツ", "シキ"))
    assert fields["kana_terms"] == ["ハンベツシキ"]  # the longest known reading, not its parts
    # The tagger cuts はんべつしき into はん / べつ (別) / しき; none of that reaches the lemma fields.
    assert fields["lemma"] == fields["page"] == fields["heading"] == []
    assert "ベツ" in fields["kana2"][2]  # the kana bigrams stay


def test_a_query_without_an_index_to_ask_has_no_kana_terms():
    fields = analyze_query("はんべつしき")
    assert fields["kana_terms"] == [] and "別" in fields["lemma"]


def test_a_romaji_query_and_a_full_width_one_reach_the_same_reading():
    known = _known("サンカクヒ", "サンカク")
    for query in ("sankakuhi", "ｓａｎｋａｋｕｈｉ", "さんかくひ", "サンカクヒ", "ｻﾝｶｸﾋ"):
        assert analyze_query(query, known_reading=known)["kana_terms"] == ["サンカクヒ"], query


def test_kana_terms_inside_a_longer_query_are_found_between_its_particles():
    known = _known("ハンベツシキ", "ツカイカタ", "ツカイ", "カタ")
    fields = analyze_query("はんべつしきのつかいかた", known_reading=known)
    assert fields["kana_terms"] == ["ハンベツシキ", "ツカイカタ"]


def test_a_short_stretch_across_the_taggers_words_is_not_a_term():
    # かって (勝手) inside わかっている, はどう (波動) in 範囲はどうなる, どうい (同意) in どういう.
    known = _known("カッテ", "ハドウ", "ドウイ")
    for query in ("わかっている", "yの範囲はどうなる", "どういう意味"):
        assert analyze_query(query, known_reading=known)["kana_terms"] == [], query


def test_a_katakana_word_the_tagger_knows_stays_a_lemma():
    fields = analyze_query("マイナスかけるマイナス", known_reading=_known("マイナス", "カケル"))
    assert fields["kana_terms"] == [] and fields["lemma"].count("マイナス") == 2


def test_a_hiragana_word_the_tagger_reads_as_another_noun_is_looked_up_by_its_reading():
    # かい is 甲斐 to the tagger; the index may hold it as 解 (解の公式).
    assert analyze_query("かいのこうしき", known_reading=_known("カイ", "コウシキ"))["kana_terms"] == ["カイ", "コウシキ"]


def test_kana_spans_are_positions_in_the_text():
    text = "xのはんべつしき"
    assert [text[a:b] for a, b in kana_spans(text, _known("ハンベツシキ"))] == ["はんべつしき"]


# -- on the reference corpus, lexical channel (no model) ------------------------------------------

VARIANTS = {
    "はんべつしき": "判別式", "しすうほうそく": "指数法則", "sankakuhi": "三角比",
    "たすきがけ": "たすき掛け", "タスキガケ": "たすき掛け", "tasukigake": "たすき掛け", "襷掛け": "たすき掛け",
}


@pytest.fixture(scope="module")
def corpus_lexical(corpus_dir):
    import faiss

    import knowledge_build as kb
    from knowledge_build.pipeline import lexical_fields
    from tests.conftest import FakeEmbedder

    chunks = kb.extract(kb.load_config(site=corpus_dir, env={})).chunks
    embedder = FakeEmbedder()
    index = faiss.IndexFlatIP(embedder.dim)
    index.add(np.zeros((len(chunks), embedder.dim), dtype=np.float32))
    return kb.KnowledgeIndex(Path("."), {}, chunks, index, {"fields": lexical_fields(chunks)}, embedder)


@pytest.mark.corpus
@pytest.mark.parametrize("query", sorted(VARIANTS))
def test_every_spelling_of_a_term_finds_a_box_titled_with_it_in_the_lexical_top_5(corpus_lexical, query):
    top = corpus_lexical.search(query, k=5, mode="lexical")
    assert any(VARIANTS[query] in r.title and r.type not in ("section", "table") for r in top), \
        [(r.id, r.title) for r in top]
