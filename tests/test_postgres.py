"""Postgres/pgvector with a real server: migrations, publish, RLS, parameterised SQL."""

import json
import shutil

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from knowledge_build import build, load_config
from knowledge_build.cli import main
from knowledge_build.store.postgres import DatabaseError, connect, get_chunk, migrate, publish

from .conftest import SITE, FakeEmbedder

pytestmark = pytest.mark.db


def _site_index(tmp_path, edit=None, name="site", embedder=None):
    root = tmp_path / name
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    if edit:
        edit(root)
    return build(load_config(site=root, cache_dir=tmp_path / "cache", env={}), embedder=embedder or FakeEmbedder()).output


def _rows(url):
    with psycopg.connect(url) as conn:
        return dict(conn.execute("select id, content_hash from knowledge_chunks").fetchall())


def _meta(url):
    with psycopg.connect(url) as conn:
        return dict(conn.execute("select key, value from knowledge_meta").fetchall())


def test_migrations_are_ordered_recorded_and_idempotent(fresh_db):
    with connect(fresh_db) as conn:
        assert migrate(conn, 64) == ["001_extension_and_meta", "002_chunks", "003_functions",
                                     "004_row_level_security", "005_section_types", "006_hybrid",
                                     "007_fingerprint", "008_hnsw", "009_public_access", "010_repeatable_functions",
                                     "011_facets", "012_aliases", "013_gap_log", "functions/checks",
                                     "functions/gaps", "functions/lexical", "functions/search"]
        assert migrate(conn, 64) == []
        assert [r[0] for r in conn.execute("select version from knowledge_migrations order by 1")] == [
            "001_extension_and_meta", "002_chunks", "003_functions", "004_row_level_security", "005_section_types",
            "006_hybrid", "007_fingerprint", "008_hnsw", "009_public_access", "010_repeatable_functions",
            "011_facets", "012_aliases", "013_gap_log"]
        assert [r[0] for r in conn.execute("select name from knowledge_functions order by 1")] == [
            "checks", "gaps", "lexical", "search"]
        index = conn.execute("select indexdef from pg_indexes where indexname = 'knowledge_chunks_embedding_hnsw'")
        assert "hnsw (embedding vector_cosine_ops) WITH (m='16', ef_construction='128')" in index.fetchone()[0]


def test_migration_008_rebuilds_an_index_made_with_the_old_settings_and_keeps_it_usable(fresh_db, tmp_path):
    index_dir = _site_index(tmp_path)
    with connect(fresh_db) as conn:
        publish(conn, index_dir)
        # a database migrated before 008: the index as 002 made it, pgvector's defaults
        conn.execute("drop index knowledge_chunks_embedding_hnsw")
        conn.execute("create index knowledge_chunks_embedding_hnsw on knowledge_chunks"
                     " using hnsw (embedding vector_cosine_ops)")
        conn.execute("delete from knowledge_migrations where version = '008_hnsw'")
        conn.commit()
        assert migrate(conn, 64) == ["008_hnsw"]
        options = conn.execute("select reloptions from pg_class where relname = 'knowledge_chunks_embedding_hnsw'")
        assert options.fetchone()[0] == ["m=16", "ef_construction=128"]
        conn.execute("delete from knowledge_migrations where version = '008_hnsw'")
        conn.commit()
        index = conn.execute("select oid from pg_class where relname = 'knowledge_chunks_embedding_hnsw'").fetchone()
        assert migrate(conn, 64) == ["008_hnsw"]  # applied again: the index has the settings, nothing rebuilt
        assert conn.execute("select oid from pg_class where relname = 'knowledge_chunks_embedding_hnsw'").fetchone() == index
        vector = conn.execute("select embedding from knowledge_chunks order by id limit 1").fetchone()[0]
        found = conn.execute("select id from search_knowledge(query_embedding => %s, match_count => 3)", (vector,))
        assert len(found.fetchall()) == 3


