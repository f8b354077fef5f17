"""One Config for every command: search, eval, validate, publish, serve and report resolve the
artifact set, the database URL and the timeouts the way build does (file < KB_* env < flags)."""

import json

import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build import KnowledgeIndex, build, load_config
from knowledge_build.chunking.learns_gen import source_hash
from knowledge_build.cli import main
from knowledge_build.config import generated_learns_path, index_dir

from .conftest import FakeEmbedder

UNREACHABLE = "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1"


@pytest.fixture
def built_site(site_dir, build_copies):
    """`site_dir`, built as `build --site` in an empty folder builds it (its cache in KB_CACHE_DIR, the
    test's cache folder; made once per run, copied here: see conftest.BuildCopies)."""
    def configure(site):
        return load_config(site=site, cwd=site.parent, env={"KB_CACHE_DIR": str(site.parent / "cache")})

    build_copies("config-commands", configure, FakeEmbedder, site_dir.parent)
    return site_dir


def test_search_eval_and_report_read_the_set_of_the_site_they_run_in(built_site, fake_open, monkeypatch, tmp_path):
    monkeypatch.chdir(built_site)
    searched = CliRunner().invoke(main, ["search", "たすきがけ", "--format", "json"])
    assert searched.exit_code == 0, searched.output
    assert json.loads(searched.stdout)["results"][0]["id"] == "因数分解#method-tasukigake"
    assert fake_open[-1]["path"] == built_site / "_site" / "knowledge" / "v2"
    dataset = tmp_path / "q.jsonl"
    dataset.write_text('{"qid": "1", "query": "たすきがけ", "relevant": ["因数分解#method-tasukigake"]}\n',
                       encoding="utf-8")
    evaluated = CliRunner().invoke(main, ["eval", "--dataset", str(dataset), "--output-dir", str(tmp_path / "r"),
                                          "--format", "json"])
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(evaluated.stdout)["hit@5"] == 1.0
    reported = CliRunner().invoke(main, ["report", "--out", str(tmp_path / "c.html"), "--format", "json"])
    assert reported.exit_code == 0, reported.output


