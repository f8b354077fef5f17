"""Settings of web sources and the writable store: knowledge.yml < KB_* < flags, clear errors."""

import logging

import pytest

from knowledge_build import load_config
from knowledge_build.config import store_target
from knowledge_build.errors import ConfigError


def test_crawl_settings_have_the_documented_defaults():
    config = load_config(env={})
    assert (config.max_pages, config.crawl_depth, config.crawl_delay, config.crawl_timeout,
            config.crawl_concurrency) == (500, 3, 1.0, 30.0, 4)
    assert config.respect_robots_txt is True and config.robots_ttl == 3600.0 and config.progress_interval == 5
    assert config.allow_hosts == () and config.debug_log == "off"


def test_crawl_settings_come_from_the_environment_and_flags_win():
    env = {"KB_MAX_PAGES": "7", "KB_CRAWL_DELAY": "0", "KB_RESPECT_ROBOTS_TXT": "false",
           "KB_ALLOW_HOSTS": "127.0.0.1:*, intranet.example", "KB_DEBUG_LOG": "true"}
    config = load_config(env=env, max_pages=3)
    assert config.max_pages == 3 and config.crawl_delay == 0.0 and config.respect_robots_txt is False
    assert config.allow_hosts == ("127.0.0.1:*", "intranet.example") and config.debug_log == "info"


@pytest.mark.parametrize("env, message", [
    ({"KB_MAX_PAGES": "0"}, "max_pages must be a positive integer"),
    ({"KB_CRAWL_DELAY": "-1"}, "crawl_delay must be a number of seconds, 0 or more"),
    ({"KB_CRAWL_TIMEOUT": "0"}, "crawl_timeout must be a positive number of seconds"),
    ({"KB_RESPECT_ROBOTS_TXT": "perhaps"}, "respect_robots_txt must be true or false"),
    ({"KB_DEBUG_LOG": "loud"}, "debug_log must be one of off, info, debug"),
])
def test_a_wrong_crawl_setting_is_an_error_naming_it(env, message):
    with pytest.raises(ConfigError, match=message):
        load_config(env=env)


def test_the_store_is_the_setting_else_the_database_else_the_notes_file(tmp_path):
    assert store_target(load_config(env={})) == ".knowledge-notes.sqlite"
    assert store_target(load_config(env={"KB_NOTES": str(tmp_path / "n.sqlite")})) == str(tmp_path / "n.sqlite")
    url = "postgresql://u@127.0.0.1/db"
    assert store_target(load_config(env={"KB_DATABASE_URL": url, "KB_NOTES": "x.sqlite"})) == url
    assert store_target(load_config(env={"KB_DATABASE_URL": url, "KB_STORE": "s.sqlite"})) == "s.sqlite"


def test_a_relative_store_in_knowledge_yml_is_relative_to_that_file(tmp_path):
    (tmp_path / "knowledge.yml").write_text("store: data/store.sqlite\nmax_pages: 9\n", encoding="utf-8")
    config = load_config(cwd=tmp_path, env={})
    assert store_target(config) == str(tmp_path / "data" / "store.sqlite") and config.max_pages == 9


def test_retrieval_log_says_query_scores_and_sources_and_previews_only_at_debug(caplog):
    from knowledge_build.serve import retrieval_log

    results = [{"id": "a#sec-x", "score": 0.734, "source": "web", "source_url": "https://example.com/p1",
                "text": "しれんのしろには以下のアイテムがあります" * 10}]
    with caplog.at_level(logging.INFO, logger="knowledge_build.retrieval"):
        retrieval_log.log_retrieval("しれんのしろ アイテム", results)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == 'retrieve: query="しれんのしろ アイテム" results=1'
    assert lines[1] == 'result 1: score=0.734 source="https://example.com/p1" id=a#sec-x'
    assert len(lines) == 2
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="knowledge_build.retrieval"):
        retrieval_log.log_retrieval("q", results)
    preview = caplog.records[-1].getMessage()
    assert preview.startswith('result 1 text: "しれんのしろ') and len(preview) <= len('result 1 text: ""') + 100


def test_retrieval_log_is_silent_when_off(caplog):
    from knowledge_build.serve import retrieval_log

    with caplog.at_level(logging.WARNING, logger="knowledge_build.retrieval"):
        retrieval_log.log_retrieval("q", [{"id": "x", "score": 1.0}])
    assert caplog.records == []