def test_publish_inserts_then_changes_nothing_then_applies_a_diff(fresh_db, tmp_path):
    first = _site_index(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["publish", "--index", str(first), "--database-url", fresh_db])
    assert result.exit_code == 0, result.output
    assert "171 new, 0 changed, 0 deleted, 0 unchanged" in result.output
    assert "publishing: 171/171 rows (100 %)" in result.stderr.splitlines()  # stderr is not a terminal here
    assert "migrating: applying 002_chunks" in result.stderr.splitlines()
    build_id = json.loads((first / "manifest.json").read_text())["build_id"]
    assert _meta(fresh_db)["build_id"] == build_id and len(_rows(fresh_db)) == 171

    again = runner.invoke(main, ["publish", "--index", str(first), "--database-url", fresh_db])
    assert "0 new, 0 changed, 0 deleted, 171 unchanged" in again.output and "publishing" not in again.stderr
    assert "migrating" not in again.stderr

    def edit(root):
        page = root / "junior" / "一次方程式.html"
        text = page.read_text(encoding="utf-8").replace("<strong>📌 移項</strong>", "<strong>📌 移項の規則</strong>")
        page.write_text(text.replace('id="tip-check-answer"', 'class="x"'), encoding="utf-8")

    second = _site_index(tmp_path, edit, name="site2")
    dry = runner.invoke(main, ["publish", "--index", str(second), "--database-url", fresh_db, "--dry-run"])
    # the box without its id is text of its section, which becomes a section chunk (sections: all)
    assert "Would publish" in dry.output and "1 new, 2 changed, 1 deleted, 168 unchanged" in dry.output
    assert "  ~ 一次方程式#rule-transposition" in dry.output and "  - 一次方程式#tip-check-answer" in dry.output
    assert "  + 一次方程式#sec-5-word-problem-riyo" in dry.output
    assert _meta(fresh_db)["build_id"] == build_id
    done = runner.invoke(main, ["publish", "--index", str(second), "--database-url", fresh_db, "--format", "json"])
    plan = json.loads(done.output)
    assert "publishing" not in done.stderr  # --format json: no progress unless --progress
    assert plan["update"] == ["一次方程式#rule-transposition", "一次方程式#sec-1-equation-kai"]
    assert plan["delete"] == ["一次方程式#tip-check-answer"] and plan["insert"] == ["一次方程式#sec-5-word-problem-riyo"]
    with connect(fresh_db) as conn:
        assert get_chunk(conn, "一次方程式#rule-transposition")["title"] == "移項の規則"


def test_publish_refuses_another_embedder_or_dimension(published_db, tmp_path):
    with connect(published_db) as conn:
        with pytest.raises(DatabaseError, match="dimension 64, the artifacts have 32. Migrate by hand"):
            publish(conn, _site_index(tmp_path, name="small", embedder=FakeEmbedder(dim=32)))

    class Other(FakeEmbedder):
        model = "other-model/1"

    with connect(published_db) as conn:
        with pytest.raises(DatabaseError, match="vectors are not comparable"):
            publish(conn, _site_index(tmp_path, name="other", embedder=Other()))


