"""The web sources store (store/sources.py) in SQLite, with sqlite-vec and with its numpy fallback."""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading

import pytest

from knowledge_build.store import sources_sqlite as sources_module
from knowledge_build.store.common import InvalidChunks, NotFound, SourcesUnavailable, fts_match, fts_token
from knowledge_build.store.sources import SourceStore
from knowledge_build.web.chunk import WebChunk
from tests.conftest import FakeEmbedder

CRAWLED = "2026-11-01T10:00:00+00:00"
INDEXES = ("sqlite-vec", "numpy")

TOPICS = [
    ("二次関数", "二次関数のグラフは放物線になる。頂点の座標を平方完成で求める。"),
    ("三角比", "直角三角形の辺の比から正弦と余弦と正接を定める。"),
    ("確率", "さいころを二回投げるとき、目の和が七になる確率を求める。"),
    ("数列", "等差数列の和は初項と末項の平均に項数を掛けて求める。"),
    ("微分", "関数の導関数を求め、増減表を書いて極値を調べる。"),
    ("ベクトル", "二つのベクトルの内積は大きさと挟む角の余弦の積である。"),
    ("整数", "ユークリッドの互除法で最大公約数を求める。"),
    ("図形", "円に内接する四角形の対角の和は百八十度である。"),
]

CHARACTERS = [("フシギダネ", "くさ", 45), ("ヒトカゲ", "ほのお", 39), ("ゼニガメ", "みず", 44),
              ("ピカチュウ", "でんき", 35), ("プリン", "ノーマル", 115), ("コダック", "みず", 50),
              ("ワンリキー", "かくとう", 70), ("イシツブテ", "いわ", 40), ("ポッポ", "ひこう", 40),
              ("ニドラン", "どく", 55), ("ロコン", "ほのお", 38), ("ズバット", "どく", 40),
              ("ナゾノクサ", "くさ", 45), ("パラス", "むし", 35), ("コンパン", "むし", 60),
              ("ディグダ", "じめん", 10), ("ニャース", "ノーマル", 40), ("マンキー", "かくとう", 40),
              ("ガーディ", "ほのお", 55), ("ニョロモ", "みず", 40), ("ケーシィ", "エスパー", 25),
              ("マダツボミ", "くさ", 50), ("メノクラゲ", "みず", 40), ("ゴース", "ゴースト", 30)]


def page(url: str, title: str, sections: list[tuple[str, str]], kind: str = "section") -> list[WebChunk]:
    return [WebChunk(source_url=url, url=f"{url}#s{i}", title=title, heading=heading, parents=(), kind=kind,
                     text=text, chunk_index=i, crawled_at=CRAWLED) for i, (heading, text) in enumerate(sections)]


def table_page(url: str, rows_per_chunk: int = 4) -> list[WebChunk]:
    """A table of characters cut into chunks of a few rows, the header on every chunk."""
    header = "名前 | タイプ | HP"
    parts = [CHARACTERS[i:i + rows_per_chunk] for i in range(0, len(CHARACTERS), rows_per_chunk)]
    return [WebChunk(url, f"{url}#table", "キャラクター一覧", "初期キャラクター", ("図鑑",), "table",
                     "\n".join([header] + [f"{n} | {t} | {hp}" for n, t, hp in rows]), i, CRAWLED)
            for i, rows in enumerate(parts)]


@pytest.fixture(params=INDEXES)
def vector_index(request):
    return request.param


@pytest.fixture
def store(tmp_path, vector_index):
    with SourceStore(FakeEmbedder(), tmp_path / "store.sqlite", vector_index=vector_index) as opened:
        yield opened


def fill(store: SourceStore) -> None:
    for i, (title, text) in enumerate(TOPICS):
        store.replace_source(f"https://math.example/{i}", f"{title}の基本", page(
            f"https://math.example/{i}", f"{title}の基本", [(title, text), ("練習", f"{title}の練習問題を解く。")]))


def test_store_uses_the_vector_index_asked_for(store, vector_index):
    assert store.vector_index == vector_index
    assert store.backend == "sqlite"


def test_status_and_sources_list_what_is_stored(store):
    assert store.status() == {"sources": 0, "chunks": 0, "last_crawl": None}
    fill(store)
    status = store.status()
    assert status == {"sources": len(TOPICS), "chunks": 2 * len(TOPICS), "last_crawl": CRAWLED}
    listed = store.sources()
    assert [s["url"] for s in listed] == sorted(f"https://math.example/{i}" for i in range(len(TOPICS)))
    assert listed[0] == {"url": "https://math.example/0", "title": "二次関数の基本", "chunks": 2, "crawled_at": CRAWLED,
                         "language": ""}


