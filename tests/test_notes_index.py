"""The notes' search indexes (store/notes_index.py): ranking, filters, the migration of an older
notes file, deletes and concurrent writers, with both vector indexes and on Postgres."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading

import numpy as np
import pytest

from knowledge_build import NoteStore
from knowledge_build.store.common import NotesUnavailable
from knowledge_build.text.ja import analyze

from .conftest import FakeEmbedder

INDEXES = ("sqlite-vec", "numpy")
NOTES = {
    "discriminant": "判別式が負のとき二次方程式は実数解をもたない",
    "sine": "正弦は直角三角形の対辺と斜辺の比である",
    "vertex": "放物線の頂点は平方完成で求める",
    "probability": "さいころを二回投げて同じ目が出る確率は六分の一",
    "sequence": "等差数列の和は初項と末項の和に項数を掛けて二で割る",
    "log": "対数の底の変換公式で常用対数に直して計算する",
}
QUERIES = {"判別式が負": "discriminant", "正弦とは": "sine", "放物線の頂点の求め方": "vertex",
           "さいころの確率": "probability", "等差数列の和": "sequence", "底の変換公式": "log"}

# The notes table exactly as knowledge-build wrote it before the search indexes existed.
OLD_SCHEMA = [
    """create table if not exists knowledge_documents (
        id text primary key, title text not null, source text not null default '', category text not null default '',
        metadata text not null default '{}', chunks integer not null default 0, user_id text not null,
        created_at text not null)""",
    """create table if not exists knowledge_notes (
        id text primary key, kind text not null, document_id text, chunk_index integer, title text not null,
        content text not null, tags text not null default '[]', category text not null default '',
        user_id text not null, created_at text not null, updated_at text not null,
        embedding bytea not null, tokens text not null)""",
]


@pytest.fixture(params=INDEXES)
def vector_index(request):
    return request.param


def fill(store: NoteStore) -> dict[str, str]:
    return {name: store.save(text, title=text[:8])["id"] for name, text in NOTES.items()}


def old_rows(embedder, notes: dict[str, str]) -> list[tuple]:
    """Rows as the older NoteStore stored them: raw float32 vector bytes, tokens as analyze's JSON."""
    when = "2025-01-01T00:00:00+00:00"
    return [(f"note-old{n}", "note", None, None, text[:8], text, json.dumps([name]), "", "anonymous", when, when,
             np.asarray(embedder.embed_documents([f"{text[:8]}\n{text}"])[0], dtype=np.float32).tobytes(),
             json.dumps(analyze(f"{text[:8]}\n{text}"), ensure_ascii=False))
            for n, (name, text) in enumerate(notes.items())]