def test_anon_may_read_and_call_the_rpcs_but_not_write(published_db):
    with psycopg.connect(published_db, autocommit=True) as conn:
        conn.execute("set role anon")
        assert conn.execute("select count(*) from knowledge_chunks").fetchone()[0] == 171
        vector = "[" + ",".join(["0.125"] * 64) + "]"
        assert len(conn.execute("select * from search_knowledge(%s::vector, 3)", (vector,)).fetchall()) == 3
        assert conn.execute("select title from get_chunk_by_id(%s)", ("二次方程式#rule-quadratic-formula",)).fetchone()
        assert conn.execute("select count(*) from list_concepts(null, 'rule')").fetchone()[0] == 30
        for statement in ("insert into knowledge_chunks (id) values ('x')",
                          "update knowledge_chunks set title = 'x'",
                          "delete from knowledge_chunks",
                          "insert into knowledge_meta (key, value) values ('build_id', 'x')"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    assert len(_rows(published_db)) == 171


LEXICAL_TABLES = ("knowledge_chunk_terms", "knowledge_terms", "knowledge_lexical_stats")


def test_anon_may_read_the_lexical_tables_and_call_the_hybrid_rpc_but_write_no_table(published_db):
    with psycopg.connect(published_db, autocommit=True) as conn:
        # every knowledge_* table the migrations made, so that a table added later is checked too
        tables = [r[0] for r in conn.execute("select tablename from pg_tables where schemaname = 'public'"
                                             " and tablename like 'knowledge\\_%' order by 1")]
        assert {"knowledge_chunks", "knowledge_meta", "knowledge_migrations", *LEXICAL_TABLES} <= set(tables)
        first_columns = {t: conn.execute("select column_name from information_schema.columns where table_schema = 'public'"
                                         " and table_name = %s order by ordinal_position limit 1", (t,)).fetchone()[0]
                         for t in tables}
        conn.execute("set role anon")
        for table in LEXICAL_TABLES:
            assert conn.execute(sql.SQL("select count(*) from {}").format(sql.Identifier(table))).fetchone()[0] > 0
        found = conn.execute("select id, relevant from search_knowledge(query_text => %s, match_count => 3)",
                             ("たすきがけ",)).fetchall()
        assert found[0] == ("因数分解#method-tasukigake", True) and len(found) == 3
        vector = "[" + ",".join(["0.125"] * 64) + "]"
        assert len(conn.execute("select * from search_knowledge(query_text => %s, query_embedding => %s::vector,"
                                " match_count => 4)", ("たすきがけ", vector)).fetchall()) == 4
        assert conn.execute("select knowledge_fold('タスキガケ'), knowledge_romaji('tasukigake'),"
                            " array(select knowledge_bigrams('たすき'))").fetchone() == ("たすきがけ", "たすきがけ", ["たす", "すき"])
        assert conn.execute("select count(*) from knowledge_query_terms('たすきがけ')").fetchone()[0] > 0
        for table in tables:
            name, column = sql.Identifier(table), sql.Identifier(first_columns[table])
            for statement in (sql.SQL("insert into {} default values").format(name),
                              sql.SQL("update {} set {} = {}").format(name, column, column),
                              sql.SQL("delete from {}").format(name), sql.SQL("truncate {}").format(name)):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement)
    with psycopg.connect(published_db) as conn:
        for table in LEXICAL_TABLES:
            assert conn.execute(sql.SQL("select count(*) from {}").format(sql.Identifier(table))).fetchone()[0] > 0


def test_the_publishing_role_may_write_the_lexical_tables(published_db):
    with psycopg.connect(published_db) as conn:  # one transaction, rolled back
        conn.execute("set local role knowledge_publisher")
        conn.execute("insert into knowledge_terms (term, nums, tfs) values (%s, '{1}', '{1}')", ("t\037zz",))
        conn.execute("insert into knowledge_chunk_terms (num, id, lengths, terms, tfs) values (-1, 'x', '{0,0,0}', '{}', '{}')")
        conn.execute("insert into knowledge_lexical_stats (key, total, by_num) values ('x', 0, '{}')")
        for table, column in (("knowledge_terms", "tfs"), ("knowledge_chunk_terms", "tfs"), ("knowledge_lexical_stats", "total")):
            name, column = sql.Identifier(table), sql.Identifier(column)
            assert conn.execute(sql.SQL("update {} set {} = {}").format(name, column, column)).rowcount > 1
            assert conn.execute(sql.SQL("delete from {} where ctid = (select min(ctid) from {})").format(name, name)).rowcount == 1
        conn.rollback()


