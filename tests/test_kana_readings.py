"""Readings for kana and romaji queries (issue 25, item 4): an all-kana or romaji query reaches its
kanji term through the kana_terms field (the readings of nouns and noun runs of each chunk)."""

from pathlib import Path

import numpy as np
import pytest

from knowledge_build.text.ja import ANALYZER, FIELDS, analyze, analyze_box, analyze_query, box_text, kana_spans
from tests.conftest import FakeEmbedder


def _known(*readings, lemmas=()):
    """What an index holds: these kana terms, and these lemmas."""
    return lambda field, token: token in (readings if field == "kana_terms" else lemmas)


def test_a_text_holds_the_readings_of_its_nouns_and_of_their_runs():
    terms = analyze("判別式と指数法則、二次方程式", kana_terms=True)["kana_terms"]
    assert {"ハンベツシキ", "ハンベツ", "シキ", "シスウホウソク", "シスウ", "ホウソク"} <= set(terms)
    assert {"ニジホウテイシキ", "ホウテイシキ"} <= set(terms)
    # A particle or punctuation ends a run: no reading spans two terms.
    assert not any("ト" in t and "シスウ" in t for t in terms)


def test_a_verb_is_not_a_kana_term():
    assert "ツカウ" not in analyze("判別式を使う", kana_terms=True)["kana_terms"]


def test_a_box_has_kana_terms_and_the_field_is_part_of_the_analyzer():
    assert "kana_terms" in FIELDS and "kana_terms" in ANALYZER
    assert "サンカクヒ" in analyze_box(box_text("三角比", "定義", "三角比とは"))["kana_terms"]


def test_an_all_hiragana_query_is_its_known_reading_and_not_the_taggers_guesses():
    fields = analyze_query("はんべつしき", known_token=_known("ハンベツシキ", "ハンベツ", "シキ"))
    assert fields["kana_terms"] == ["ハンベツシキ"]  # the longest known reading, not its parts
    # The tagger cuts はんべつしき into はん / べつ (別) / しき; none of that reaches the lemma fields.
    assert fields["lemma"] == fields["page"] == fields["heading"] == []
    assert "ベツ" in fields["kana2"][2]  # the kana bigrams stay


def test_a_query_without_an_index_to_ask_has_no_kana_terms():
    fields = analyze_query("はんべつしき")
    assert fields["kana_terms"] == [] and "別" in fields["lemma"]


def test_a_romaji_query_and_a_full_width_one_reach_the_same_reading():
    known = _known("サンカクヒ", "サンカク", lemmas=("三角",))
    for query in ("sankakuhi", "ｓａｎｋａｋｕｈｉ", "さんかくひ", "サンカクヒ", "ｻﾝｶｸﾋ"):
        assert analyze_query(query, known_token=known)["kana_terms"] == ["サンカクヒ"], query


def test_kana_terms_inside_a_longer_query_are_found_however_the_tagger_cut_it():
    known = _known("ハンベツシキ", "ツカイカタ", "シスウホウソク", "シスウ")
    assert analyze_query("はんべつしきのつかいかた", known_token=known)["kana_terms"] == ["ハンベツシキ", "ツカイカタ"]
    # The tagger reads しすうほうそくって as し / すう / ほう / そ / くっ / て: the term ends inside くっ.
    assert analyze_query("しすうほうそくってなに", known_token=known)["kana_terms"] == ["シスウホウソク"]


def test_romaji_words_are_read_together_as_one_run_of_kana():
    assert analyze_query("yogen teiri", known_token=_known("ヨゲンテイリ"))["kana_terms"] == ["ヨゲンテイリ"]


def test_a_stretch_within_a_word_the_tagger_knows_is_left_to_that_word():
    # ふつう (普通), たすきがけ (襷掛け), まとまり inside ひとまとまり: the tagger knows these words.
    known = _known("フツウ", "タスキガケ", "マトマリ", lemmas=("普通", "襷掛け"))
    for query in ("ふつうどのくらい", "たすきがけ", "リズムのひとまとまりのこと"):
        assert analyze_query(query, known_token=known)["kana_terms"] == [], query
    assert "襷掛け" in analyze_query("たすきがけ", known_token=known)["lemma"]


def test_a_word_the_tagger_knows_by_a_lemma_the_index_lacks_is_looked_up_by_its_reading():
    # The tagger reads ごうせい as 豪勢; an index of 合成 holds ゴウセイ but not 豪勢.
    fields = analyze_query("さんかくかんすうのごうせい", known_token=_known("サンカクカンスウ", "ゴウセイ", lemmas=("合成",)))
    assert fields["kana_terms"] == ["サンカクカンスウ", "ゴウセイ"] and "豪勢" not in fields["lemma"]
    held = analyze_query("さんかくかんすうのごうせい", known_token=_known("ゴウセイ", lemmas=("豪勢",)))
    assert held["kana_terms"] == [] and "豪勢" in held["lemma"]