def write_old_file(path, rows: list[tuple]) -> None:
    conn = sqlite3.connect(path)
    for statement in OLD_SCHEMA:
        conn.execute(statement.replace("bytea", "blob"))
    conn.executemany("insert into knowledge_notes values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def index_counts(store: NoteStore) -> dict[str, int]:
    tables = ["knowledge_notes", "knowledge_note_index", "knowledge_note_fts"]
    if store.vector_index == "sqlite-vec":
        tables.append("knowledge_note_vec")
    return {t: store._conn.execute(f"select count(*) from {t}").fetchone()[0] for t in tables}


def assert_terms_counted(store: NoteStore) -> None:
    """knowledge_note_terms holds, per field and token, the number of notes that have it."""
    counts: dict = {}
    for (tokens,) in store._conn.execute("select tokens from knowledge_notes"):
        for field, words in json.loads(tokens).items():
            for word in set(words):
                counts[(field, word)] = counts.get((field, word), 0) + 1
    assert {(f, t): n for f, t, n in store._conn.execute("select * from knowledge_note_terms")} == counts


def test_each_question_finds_its_note_first_with_either_vector_index(tmp_path, vector_index):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite", vector_index=vector_index)
    assert store.vector_index == vector_index
    ids = fill(store)
    for query, name in QUERIES.items():
        found = store.search(query, top_k=3)
        assert found[0]["id"] == ids[name], query
        assert set(found[0]) == {"id", "kind", "document_id", "chunk_index", "title", "content", "tags", "category",
                                 "user_id", "created_at", "updated_at", "similarity", "score"}
    store.close()


def test_a_filtered_query_finds_a_match_outside_the_global_candidates(tmp_path, vector_index):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite", vector_index=vector_index)
    store.settings = dataclasses.replace(store.settings, candidates=5)  # each channel's depth: far above the chunks
    for i in range(30):
        store.save(f"平方完成の手順 {i}: 二次関数の平方完成をくり返し練習する")
    document = store.import_document("三角比", "正弦の話。平方完成の記述もある。", category="三角比")
    other = store.import_document("三角比の続き", "余弦の話。", category="三角比")
    assert all(r["kind"] == "note" for r in store.search("平方完成", top_k=5))
    by_document = store.search("平方完成", document_id=document["document_id"])
    assert [r["document_id"] for r in by_document] == [document["document_id"]]
    by_category = store.search("平方完成", category="三角比", top_k=10)
    assert [r["document_id"] for r in by_category] == [document["document_id"], other["document_id"]]
    assert {r["kind"] for r in store.search("平方完成", kind="chunk", top_k=10)} == {"chunk"}
    assert store.search("平方完成", category="存在しない") == []
    store.close()


def test_fts_syntax_and_symbols_in_a_query_are_searched_as_words(tmp_path, vector_index):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite", vector_index=vector_index)
    fill(store)
    symbols = store.save("x^2 -- 「NEAR」 は記号の例")
    for query in ("--", '"', "NEAR(a b)", "^2", "( )", "a OR b", "判別式 AND", "col : 値"):
        store.search(query)  # no FTS5 syntax error
    assert store.search("x^2 --", top_k=1)[0]["id"] == symbols["id"]
    store.close()


def test_a_search_deeper_than_sqlite_vec_allows_still_returns_every_note(tmp_path, vector_index):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite", vector_index=vector_index)
    ids = fill(store)
    assert {r["id"] for r in store.search("判別式", top_k=5000)} == set(ids.values())
    store.close()


def test_an_old_notes_file_is_indexed_on_open_and_keeps_every_note(tmp_path, vector_index):
    path = tmp_path / "old.sqlite"
    rows = old_rows(FakeEmbedder(), NOTES)
    write_old_file(path, rows)
    store = NoteStore(FakeEmbedder(), path, vector_index=vector_index)
    assert set(index_counts(store).values()) == {len(NOTES)}
    assert_terms_counted(store)
    for query, name in QUERIES.items():
        assert store.search(query, top_k=1)[0]["id"] == f"note-old{list(NOTES).index(name)}", query
    kept = store._conn.execute("select * from knowledge_notes order by id").fetchall()
    assert [tuple(bytes(v) if isinstance(v, bytes) else v for v in r) for r in kept] == sorted(rows)
    new = store.save("ベクトルの内積は成分の積の和")
    assert store.search("ベクトルの内積", top_k=1)[0]["id"] == new["id"]
    store.close()
    again = NoteStore(FakeEmbedder(), path, vector_index=vector_index)  # opening again indexes nothing twice
    assert set(index_counts(again).values()) == {len(NOTES) + 1}
    again.close()


def test_notes_an_older_version_wrote_or_deleted_after_the_migration_are_reconciled_on_open(tmp_path):
    path = tmp_path / "notes.sqlite"
    store = NoteStore(FakeEmbedder(), path)
    ids = fill(store)
    store.close()
    conn = sqlite3.connect(path)  # what an older knowledge-build does: rows only, no index
    conn.executemany("insert into knowledge_notes values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     old_rows(FakeEmbedder(), {"vector": "ベクトルの内積は成分の積の和"}))
    conn.execute("delete from knowledge_notes where id = ?", (ids["sine"],))
    conn.commit()
    conn.close()
    store = NoteStore(FakeEmbedder(), path)
    assert set(index_counts(store).values()) == {len(NOTES)}
    assert_terms_counted(store)
    assert store.search("ベクトルの内積", top_k=1)[0]["id"] == "note-old0"
    assert ids["sine"] not in {r["id"] for r in store.search("正弦とは", top_k=50)}
    store.close()


def test_delete_takes_notes_and_document_chunks_out_of_both_indexes(tmp_path, vector_index):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite", vector_index=vector_index)
    ids = fill(store)
    document = store.import_document("三角比", "正弦は対辺と斜辺の比。" * 40, chunk_size=100, chunk_overlap=10)
    store.delete(ids["sine"])
    store.delete(document["document_id"])
    assert set(index_counts(store).values()) == {len(NOTES) - 1}
    assert_terms_counted(store)
    found = store.search("正弦とは", top_k=50)
    assert ids["sine"] not in {r["id"] for r in found} and not any(r["document_id"] for r in found)
    store.close()


def test_a_sqlite_vec_reader_sees_notes_a_numpy_writer_saved(tmp_path):
    path = tmp_path / "notes.sqlite"
    reader = NoteStore(FakeEmbedder(), path, vector_index="sqlite-vec")
    fill(reader)
    writer = NoteStore(FakeEmbedder(), path, vector_index="numpy")
    new = writer.save("ベクトルの内積は成分の積の和")
    found = reader.search("ベクトルの内積", top_k=1)
    assert found[0]["id"] == new["id"] and found[0]["similarity"] > 0.5
    assert index_counts(reader)["knowledge_note_vec"] == len(NOTES) + 1
    reader.close()
    writer.close()


def test_numpy_scan_reads_the_vectors_again_only_after_a_write(tmp_path):
    store = NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite", vector_index="numpy")
    fill(store)
    store.search("確率")
    loaded = store._index._matrix
    store.search("数列", category="なし")
    assert store._index._matrix is loaded
    store.save("ベクトルの内積は成分の積の和")
    store.search("数列")
    assert store._index._matrix is not loaded and len(store._index._matrix[1]) == len(NOTES) + 1
    store.close()


def test_notes_made_by_another_embedder_dimension_are_refused_on_open(tmp_path):
    path = tmp_path / "notes.sqlite"
    NoteStore(FakeEmbedder(64), path).save("判別式が負なら実数解はない")
    with pytest.raises(NotesUnavailable, match="dimension 64, this embedder makes 32"):
        NoteStore(FakeEmbedder(32), path)


def test_concurrent_writers_and_deleters_keep_the_indexes_level_with_the_notes(tmp_path, vector_index):
    path = tmp_path / "notes.sqlite"
    stores = [NoteStore(FakeEmbedder(), path, vector_index=vector_index) for _ in range(4)]
    errors = []

    def work(store, n):
        try:
            for i in range(15):
                saved = store.save(f"メモ {n}-{i}: 平方完成の手順")
                if i % 3 == 0:
                    store.delete(saved["id"])
                store.search("平方完成", top_k=3)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(index_counts(stores[0]).values()) == {40}
    assert_terms_counted(stores[0])
    assert len(stores[1].search("平方完成", top_k=1000)) == 40
    for store in stores:
        store.close()


@pytest.mark.db
def test_postgres_notes_table_of_the_old_schema_is_indexed_and_searched(fresh_db):
    import psycopg

    with psycopg.connect(fresh_db, autocommit=True) as conn:
        for statement in OLD_SCHEMA:
            conn.execute(statement)
        with conn.cursor() as cur:
            cur.executemany("insert into knowledge_notes values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                            old_rows(FakeEmbedder(), NOTES))
    store = NoteStore(FakeEmbedder(), database_url=fresh_db)
    assert store.vector_index == "pgvector"
    for query, name in QUERIES.items():
        assert store.search(query, top_k=1)[0]["id"] == f"note-old{list(NOTES).index(name)}", query
    store.settings = dataclasses.replace(store.settings, candidates=5)
    for i in range(30):
        store.save(f"平方完成の手順 {i}: 二次関数の平方完成をくり返し練習する")
    document = store.import_document("三角比", "正弦の話。平方完成の記述もある。", category="三角比")
    assert [r["document_id"] for r in store.search("平方完成", category="三角比")] == [document["document_id"]]
    store.delete(document["document_id"])
    assert store.search("平方完成", category="三角比") == []
    with psycopg.connect(fresh_db) as conn:
        assert conn.execute("select count(*) from knowledge_notes where dense is null or lexemes is null"
                            ).fetchone()[0] == 0
    again = NoteStore(FakeEmbedder(), database_url=fresh_db)
    assert again.search("判別式が負", top_k=1)[0]["id"] == "note-old0"
    store.close()
    again.close()
