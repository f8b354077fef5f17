"""Configuration: knowledge.yml / pyproject < KB_* env < flags, unset flags never override."""

import dataclasses
import re
from pathlib import Path

import pytest

from knowledge_build import Config, ConfigError, load_config

from .conftest import manual_text


def test_file_then_env_then_flags(tmp_path):
    (tmp_path / "knowledge.yml").write_text("site: content\nbatch_size: 4\nembedder: local\n", encoding="utf-8")
    config = load_config(cwd=tmp_path, env={})
    assert config.site == tmp_path / "content" and config.batch_size == 4
    config = load_config(cwd=tmp_path, env={"KB_BATCH_SIZE": "8"})
    assert config.batch_size == 8 and config.site == tmp_path / "content"
    config = load_config(cwd=tmp_path, env={"KB_BATCH_SIZE": "8"}, batch_size=32, site=None)
    assert config.batch_size == 32 and config.site == tmp_path / "content"


def test_pyproject_section_is_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.knowledge-build]\nsite = "docs"\nbatch-size = 2\n',
                                             encoding="utf-8")
    config = load_config(cwd=tmp_path, env={})
    assert config.site == tmp_path / "docs" and config.batch_size == 2


def test_unknown_setting_names_the_known_ones(tmp_path):
    (tmp_path / "knowledge.yml").write_text("sitee: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown setting 'sitee'. Known settings: .*site"):
        load_config(cwd=tmp_path, env={})


def test_bad_values_say_what_is_expected(tmp_path):
    with pytest.raises(ConfigError, match="batch_size must be a positive integer"):
        load_config(cwd=tmp_path, env={"KB_BATCH_SIZE": "zero"})
    with pytest.raises(ConfigError, match="unknown embedder 'cohere'. Choose one of: local, openai, openai-compatible"):
        load_config(cwd=tmp_path, env={"KB_EMBEDDER": "cohere"})


def test_box_classes_accept_a_comma_list(tmp_path):
    (tmp_path / "knowledge.yml").write_text("box_classes: rule-box, note-box\n", encoding="utf-8")
    assert load_config(cwd=tmp_path, env={}).box_classes == ("rule-box", "note-box")


def test_inside_a_jekyll_site_the_current_directory_is_the_site(tmp_path):
    (tmp_path / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    assert load_config(cwd=tmp_path, env={}).site == tmp_path
    assert load_config(cwd=tmp_path, env={"KB_SITE": "elsewhere"}).site == Path("elsewhere")


def test_every_setting_has_its_environment_variable_and_a_row_in_the_readme():
    readme = manual_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| `(KB_\w+)` \|", readme, flags=re.M))
    settings = {f.name for f in dataclasses.fields(Config)} - {"sources"}
    assert rows == {name: f"KB_{name.upper()}" for name in settings}


def test_a_list_setting_reads_comma_separated_names_from_the_environment(tmp_path):
    config = load_config(cwd=tmp_path, env={"KB_BOX_CLASSES": "note-box, rule-box", "KB_MISSING_ID": "error"})
    assert config.box_classes == ("note-box", "rule-box") and config.missing_id == "error"


@pytest.mark.parametrize("url, got", [("notaurl", "text that is not a URL"), ("mysql://u:secret@h/db", "a mysql:// URL")])
def test_a_database_url_that_is_not_postgres_is_one_line_saying_what_is_expected(url, got, tmp_path):
    from click.testing import CliRunner

    from knowledge_build.cli import main

    for command in (["search", "x"], ["serve"], ["publish"]):
        result = CliRunner().invoke(main, [*command, "--database-url", url, "--index", str(tmp_path)])
        assert result.exit_code == 1, command
        assert result.output == (
            f"Error: command line: database_url must be a Postgres URL starting with postgresql:// or postgres://, "
            f"got {got}. Fix: give one like postgresql://user:password@localhost:5432/postgres (Supabase: the "
            "project's connection string).\n")
        assert "secret" not in result.output