def test_exact_keyword_finds_its_page_first(store):
    fill(store)
    results = store.query("ユークリッドの互除法")
    assert results[0]["source"] == "https://math.example/6"
    assert set(results[0]) == {"id", "source", "url", "title", "heading", "parents", "kind", "text", "chunk_index",
                               "crawled_at", "language", "similarity", "score", "relevance", "relevant",
                               "sub_results"}
    assert results[0]["url"] == "https://math.example/6#s0"


def test_a_table_row_is_found_by_the_name_in_one_cell(store):
    fill(store)
    url = "https://game.example/characters"
    chunks = table_page(url)
    assert store.replace_source(url, "キャラクター一覧", chunks) == len(chunks)
    for name, kind, hp in (("ヒトカゲ", "ほのお", 39), ("メノクラゲ", "みず", 40), ("ディグダ", "じめん", 10)):
        best = store.query(name)[0]
        assert best["kind"] == "table" and best["source"] == url
        assert f"{name} | {kind} | {hp}" in best["text"]
        assert best["text"].startswith("名前 | タイプ | HP")


def test_reingesting_a_page_never_shows_a_reader_zero_chunks_or_two_versions(tmp_path, vector_index):
    """A reader (its own connection, as `serve` beside `sources add`) loops while the page is
    re-ingested 20 times with 3 or 5 chunks: it sees one whole version every time."""
    path, url = tmp_path / "store.sqlite", "https://news.example/live"

    def version(n: int) -> list[WebChunk]:
        return page(url, "速報", [(f"第{n}版 {i}", f"第{n}版の速報記事 その{i}。天気と交通の情報。")
                                 for i in range(3 if n % 2 else 5)])

    writer = SourceStore(FakeEmbedder(), path, vector_index=vector_index)
    writer.replace_source("https://other.example/", "他", page("https://other.example/", "他", [("x", "関係ない話")]))
    writer.replace_source(url, "速報", version(0))
    reader = SourceStore(FakeEmbedder(), path, vector_index=vector_index)
    seen, problems, done = [], [], threading.Event()

    def read():
        try:
            loop()
        except Exception as exc:  # noqa: BLE001  (reported by the assertion below, not lost in the thread)
            problems.append(exc)

    def loop():
        while not done.is_set() or not seen:
            results = [r for r in reader.query("速報記事 天気 交通", k=20) if r["source"] == url]
            versions = {r["heading"].split()[0] for r in results}
            if len(versions) != 1 or len(results) != _chunks_of(next(iter(versions))):
                problems.append((versions, len(results)))
            listed = {s["url"]: s["chunks"] for s in reader.sources()}
            if listed.get(url) not in (3, 5) or reader.status()["chunks"] not in (4, 6):
                problems.append(("status", listed.get(url), reader.status()))
            seen.append(versions)

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for n in range(1, 21):
            writer.replace_source(url, "速報", version(n))
    finally:
        done.set()
        thread.join(timeout=120)
    assert not thread.is_alive()
    assert problems == []
    assert seen
    assert {r["heading"].split()[0] for r in reader.query("速報記事", k=20) if r["source"] == url} == {"第20版"}
    writer.close()
    reader.close()


def _chunks_of(version: str) -> int:
    return 3 if int(version.removeprefix("第").removesuffix("版")) % 2 else 5


def test_delete_source_removes_exactly_its_chunks(store, tmp_path):
    fill(store)
    before = {r["id"] for r in store.query("練習問題", k=50) if r["source"] != "https://math.example/3"}
    assert store.delete_source("https://math.example/3") == 2
    assert store.status()["chunks"] == 2 * len(TOPICS) - 2
    after = store.query("練習問題", k=50)
    assert {r["id"] for r in after} == before
    assert all(r["source"] != "https://math.example/3" for r in store.query("等差数列の和", k=50))
    conn = sqlite3.connect(tmp_path / "store.sqlite")
    assert conn.execute("select count(*) from knowledge_source_fts").fetchone()[0] == 2 * len(TOPICS) - 2
    conn.close()


def test_deleting_an_unknown_source_names_it(store):
    fill(store)
    with pytest.raises(NotFound, match=r"no source https://nowhere\.example/"):
        store.delete_source("https://nowhere.example/")
    assert store.status()["chunks"] == 2 * len(TOPICS)


