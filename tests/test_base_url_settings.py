"""Settings users already have: OPENAI_BASE_URL where KB_BASE_URL is unset, and error messages that
name only the options of the command that prints them. Through the CLI, against the scripted
OpenAI-compatible server on loopback (test_openai_embedder.py)."""

import pytest
from click.testing import CliRunner

from knowledge_build import load_config
from knowledge_build.cli import main
from knowledge_build.errors import KnowledgeBuildError

from .test_openai_embedder import fake_server  # noqa: F401 (a fixture)


@pytest.fixture(autouse=True)
def no_openai_variables(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _build(site_dir, *options):
    return CliRunner().invoke(main, ["build", "--site", str(site_dir), "--embedder", "openai-compatible",
                                     "--embedding-dimensions", "8", "--format", "json", *options])


def _search(index_dir):
    return CliRunner().invoke(main, ["search", "たすきがけ", "--index", str(index_dir), "--format", "json"])


def test_openai_base_url_serves_build_and_search_where_kb_base_url_is_unset(fake_server, site_dir, monkeypatch):
    server, url = fake_server()
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    result = _build(site_dir)  # no --base-url, no KB_BASE_URL
    assert result.exit_code == 0, result.output
    built = server.requests
    assert built >= 1

    index_dir = site_dir / "_site" / "knowledge" / "v2"
    result = _search(index_dir)
    assert result.exit_code == 0, result.output
    assert server.requests == built + 1  # the query was embedded by the server OPENAI_BASE_URL names

    other, other_url = fake_server()
    monkeypatch.setenv("KB_BASE_URL", other_url)  # KB_BASE_URL, when set, wins
    assert _search(index_dir).exit_code == 0
    assert other.requests == 1 and server.requests == built + 1


def test_ask_reaches_the_chat_server_openai_base_url_names_without_a_key(fake_index_dir, fake_open, monkeypatch):
    from .chat_server import ChatServer

    with ChatServer() as chat:
        monkeypatch.setenv("OPENAI_BASE_URL", chat.url)  # no OPENAI_API_KEY, no --chat-base-url
        result = CliRunner().invoke(main, ["ask", "判別式とは", "--index", str(fake_index_dir)],
                                    env={"KB_RELEVANCE_THRESHOLD": "0"})
        assert result.exit_code == 0, result.output
        assert len(chat.requests) == 1 and result.output.startswith("「判別式とは」への回答です。")


def test_ask_without_a_chat_server_names_its_own_option(fake_index_dir, fake_open):
    result = CliRunner().invoke(main, ["ask", "判別式とは", "--index", str(fake_index_dir)],
                                env={"KB_RELEVANCE_THRESHOLD": "0"})
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "or pass --chat-base-url or set chat_base_url (KB_CHAT_BASE_URL, else OPENAI_BASE_URL)" in result.output


def test_the_settings_file_wins_over_openai_base_url_and_chat_follows_it_too(tmp_path):
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    config = load_config(cwd=tmp_path, env=env)
    assert config.base_url == config.chat_base_url == "http://127.0.0.1:1/v1"
    assert load_config(cwd=tmp_path, env={**env, "KB_BASE_URL": "http://127.0.0.1:2/v1"}).base_url == \
        "http://127.0.0.1:2/v1"
    (tmp_path / "knowledge.yml").write_text("base_url: http://127.0.0.1:3/v1\n", encoding="utf-8")
    config = load_config(cwd=tmp_path, env=env)
    assert config.base_url == "http://127.0.0.1:3/v1" and config.chat_base_url == "http://127.0.0.1:1/v1"


def test_search_without_a_server_url_names_the_variables_not_an_option_it_lacks(fake_server, site_dir):
    _, url = fake_server()
    assert _build(site_dir, "--base-url", url).exit_code == 0

    result = _search(site_dir / "_site" / "knowledge" / "v2")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output == ("Error: the openai-compatible embedder needs the server's URL. Fix: set KB_BASE_URL or "
                             "OPENAI_BASE_URL (or base_url in knowledge.yml), e.g. http://127.0.0.1:8000/v1.\n")


def test_build_without_a_server_url_names_its_base_url_option(site_dir):
    result = _build(site_dir)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output == ("Error: the openai-compatible embedder needs the server's URL. Fix: pass --base-url URL, "
                             "or set KB_BASE_URL or OPENAI_BASE_URL (or base_url in knowledge.yml), "
                             "e.g. http://127.0.0.1:8000/v1.\n")


def test_a_database_that_cannot_be_reached_is_named_by_the_options_the_command_has(tmp_path):
    refused = "postgresql://kb@127.0.0.1:1/kb"  # nothing listens on port 1
    sources = CliRunner().invoke(main, ["sources", "status", "--store", refused])
    assert sources.exit_code == 1 and "Traceback" not in sources.output
    assert "Check --store / KB_DATABASE_URL / KB_STORE," in sources.output
    assert "--database-url" not in sources.output
    migrate = CliRunner().invoke(main, ["db", "migrate", "--dim", "8", "--database-url", refused])
    assert migrate.exit_code == 1 and "Check --database-url / KB_DATABASE_URL / KB_STORE," in migrate.output
    assert "--store" not in migrate.output


def test_outside_a_command_a_message_keeps_every_option():
    error = KnowledgeBuildError("no server. Fix: [[pass --base-url or ]]set KB_BASE_URL.")
    assert str(error) == "no server. Fix: pass --base-url or set KB_BASE_URL."
    assert error.for_options({"--index"}) == "no server. Fix: set KB_BASE_URL."
    assert error.for_options({"--base-url"}) == str(error)