def test_kb_index_names_the_set_for_search_anywhere(built_site, fake_open, monkeypatch, tmp_path):
    monkeypatch.setenv("KB_INDEX", str(built_site / "_site" / "knowledge" / "v2"))
    result = CliRunner().invoke(main, ["search", "判別式", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert fake_open[-1]["path"] == built_site / "_site" / "knowledge" / "v2"


def test_a_reading_command_without_any_set_says_the_three_ways_to_name_one(tmp_path):
    result = CliRunner().invoke(main, ["search", "判別式"])
    assert result.exit_code == 1
    assert "Pass --index DIR (a knowledge/v2 directory), set KB_INDEX, or give --site SITE" in result.output


def test_one_database_url_name_reaches_search_publish_validate_and_migrate(built_site, fake_open, monkeypatch):
    monkeypatch.chdir(built_site)
    monkeypatch.setenv("KB_DATABASE_URL", UNREACHABLE)
    searched = CliRunner().invoke(main, ["search", "たすきがけ", "--format", "json"])
    assert searched.exit_code == 0, searched.output
    assert "database search failed" in searched.stderr
    assert json.loads(searched.stdout)["results"][0]["source"] == "artifacts"
    for args in (["publish", "--dry-run"], ["validate", "--database"], ["db", "migrate", "--dim", "64"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, (args, result.output)
        assert "cannot connect to the database" in result.output and "127.0.0.1" in result.output, args
        assert "Traceback" not in result.output


def test_database_url_in_knowledge_yml_is_the_same_setting(built_site, monkeypatch):
    (built_site / "knowledge.yml").write_text(f"database_url: {UNREACHABLE}\n", encoding="utf-8")
    monkeypatch.chdir(built_site)
    result = CliRunner().invoke(main, ["publish", "--dry-run"])
    assert result.exit_code == 1 and "cannot connect to the database" in result.output


def test_publish_without_a_database_names_kb_database_url_and_spots_a_plain_database_url(built_site, monkeypatch):
    monkeypatch.chdir(built_site)
    result = CliRunner().invoke(main, ["publish"])
    assert result.exit_code == 1
    assert "Pass --database-url URL, set KB_DATABASE_URL, or put database_url in knowledge.yml" in result.output
    assert "DATABASE_URL is set but not read" not in result.output
    monkeypatch.setenv("DATABASE_URL", UNREACHABLE)
    result = CliRunner().invoke(main, ["publish"])
    assert 'DATABASE_URL is set but not read (one name for every command): export KB_DATABASE_URL="$DATABASE_URL"' \
        in result.output


def test_validate_reads_the_artifacts_unless_asked_for_the_database(built_site, monkeypatch):
    from .conftest import LocalLookalike

    build(load_config(site=built_site, cache_dir=built_site.parent / "lookalike-cache"), embedder=LocalLookalike())
    monkeypatch.chdir(built_site)
    monkeypatch.setenv("KB_DATABASE_URL", UNREACHABLE)
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 0, result.output
    assert result.output.endswith("0 error(s), 0 warning(s).\n")


def test_database_timeout_and_embedder_options_reach_the_search_path(built_site, monkeypatch):
    from knowledge_build import embed

    given = {}

    def fake_get_embedder(name, **options):
        given.update(options)
        return FakeEmbedder()

    monkeypatch.setattr(embed, "get_embedder", fake_get_embedder)
    monkeypatch.setattr(embed, "PROVIDERS", (*embed.PROVIDERS, "fake"))
    monkeypatch.setenv("KB_DATABASE_TIMEOUT", "0.5")
    monkeypatch.setenv("KB_EMBEDDING_TIMEOUT", "42")
    config = load_config(site=built_site, database_url=UNREACHABLE, base_url="http://127.0.0.1:9/v1")
    service = kb.open_search(config)
    assert (service.connect_timeout, service.statement_timeout_ms) == (0.5, 500)
    assert given["base_url"] == "http://127.0.0.1:9/v1" and given["timeout"] == 42.0
    assert isinstance(kb.open_search(config, use_database=False), KnowledgeIndex)


def test_generated_learns_resolve_to_the_site_whatever_the_current_directory(site_dir, tmp_path, monkeypatch):
    extraction = kb.extract(load_config(site=site_dir, env={}))
    chunk = next(c for c in extraction.chunks if c.learns_source == "heuristic")
    element = next(e for p in extraction.pages for e in p.elements if f"{p.material}#{e.id}" == chunk.id)
    target = generated_learns_path(load_config(site=site_dir, env={}), extraction.site)
    assert target == site_dir / "_data" / "learns.generated.yml"
    target.write_text(json.dumps({chunk.material: {chunk.anchor: {
        "source_hash": source_hash(element.title, element.text),
        "learns": ["一つ目を学ぶ", "二つ目を学ぶ", "三つ目を学ぶ"]}}}, ensure_ascii=False), encoding="utf-8")
    build_ids = []
    for cwd in (tmp_path, site_dir):  # like `make index` (repo root) and the Jekyll plugin (the site)
        monkeypatch.chdir(cwd)
        config = load_config(cwd=cwd, site=site_dir, output=tmp_path / f"out-{len(build_ids)}",
                             cache_dir=tmp_path / "cache")
        result = build(config, embedder=FakeEmbedder())
        assert next(c for c in result.chunks if c.id == chunk.id).learns_source == "generated"
        build_ids.append(result.artifacts.build_id)
    assert build_ids[0] == build_ids[1]


def test_index_dir_prefers_index_then_output_then_the_site(site_dir, tmp_path):
    assert index_dir(load_config(site=site_dir, env={})) == site_dir / "_site" / "knowledge" / "v2"
    assert index_dir(load_config(site=site_dir, output=tmp_path / "o", env={})) == tmp_path / "o"
    assert index_dir(load_config(site=site_dir, output=tmp_path / "o", index=tmp_path / "i", env={})) == tmp_path / "i"


def test_index_dir_of_a_site_is_knowledge_v2_even_when_only_an_old_v1_set_was_built(site_dir):
    # A reader then says to build (test_schema_one.py): schema 1 is no longer read.
    knowledge = site_dir / "_site" / "knowledge"
    (knowledge / "v1").mkdir(parents=True)
    (knowledge / "v1" / "manifest.json").write_text("{}", encoding="utf-8")
    assert index_dir(load_config(site=site_dir, env={})) == knowledge / "v2"
    assert index_dir(load_config(site=site_dir, artifact_schema=2, env={})) == knowledge / "v2"


def test_generated_learns_left_at_the_old_default_are_named_not_silently_dropped(site_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "learns.generated.yml").write_text("{}\n", encoding="utf-8")
    extraction = kb.extract(load_config(site=site_dir))
    (moved,) = [d for d in extraction.diagnostics if d.rule == "generated-learns-moved"]
    assert moved.severity == "warning" and moved.path == str(tmp_path / "data" / "learns.generated.yml")
    assert str(site_dir / "_data" / "learns.generated.yml") in moved.message
    assert not [d for d in kb.extract(load_config(site=site_dir, generated_learns="data/learns.generated.yml")
                                      ).diagnostics if d.rule == "generated-learns-moved"]
