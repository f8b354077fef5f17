"""The database's hybrid search (migration 006) with a real PostgreSQL + pgvector: the SQL analysis
is the Python one, publish keeps the posting lists exact through incremental changes, the RPC finds
kana and romaji spellings, and `search --database-url` answers through it."""

import json
import shutil
from collections import Counter

import jaconv
import psycopg
import pytest
from click.testing import CliRunner

from knowledge_build import KnowledgeIndex, build, load_config
from knowledge_build.cli import main
from knowledge_build.serve.service import SearchService
from knowledge_build.ranking import settings as ranking_settings
from knowledge_build.store import lexical
from knowledge_build.store.postgres import connect, hybrid_search, publish

from .conftest import SITE, FakeEmbedder, new_database

pytestmark = pytest.mark.db

TEXTS = [
    "二次方程式の解き方：ＡＢＣ　ｘ²＋３ｘ−４＝０",
    "タスキガケ（たすき掛け）で因数分解する。\n例題1: x^2+5x+6",
    "「判別式」Dの符号\tで実数解の個数がわかる…",
    "ヴァイオリンとヶ月、ヵ所",
    "a",
    "",
    "   ",
    "Pascal's triangle — expected value!",
    "\\frac{1}{2} と √3 と π/2",
    "二十三個の百分率、三千五百と一二〇、千葉の五十音",
    "〇" + "一二三四五六七八九〇" * 500 + "と〇十",  # longer than Python's int() reads: read as its digits
]


def _edited(tmp_path, edit, name="edited"):
    root = tmp_path / name
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    edit(root)
    return root


def _chunk_count(index_dir):
    return json.loads((index_dir / "manifest.json").read_text())["counts"]["chunks"]