def test_a_katakana_stretch_begins_and_ends_with_the_taggers_words():
    # ハノーファ is a reading in some index; ハノーファー is one word, so its lemma stays.
    fields = analyze_query("ハノーファーの主要河川", known_token=_known("ハノーファ", "マイナス", lemmas=("ハノーバー",)))
    assert fields["kana_terms"] == [] and "主要" in fields["lemma"]
    assert analyze_query("マイナスかけるマイナス", known_token=_known("マイナス", lemmas=("マイナス",)))["kana_terms"] == []
    # タスキガケ is two words to the tagger (襷 / 崖): a term it does not know as one.
    assert analyze_query("タスキガケ", known_token=_known("タスキガケ"))["kana_terms"] == ["タスキガケ"]


def test_a_stretch_shorter_than_four_kana_is_not_looked_up():
    # こと, とき, もの are words of any sentence; a three-kana reading is too often one of them.
    assert analyze_query("わかっているときのこと", known_token=_known("カッテ", "トキ", "コト"))["kana_terms"] == []


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
    return kb.KnowledgeIndex.from_parts(Path("."), {}, chunks, index, {"fields": lexical_fields(chunks)}, embedder)


@pytest.mark.corpus
@pytest.mark.parametrize("query", sorted(VARIANTS))
def test_every_spelling_of_a_term_finds_a_box_titled_with_it_in_the_lexical_top_5(corpus_lexical, query):
    top = corpus_lexical.search(query, k=5, mode="lexical")
    assert any(VARIANTS[query] in r.title and r.type not in ("section", "table") for r in top), \
        [(r.id, r.title) for r in top]


# -- the dense query: a kana term written as the site writes it ----------------------------------


def test_a_texts_kana_terms_come_with_how_the_text_writes_them():
    from knowledge_build.text.ja import term_surfaces

    found = term_surfaces("余弦定理と判別式、二次方程式")
    assert found["ヨゲンテイリ"] == "余弦定理" and found["ハンベツシキ"] == "判別式"
    assert found["ニジホウテイシキ"] == "二次方程式" and found["ホウテイシキ"] == "方程式"
    assert "ツカウ" not in term_surfaces("判別式を使う")  # a verb is no kana term


class _RecordingEmbedder(FakeEmbedder):
    """The FakeEmbedder, keeping the texts it was asked to embed as queries."""

    def __init__(self):
        super().__init__()
        self.queries = []

    def embed_query(self, text):
        self.queries.append(text)
        return super().embed_query(text)


BOXES = {"rule-cosine": ("余弦定理", "三角形の辺と角の関係を表す余弦定理。"),
         "rule-census": ("全数調査", "全数調査は集団のすべてを調べる。"),
         "rule-wind": ("南東の風", "南東から吹く風。"),
         "rule-troop": ("大隊の編成", "大隊は部隊の単位。")}


@pytest.fixture(scope="module")
def surfaces_index(tmp_path_factory):
    import knowledge_build as kb

    site = tmp_path_factory.mktemp("surfaces")
    (site / "_config.yml").write_text("title: t\nbaseurl: ''\n", encoding="utf-8")
    boxes = "\n".join(f'<div class="rule-box" id="{anchor}"><h3>{title}</h3><p>{text}</p></div>'
                      for anchor, (title, text) in BOXES.items())
    (site / "p.html").write_text(f"---\ntitle: 用語\nlayout: material\n---\n<h1>用語</h1>\n{boxes}\n", encoding="utf-8")
    embedder = _RecordingEmbedder()
    output = kb.build(kb.load_config(site=site, env={}), embedder=embedder, progress=False).output
    return kb.KnowledgeIndex.open(output, embedder=embedder)


@pytest.mark.parametrize("query, wording", [
    ("よげんていり", "余弦定理"),  # the tagger reads it as よ / 限定 / り
    ("よげんていりのつかいかた", "余弦定理のつかいかた"),
    ("ヨゲンテイリ", "余弦定理"),
    ("yogen teiri", "余弦定理"),  # all romaji: read as its kana
    ("yogen teiri とは", "yogen teiri とは"),  # not all romaji: as typed
    ("かんぜんすう", "かんぜんすう"),  # ぜんすう is only part of the run: not 全数
    ("なんとうい", "なんとうい"),  # なんとう is not a word of its own here: not 南東
    ("だいたい", "だいたい"),  # a word of its own to the tokenizer (大体): not 大隊
    ("余弦定理", "余弦定理"),
])
def test_the_dense_query_writes_a_kana_term_as_the_site_does(surfaces_index, query, wording):
    assert surfaces_index.analyser.dense_wording(query) == wording
    surfaces_index.embedder.queries.clear()
    surfaces_index.search(query, k=1)
    assert surfaces_index.embedder.queries == [wording]


def test_without_romaji_expansion_a_romaji_query_is_embedded_as_typed(surfaces_index):
    from dataclasses import replace

    settings = surfaces_index.settings
    try:
        surfaces_index.settings = replace(settings, expand_romaji=False)
        assert surfaces_index.analyser.dense_wording("yogen teiri") == "yogen teiri"
        assert surfaces_index.analyser.dense_wording("よげんていり") == "余弦定理"
    finally:
        surfaces_index.settings = settings