def test_a_member_of_the_publishing_role_publishes_a_change(published_db, tmp_path):
    """The owner migrates once; from then on a login role in knowledge_publisher publishes (rows,
    terms, statistics), as the README says."""
    role = "kb_pub_" + published_db.split("/kb_", 1)[1][:8]
    with psycopg.connect(published_db, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login in role knowledge_publisher").format(sql.Identifier(role)))

    def edit(root):
        page = root / "junior" / "因数分解.html"
        text = page.read_text(encoding="utf-8")
        assert "そこで使うのが「たすき掛け」です" in text
        page.write_text(text.replace("そこで使うのが「たすき掛け」です", "そこで使うのが「たすきがけ」です"), encoding="utf-8")

    changed = _site_index(tmp_path, edit, name="edited")
    as_publisher = published_db.replace("postgresql://postgres:@", f"postgresql://{role}:@")
    assert as_publisher != published_db
    with connect(as_publisher) as conn:
        assert conn.execute("select current_user").fetchone()[0] == role
        plan = publish(conn, changed)
    assert plan.update and plan.terms == len(plan.update) + len(plan.insert)
    assert _meta(published_db)["build_id"] == json.loads((changed / "manifest.json").read_text())["build_id"]


def test_hostile_text_is_data_not_sql(fresh_db, tmp_path):
    hostile = "'; drop table knowledge_chunks; --"

    def edit(root):
        page = root / "junior" / "移項'); drop table knowledge_meta; --.html"
        page.write_text("---\ntitle: \"x'; delete from knowledge_chunks; --\"\ncategory: \"'; --\"\n---\n"
                        f'<div class="rule-box" id="rule-evil"><strong>{hostile}</strong>本文 $$ \\\\ \'</div>',
                        encoding="utf-8")

    with connect(fresh_db) as conn:
        publish(conn, _site_index(tmp_path, edit))
        chunk_id = "移項'); drop table knowledge_meta; --#rule-evil"
        row = get_chunk(conn, chunk_id)
        assert row["title"] == hostile and row["category"] == "'; --"
        assert conn.execute("select count(*) from search_knowledge(%s::vector, 5, null, %s, %s, %s)",
                            ("[" + ",".join(["0.1"] * 64) + "]", hostile, hostile, hostile)).fetchone()[0] == 0
        assert get_chunk(conn, hostile) is None
    assert len(_rows(fresh_db)) == 172 and "build_id" in _meta(fresh_db)


def test_validate_against_the_database(fresh_db, tmp_path, site_dir):
    index = build(load_config(site=site_dir, env={}), embedder=FakeEmbedder()).output
    with connect(fresh_db) as conn:
        publish(conn, index)
    page = site_dir / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace('id="rule-transposition"', 'id="rule-iko"'), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--database-url", fresh_db])
    assert result.exit_code == 1 and "[stale-anchor]" in result.output and "[not-indexed]" in result.output


def test_validate_against_an_empty_database_says_to_publish_first(fresh_db, site_dir):
    result = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--database-url", fresh_db])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output == ("Error: the database holds no published chunks (no knowledge_chunks table). Fix: publish "
                             "an artifact set first with 'knowledge-build publish --index DIR', or check that "
                             "--database-url names the database you published to\n")
    with connect(fresh_db) as conn:
        migrate(conn, 64)  # the table exists but holds nothing: every box is reported as not indexed
    result = CliRunner().invoke(main, ["validate", "--site", str(site_dir), "--database-url", fresh_db])
    assert result.exit_code == 0 and "[not-indexed]" in result.output


def test_db_sql_prints_the_schema_for_the_sql_editor():
    result = CliRunner().invoke(main, ["db", "sql", "--dim", "1536"])
    assert result.exit_code == 0
    assert "embedding vector(1536) not null" in result.output and "__DIM__" not in result.output
    assert "insert into knowledge_migrations (version) values ('004_row_level_security')" in result.output


def _decodes(monkeypatch) -> list[int]:
    """The rows a publish decodes from a schema 2 set, recorded."""
    from knowledge_build.store import publishable

    seen, decode = [], publishable._MappedSet.chunk

    def chunk(self, row):
        seen.append(row)
        return decode(self, row)

    monkeypatch.setattr(publishable._MappedSet, "chunk", chunk)
    return seen


def test_a_publish_decodes_only_the_rows_it_writes_and_stores_their_fingerprints(fresh_db, tmp_path, monkeypatch):
    first = _site_index(tmp_path)
    decoded = _decodes(monkeypatch)
    with connect(fresh_db) as conn:
        publish(conn, first)
        assert len(set(decoded)) == 171  # the first publish writes every row
        assert conn.execute("select count(*) from knowledge_chunks where fingerprint ~ '^[0-9a-f]{64}$'").fetchone()[0] == 171
        decoded.clear()
        assert publish(conn, first).changes == 0 and decoded == []

    def edit(root):
        page = root / "junior" / "一次方程式.html"
        page.write_text(page.read_text(encoding="utf-8").replace("<strong>📌 移項</strong>",
                                                                 "<strong>📌 移項の規則</strong>"), encoding="utf-8")

    second = _site_index(tmp_path, edit, name="site2")
    with connect(fresh_db) as conn:
        plan = publish(conn, second)
        assert plan.update == ["一次方程式#rule-transposition"] and not plan.insert and not plan.delete
        # the row written (to plan, check, write and index it), nothing else
        assert set(decoded) == {plan.rows[i] for i in plan.update}