def _published(tmp_path, url, edit=None, name="site"):
    root = tmp_path / name
    if not root.exists():
        shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    if edit:
        edit(root)
    index = build(load_config(site=root, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder()).output
    with connect(url) as conn:
        publish(conn, index)
    return index


def test_fold_and_bigrams_in_sql_are_the_python_ones(published_db):
    with connect(published_db) as conn:
        for text in TEXTS:
            folded = conn.execute("select knowledge_fold(%s)", (text,)).fetchone()[0]
            assert folded == lexical.fold(text), text
            sql = [r[0] for r in conn.execute("select knowledge_bigrams(knowledge_fold(%s))", (text,))]
            assert Counter(sql) == Counter(lexical.bigrams(lexical.fold(text))), text


@pytest.mark.parametrize("word", ["tasukigake", "hanbetsushiki", "sankakukansuu", "kanzenheihoushiki", "gakkou",
                                  "matcha", "konnichiha", "shinbun", "kyouyaku", "jiyuu", "tanni", "fun"])
def test_romaji_in_sql_reads_as_jaconv(published_db, word):
    with connect(published_db) as conn:
        assert conn.execute("select knowledge_romaji(%s)", (word,)).fetchone()[0] == \
            jaconv.kata2hira(jaconv.alphabet2kana(word))


@pytest.mark.parametrize("word", ["cos", "log", "x", "abc", "qr", "lim"])
def test_words_that_are_not_romaji_stay_latin(published_db, word):
    with connect(published_db) as conn:
        assert conn.execute("select knowledge_romaji(%s)", (word,)).fetchone()[0] is None


def _lexical_state(url):
    """The posting lists, bags and statistics with chunk numbers read as chunk ids (two databases
    number chunks differently)."""
    with psycopg.connect(url) as conn:
        ids = dict(conn.execute("select num, id from knowledge_chunks"))
        postings = {term: sorted((ids[n], tf) for n, tf in zip(nums, tfs))
                    for term, nums, tfs in conn.execute("select term, nums, tfs from knowledge_terms")}
        bags = {chunk_id: (lengths, terms, tfs) for chunk_id, lengths, terms, tfs in
                conn.execute("select id, lengths, terms, tfs from knowledge_chunk_terms")}
        stats = {}
        for key, total, by_num in conn.execute("select key, total, by_num from knowledge_lexical_stats"):
            stats[key] = (total, sorted((ids[n], v) for n, v in enumerate(by_num, 1) if n in ids))
        expansions = conn.execute("select * from knowledge_expansions order by wording").fetchall()
        nums = [n for (n,) in conn.execute("select num from knowledge_chunks")]
    assert None not in nums and sorted(set(ids.values())) == sorted(bags)
    return postings, bags, stats, expansions


def test_an_incremental_publish_leaves_what_a_full_publish_of_the_same_set_writes(tmp_path, fresh_db, pg_server):
    _published(tmp_path, fresh_db)

    def edit(root):
        page = root / "junior" / "因数分解.html"
        text = page.read_text(encoding="utf-8")
        assert "そこで使うのが「たすき掛け」です" in text
        page.write_text(text.replace("そこで使うのが「たすき掛け」です", "そこで使うのが「たすきがけ（襷掛け）」です"),
                        encoding="utf-8")
        other = root / "junior" / "一次方程式.html"  # a box loses its id: one chunk deleted, one section new
        other.write_text(other.read_text(encoding="utf-8").replace('id="tip-check-answer"', 'class="x"'),
                         encoding="utf-8")

    before = _lexical_state(fresh_db)
    index = build(load_config(site=_edited(tmp_path, edit), cache_dir=tmp_path / "cache", env={}),
                  embedder=FakeEmbedder()).output
    with connect(fresh_db) as conn:
        incremental = publish(conn, index)
    assert incremental.update and incremental.insert and incremental.delete
    assert incremental.terms == len(incremental.update) + len(incremental.insert) < 10
    after = _lexical_state(fresh_db)
    assert after[0] != before[0]  # the posting lists changed
    with psycopg.connect(pg_server["url"], autocommit=True) as conn:
        conn.execute('create database "kb_full_again"')
    full = pg_server["url"].replace("/postgres?", "/kb_full_again?")
    with connect(full) as conn:
        plan = publish(conn, index)
    assert plan.terms == _chunk_count(index)
    assert after == _lexical_state(full)


def _fold_before_issue_39(text: str) -> str:
    """store/lexical.py's fold before the numeral rule: each kanji digit a digit, 十百千 as they are (2十3)."""
    import unicodedata

    digits = str.maketrans("〇一二三四五六七八九", "0123456789")
    return unicodedata.normalize("NFKC", text or "").translate(digits).translate(lexical._FOLD)


def test_a_database_published_before_the_numeral_rule_gets_its_terms_on_the_next_publish(tmp_path, fresh_db, pg_server,
                                                                                         monkeypatch):
    """The terms of a set published by the previous analyser (TERMS_VERSION 1: 二十三 -> 2十3) are written again
    by the next publish of the same set, as a first publish of it writes them."""
    from knowledge_build.store import publishable

    def edit(root):
        page = root / "junior" / "因数分解.html"
        text = page.read_text(encoding="utf-8")
        page.write_text(text.replace("そこで使うのが「たすき掛け」です", "そこで使うのが「たすき掛け」です。二十三個の百分率"),
                        encoding="utf-8")

    index = build(load_config(site=_edited(tmp_path, edit), cache_dir=tmp_path / "cache", env={}),
                  embedder=FakeEmbedder()).output
    with monkeypatch.context() as before:
        before.setattr(lexical, "fold", _fold_before_issue_39)
        before.setattr(publishable, "TERMS_VERSION", 1)
        with connect(fresh_db) as conn:
            publish(conn, index)
    assert "t\x1f2十" in _lexical_state(fresh_db)[0]
    with connect(fresh_db) as conn:
        plan = publish(conn, index)
    assert plan.terms == _chunk_count(index)
    after = _lexical_state(fresh_db)
    assert "t\x1f23" in after[0] and "t\x1f10" in after[0] and "t\x1f2十" not in after[0]
    full = new_database(pg_server["url"])
    with connect(full) as conn:
        publish(conn, index)
    assert after == _lexical_state(full)


def test_a_database_whose_bags_are_incomplete_gets_its_lists_made_again_whole(tmp_path, fresh_db, pg_server):
    index = _published(tmp_path, fresh_db)
    full = _lexical_state(fresh_db)
    with psycopg.connect(fresh_db) as conn:
        conn.execute("delete from knowledge_chunk_terms where id = (select min(id) from knowledge_chunk_terms)")
    with connect(fresh_db) as conn:
        plan = publish(conn, index)
    assert plan.changes == 0 and plan.terms == _chunk_count(index)
    assert _lexical_state(fresh_db) == full


@pytest.mark.parametrize(("query", "expanded", "not_expanded"), [
    ("コサインの値", ["余弦"], ["正弦"]),  # サイン is found inside コサイン only
    ("サインとコサイン", ["余弦", "正弦"], []),
    ("ピタゴラスの定理の証明", ["3平", "平方"], []),  # bigrams of 三平方の定理 (kanji numerals as digits)
])
def test_a_thesaurus_wording_inside_a_longer_one_found_is_not_expanded(published_db, query, expanded, not_expanded):
    from knowledge_build.text.thesaurus import load_thesaurus

    thesaurus = load_thesaurus(None)
    assert list(thesaurus["サイン"]) == ["正弦", "sin"] and list(thesaurus["コサイン"]) == ["余弦", "cos"]
    with psycopg.connect(published_db) as conn:
        terms = {t for (t,) in conn.execute("select term from knowledge_query_terms(%s)", (query,))}
    assert all(f"t\x1f{word}" in terms for word in expanded)
    assert not any(f"t\x1f{word}" in terms for word in not_expanded)


def test_a_second_publish_of_the_same_set_writes_no_terms(tmp_path, fresh_db):
    index = _published(tmp_path, fresh_db)
    before = _lexical_state(fresh_db)
    with connect(fresh_db) as conn:
        plan = publish(conn, index)
    assert plan.terms == 0 and plan.changes == 0
    assert _lexical_state(fresh_db) == before


@pytest.mark.parametrize("query", ["たすきがけ", "タスキガケ", "tasukigake", "襷掛け"])
def test_the_rpc_alone_finds_the_tasukigake_box_by_any_spelling(published_db, query):
    """What a tutor's own server sends: the query text and the vector of the query as typed."""
    with connect(published_db) as conn:
        rows = hybrid_search(conn, query, FakeEmbedder().embed_query(query), 5)
        lexical_only = hybrid_search(conn, query, None, 5)
    assert "因数分解#method-tasukigake" in [r[0] for r in rows], rows
    assert "因数分解#method-tasukigake" in [r[0] for r in lexical_only], lexical_only


def test_the_rpc_returns_relevance_scores_in_order_and_applies_filters(published_db):
    with connect(published_db) as conn:
        rows = conn.execute("select id, score, relevance, relevant, type from search_knowledge(query_text => %s,"
                            " query_embedding => %s, match_count => 8)",
                            ("二次方程式の解き方", FakeEmbedder().embed_query("二次方程式の解き方"))).fetchall()
        assert len(rows) == 8
        assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
        assert all(0 <= r[2] <= 1 and r[3] == (r[2] >= 0.5) for r in rows)
        only = conn.execute("select type from search_knowledge(query_text => %s, query_embedding => %s,"
                            " match_count => 5, filter_type => 'example')",
                            ("二次方程式", FakeEmbedder().embed_query("二次方程式"))).fetchall()
        assert only and {t for (t,) in only} == {"example"}
        assert conn.execute("select count(*) from search_knowledge(query_text => '  ')").fetchone()[0] == 0
        # The embedding-only call a tutor made before is still there.
        old = conn.execute("select id from search_knowledge(%s::vector, 3)",
                           (str(FakeEmbedder().embed_query("判別式").tolist()),)).fetchall()
        assert len(old) == 3


def test_search_with_a_database_url_answers_through_the_hybrid_rpc(published_db, fake_index_dir):
    with connect(published_db) as conn:
        expected = [r[0] for r in hybrid_search(conn, "たすきがけ", None, 35)]
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    service = SearchService(index, published_db)
    try:
        found = service.search("たすきがけ", k=5, mode="lexical")
    finally:
        service.close()
    assert [r.source for r in found] == ["database"] * len(found)
    # Its rows become places (places.py): the first stays first, a page part may be lifted.
    assert found[0].id == expected[0] and {r.id for r in found} <= set(expected)


def test_a_database_without_the_hybrid_rpc_still_gives_its_dense_ranking(published_db, fake_index_dir, caplog):
    with connect(published_db) as conn:
        conn.execute("drop function search_knowledge(text, vector, int, float, text, text, text, text, text, text)")
        conn.commit()
    index = KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    service = SearchService(index, published_db)
    try:
        found = service.search("判別式", k=3)
        again = service.search("判別式", k=3)
    finally:
        service.close()
    assert found and {r.source for r in found} == {"database"} and [r.id for r in again] == [r.id for r in found]
    assert sum("no hybrid search_knowledge" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.model
def test_the_cli_search_reads_the_database_hybrid(fresh_db, real_index_dir):
    with connect(fresh_db) as conn:
        publish(conn, real_index_dir)
    result = CliRunner().invoke(main, ["search", "tasukigake", "--index", str(real_index_dir), "--database-url",
                                       fresh_db, "--format", "json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    results = found["results"] if isinstance(found, dict) else found
    assert results[0]["source"] == "database"
    assert "因数分解#method-tasukigake" in [r["id"] for r in results[:5]]


def _common_terms_rule(conn, monkeypatch, share: float, floor: int) -> None:
    """search_knowledge made again with another rule for the terms too common to score."""
    from knowledge_build.store.db_functions import function_files
    from knowledge_build.store.postgres import table_dimension

    monkeypatch.setattr(ranking_settings, "COMMON_SHARE", share)
    monkeypatch.setattr(ranking_settings, "COMMON_FLOOR", floor)
    conn.execute({f.name: f for f in function_files(table_dimension(conn))}["search"].apply_sql())


QUERIES = ["二次方程式の解き方", "たすきがけで因数分解する", "判別式Dの符号で実数解の個数がわかる", "tasukigake"]


def test_a_site_smaller_than_the_floor_scores_every_query_term(published_db, monkeypatch):
    with connect(published_db) as conn:
        shipped = [hybrid_search(conn, q, FakeEmbedder().embed_query(q), 10) for q in QUERIES]
        _common_terms_rule(conn, monkeypatch, share=1.0, floor=10 ** 9)
        every_term = [hybrid_search(conn, q, FakeEmbedder().embed_query(q), 10) for q in QUERIES]
    assert shipped == every_term


def test_on_a_large_site_the_rarest_terms_of_a_query_still_find_its_box(published_db, monkeypatch):
    """With no floor every term in more than 5 % of the chunks goes, as at 100,000 chunks; with no
    share at all, only the MIN_TERMS rarest are scored."""
    with connect(published_db) as conn:
        for share in (0.05, 0.0):
            _common_terms_rule(conn, monkeypatch, share=share, floor=0)
            for query in ("たすきがけで因数分解する", "たすきがけ", "tasukigake"):
                found = [r[0] for r in hybrid_search(conn, query, None, 5)]
                assert "因数分解#method-tasukigake" in found, (share, query, found)
