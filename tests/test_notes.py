"""The writable note store: SQLite with concurrent writers, and Postgres when configured."""

import threading

import psycopg
import pytest

from knowledge_build import NoteStore
from knowledge_build.store.common import NotFound
from knowledge_build.text.windows import split_text

from .conftest import FakeEmbedder


def test_split_text_prefers_paragraphs_then_sentences_then_characters():
    assert len(split_text("あ" * 20000, 500, 50)) == 45
    text = "\n\n".join(["一文目。二文目。" * 20] * 3)
    chunks = split_text(text, 200, 20)
    assert all(len(c) <= 200 for c in chunks) and all(c.endswith("。") for c in chunks)


def test_concurrent_writers_keep_every_note(tmp_path):
    path = tmp_path / "notes.sqlite"
    stores = [NoteStore(FakeEmbedder(), path) for _ in range(4)]
    errors = []

    def write(store, n):
        try:
            for i in range(25):
                store.save(f"メモ {n}-{i}: 平方完成の手順")
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(NoteStore(FakeEmbedder(), path).search("平方完成", top_k=1000)) == 100


@pytest.mark.db
def test_notes_live_in_postgres_when_a_database_is_configured(fresh_db):
    store = NoteStore(FakeEmbedder(), database_url=fresh_db)
    assert store.backend == "postgres"
    note = store.save("判別式が負なら実数解はない", tags=["判別式"])
    document = store.import_document("三角比", "正弦は対辺と斜辺の比。" * 40, chunk_size=100, chunk_overlap=10)
    found = store.search("判別式", top_k=3)
    assert found[0]["id"] == note["id"] and found[0]["tags"] == ["判別式"]
    assert {r["document_id"] for r in store.search("正弦", document_id=document["document_id"], top_k=50)} == {
        document["document_id"]}
    again = NoteStore(FakeEmbedder(), database_url=fresh_db)
    assert again.search("判別式", top_k=1)[0]["id"] == note["id"]
    again.delete(document["document_id"])
    assert again.search("正弦", document_id=document["document_id"]) == []
    with pytest.raises(NotFound):
        again.delete("note-missing")
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        conn.execute("do $$ begin if not exists (select from pg_roles where rolname = 'anon') then "
                     "create role anon nologin; end if; end $$")
        conn.execute("grant select on knowledge_notes to anon")
        conn.execute("set role anon")
        assert conn.execute("select count(*) from knowledge_notes").fetchone()[0] == 0