def test_rows_published_before_fingerprints_are_written_again_once(fresh_db, tmp_path):
    index = _site_index(tmp_path)
    with connect(fresh_db) as conn:
        publish(conn, index)
        before = conn.execute("select id, content, embedding::text, num from knowledge_chunks order by id").fetchall()
        terms = conn.execute("select term, nums, tfs from knowledge_terms order by term").fetchall()
        conn.execute("update knowledge_chunks set fingerprint = null")
        conn.commit()
        again = publish(conn, index)
        assert len(again.update) == 171 and again.unchanged == 0
        assert publish(conn, index).changes == 0
        assert conn.execute("select id, content, embedding::text, num from knowledge_chunks order by id").fetchall() == before
        assert conn.execute("select term, nums, tfs from knowledge_terms order by term").fetchall() == terms


def test_a_changed_byte_in_the_set_is_refused_and_the_database_keeps_what_it_had(fresh_db, tmp_path):
    from knowledge_build.errors import ChecksumMismatch

    index = _site_index(tmp_path)
    with connect(fresh_db) as conn:
        publish(conn, index)
    def published():
        with psycopg.connect(fresh_db) as conn:
            return conn.execute("select id, title, content from knowledge_chunks order by id").fetchall()

    before = published()
    chunks = index / "knowledge_chunks.jsonl"
    data = chunks.read_bytes()
    at = data.index("移項".encode())
    chunks.write_bytes(data[:at] + "移動".encode() + data[at + len("移項".encode()):])  # same size
    result = CliRunner().invoke(main, ["publish", "--index", str(index), "--database-url", fresh_db])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "knowledge_chunks.jsonl" in result.output and "sha256" in result.output
    with pytest.raises(ChecksumMismatch), connect(fresh_db) as conn:
        publish(conn, index)
    assert published() == before


def test_a_resealed_set_with_a_broken_row_is_refused_when_that_row_is_written(fresh_db, tmp_path):
    """A set whose checksums were recomputed after a chunk lost a required field: the first publish
    (every row) checks the whole set, an incremental one the rows it writes."""
    from knowledge_build.errors import ArtifactUnreadable
    from knowledge_build.index.artifacts import build_id_of, dumps, sha256

    def broken(index):
        lines = (index / "knowledge_chunks.jsonl").read_bytes().splitlines(keepends=True)
        row = next(i for i, line in enumerate(lines) if b'"id":"\xe4\xb8\x80\xe6\xac\xa1\xe6\x96\xb9\xe7\xa8\x8b\xe5\xbc\x8f#rule-transposition"' in line)
        chunk = json.loads(lines[row])
        del chunk["title"]
        lines[row] = (json.dumps(chunk, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode()
        _reseal(index, "knowledge_chunks.jsonl", b"".join(lines))
        return index

    def _reseal(index, name, data):
        import numpy as np

        (index / name).write_bytes(data)
        rows = np.load(index / "rows.npy", allow_pickle=False)
        lines = data.splitlines(keepends=True)
        rows["offset"][1:] = np.cumsum([len(line) for line in lines[:-1]])
        np.save(index / "rows.npy", rows, allow_pickle=False)
        manifest = json.loads((index / "manifest.json").read_text())
        for changed in (name, "rows.npy"):
            raw = (index / changed).read_bytes()
            manifest["files"][changed] = {"sha256": sha256(raw), "size": len(raw)}
        manifest["build_id"] = build_id_of(manifest)
        (index / "manifest.json").write_bytes(dumps(manifest))

    with connect(fresh_db) as conn, pytest.raises(ArtifactUnreadable, match="title"):
        publish(conn, broken(_site_index(tmp_path)))
    with connect(fresh_db) as conn:
        assert conn.execute("select count(*) from knowledge_chunks").fetchone()[0] == 0
        publish(conn, _site_index(tmp_path, name="good"))
        with pytest.raises(ArtifactUnreadable, match="title"):
            publish(conn, broken(_site_index(tmp_path, name="bad")))