def test_threshold_is_the_minimum_cosine_similarity(store):
    fill(store)
    everything = store.query("等差数列の和", k=50)
    values = sorted({r["similarity"] for r in everything})
    cut = (values[len(values) // 2] + values[len(values) // 2 - 1]) / 2  # between two results' cosines
    kept = store.query("等差数列の和", k=50, threshold=cut)
    assert kept and all(r["similarity"] >= cut for r in kept)
    assert {r["id"] for r in kept} == {r["id"] for r in everything if r["similarity"] >= cut}
    assert store.query("等差数列の和", k=50, threshold=1.01) == []


@pytest.mark.parametrize("query", ['"', '""', "AND", "OR NOT", "NEAR(", "*", "lemma : x", "--", "^2", "(", "ˣ2d2d",
                                   "   ", "{lemma}: 放物線"])
def test_query_with_search_syntax_characters_does_not_crash(store, query):
    fill(store)
    assert isinstance(store.query(query), list)


def test_symbol_tokens_match_only_themselves(store):
    url = "https://symbols.example/"
    store.replace_source(url, "記号", page(url, "記号", [("a", "x^2 の -- と C++ の話"), ("b", "2 と x と C の話")]))
    assert fts_token("--") != fts_token("-") and fts_token("放物線") == "放物線"
    assert fts_match({"lemma": ['"', "a b"]}).count('"') == 4  # each token one quoted phrase
    for token, headings in (("--", ["a"]), ("^", ["a"]), ("2", ["a", "b"]), ("-", [])):
        lexical, _, rows = _lexical(store, token)
        assert sorted(rows[i]["heading"] for i in lexical) == headings, token


def _lexical(store, token):
    dense, lexical, rows = store._db.candidates(FakeEmbedder().embed_query(token), {"lemma": [token]}, 10)
    return lexical, dense, rows


def test_chunks_of_another_page_are_refused(store):
    chunks = page("https://a.example/", "A", [("h", "本文")])
    with pytest.raises(InvalidChunks, match="belongs to https://a.example/, not https://b.example/"):
        store.replace_source("https://b.example/", "B", chunks)
    assert store.status()["sources"] == 0


def test_an_embedder_of_another_dimension_is_refused(tmp_path, vector_index):
    path = tmp_path / "store.sqlite"
    with SourceStore(FakeEmbedder(64), path, vector_index=vector_index) as first:
        first.replace_source("https://a.example/", "A", page("https://a.example/", "A", [("h", "本文です")]))
    with pytest.raises(SourcesUnavailable, match="dimension 64, this embedder makes 32"):
        SourceStore(FakeEmbedder(32), path, vector_index=vector_index)


def test_sources_share_the_notes_file_without_touching_notes(tmp_path, vector_index):
    from knowledge_build.store.notes import NoteStore

    path = tmp_path / "notes.sqlite"
    notes = NoteStore(FakeEmbedder(), path)
    note = notes.save("放物線の頂点は平方完成で求める")
    with SourceStore(FakeEmbedder(), path, vector_index=vector_index) as store:
        fill(store)
        assert store.query("放物線")[0]["source"] == "https://math.example/0"
    assert notes.search("放物線")[0]["id"] == note["id"]
    notes.close()


def test_numpy_scan_reads_the_vectors_again_only_after_a_write(tmp_path):
    with SourceStore(FakeEmbedder(), tmp_path / "s.sqlite", vector_index="numpy") as store:
        fill(store)
        store.query("確率")
        loaded = store._db._matrix
        store.query("数列")
        assert store._db._matrix is loaded
        store.delete_source("https://math.example/0")
        store.query("数列")
        assert store._db._matrix is not loaded and len(store._db._matrix[1]) == 2 * len(TOPICS) - 2


def test_both_vector_indexes_rank_alike(tmp_path):
    rankings = []
    for index in INDEXES:
        with SourceStore(FakeEmbedder(), tmp_path / f"{index}.sqlite", vector_index=index) as store:
            fill(store)
            rankings.append([[(r["url"], r["similarity"], r["score"]) for r in store.query(q, k=8)]
                             for q in ("放物線の頂点", "最大公約数", "内積と余弦")])
    assert rankings[0] == rankings[1]


def test_without_sqlite_vec_the_store_works_and_warns_once(tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # import sqlite_vec now fails
    monkeypatch.setattr(sources_module, "_warned_fallback", False)
    with caplog.at_level(logging.WARNING, logger="knowledge_build.store"):
        for name in ("a", "b"):
            with SourceStore(FakeEmbedder(), tmp_path / f"{name}.sqlite") as store:
                assert store.vector_index == "numpy"
                fill(store)
                assert store.query("ユークリッドの互除法")[0]["source"] == "https://math.example/6"
    warnings = [r for r in caplog.records if "sqlite-vec cannot be used" in r.getMessage()]
    assert len(warnings) == 1
    with pytest.raises(SourcesUnavailable, match="sqlite-vec cannot be used"):
        SourceStore(FakeEmbedder(), tmp_path / "c.sqlite", vector_index="sqlite-vec")


def test_a_reader_with_sqlite_vec_catches_up_with_a_writer_without_it(tmp_path):
    path = tmp_path / "store.sqlite"
    with SourceStore(FakeEmbedder(), path, vector_index="sqlite-vec") as with_vec:
        fill(with_vec)
        with SourceStore(FakeEmbedder(), path, vector_index="numpy") as without:
            without.delete_source("https://math.example/6")
            url = "https://late.example/"
            without.replace_source(url, "後", page(url, "後", [("互除法", "ユークリッドの互除法を使う。")]))
        results = with_vec.query("ユークリッドの互除法", k=20)
        assert results[0]["source"] == url
        assert all(r["source"] != "https://math.example/6" for r in results)
        dense = with_vec._db.candidates(FakeEmbedder().embed_query("ユークリッドの互除法"), {}, 100)[0]
        assert len(dense) == 2 * len(TOPICS) - 1


def test_token_counts_follow_every_write(store, tmp_path):
    """knowledge_source_terms (what the lexical channel reads to skip very common tokens) always
    equals the counts of the stored chunks' tokens, after re-ingests and deletes."""
    import json
    from collections import Counter

    fill(store)
    store.replace_source("https://math.example/2", "確率", page("https://math.example/2", "確率", [("新", "新しい確率の話")]))
    store.delete_source("https://math.example/5")
    conn = sqlite3.connect(tmp_path / "store.sqlite")
    expected = Counter((name, t) for (tokens,) in conn.execute("select tokens from knowledge_source_chunks")
                       for name, values in json.loads(tokens).items() for t in set(values))
    stored = {(f, t): n for f, t, n in conn.execute("select field, term, docs from knowledge_source_terms")}
    conn.close()
    assert stored == dict(expected)


def test_very_common_query_tokens_are_not_searched_unless_all_are(store, monkeypatch):
    fill(store)
    monkeypatch.setattr(sources_module, "MIN_DF_CUT", 1)
    monkeypatch.setattr(sources_module, "MAX_DF_SHARE", 0.0)
    with store._db._transaction(write=False) as cur:
        # 練習 is in every page's second chunk; 互除法 in one chunk only
        assert store._db._selective(cur, {"lemma": ["練習", "互除", "ない語"]}) == {"lemma": ["互除"]}
        assert store._db._selective(cur, {"lemma": ["練習", "問題", "解く", "ない語"]}) != {}


def test_a_page_and_its_chunks_keep_the_page_language(store):
    url = "https://docs.example/en/install"
    chunks = [WebChunk(url, url, "Install", "Steps", (), "section", "Run the installer.", 0, CRAWLED, "en")]
    store.replace_source(url, "Install", chunks)
    assert [s["language"] for s in store.sources()] == ["en"]
    assert store.query("installer")[0]["language"] == "en"


def test_a_store_made_before_the_language_column_gets_it_on_opening(tmp_path, vector_index):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("create table knowledge_sources (url text primary key, title text not null, chunks integer not null,"
                 " crawled_at text not null, updated_at text not null)")
    conn.execute("create table knowledge_source_chunks (id integer primary key autoincrement, source_url text not null,"
                 " generation integer not null, chunk_index integer not null, url text not null, title text not null,"
                 " heading text not null, parents text not null, kind text not null, text text not null,"
                 " crawled_at text not null, embedding blob not null, tokens text not null)")
    conn.execute("insert into knowledge_sources values ('https://old.example/', '古いページ', 0, ?, ?)", (CRAWLED, CRAWLED))
    conn.commit()
    conn.close()
    with SourceStore(FakeEmbedder(), path, vector_index=vector_index) as opened:
        assert opened.sources()[0]["language"] == ""
        fill(opened)
        assert opened.status()["sources"] == len(TOPICS) + 1
