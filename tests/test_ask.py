"""`ask` (issue 15): grounded answers from the site and the web sources through a real
OpenAI-compatible chat server on loopback (tests/chat_server.py), which records the prompt it got."""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build.cli import main
from knowledge_build.ranking.settings import SearchSettings
from knowledge_build.serve.answer import NOTE_DISABLED, NOTE_NOTHING, ChatFailed, format_answer
from knowledge_build.store.sources import SourceStore
from knowledge_build.web.chunk import WebChunk

from .chat_server import ChatServer
from .conftest import FakeEmbedder
from .test_site_identity import MATH_SITE, with_site

OFF_TOPIC = "今日の天気とサッカーの試合結果"
CRAWLED = "2026-11-01T10:00:00+00:00"
MONSTERS = "https://games.example/monsters"


@pytest.fixture
def chat():
    with ChatServer() as server:
        yield server


@pytest.fixture(scope="module")
def index(fake_index_dir):
    return kb.KnowledgeIndex.open(fake_index_dir, FakeEmbedder())


def _config(chat, fake_index_dir, **settings):
    """The fake embedder's relevance is ~0 for every box, so the on-topic tests count every result."""
    settings.setdefault("relevance_threshold", 0.0)
    return kb.load_config(env={}, chat_base_url=chat.url, index=fake_index_dir, **settings)


def _expected_urls(index, question, k):
    results = index.search(question, k=k, min_relevance=0.0)
    return list(dict.fromkeys(r.absolute_url or r.url for r in results)), results


def _monster_store(path, settings=None):
    """A store holding one web page: a table cut into three chunks that share the page's #table URL."""
    store = SourceStore(FakeEmbedder(), path, settings=settings)
    rows = [("フシギダネ", "くさ"), ("ヒトカゲ", "ほのお"), ("ゼニガメ", "みず"), ("ピカチュウ", "でんき"),
            ("コダック", "みず"), ("ロコン", "ほのお")]
    chunks = [WebChunk(MONSTERS, f"{MONSTERS}#table", "モンスター図鑑", "初期モンスター", ("図鑑",), "table",
                       "名前 | タイプ\n" + "\n".join(f"{n} | {t}" for n, t in rows[i:i + 2]), i // 2, CRAWLED)
              for i in range(0, len(rows), 2)]
    store.replace_source(MONSTERS, "モンスター図鑑", chunks)
    return store


def test_the_prompt_holds_the_retrieved_boxes_and_sources_are_their_urls_in_rank_order(chat, index, fake_index_dir):
    answer = kb.ask("たすきがけで因数分解する方法", _config(chat, fake_index_dir, retrieval_count=3), index=index)
    urls, results = _expected_urls(index, "たすきがけで因数分解する方法", 3)
    assert len(chat.requests) == 1
    prompt = chat.requests[0]["messages"][0]["content"]
    for result in results:
        assert result.title in prompt and f"URL: {result.absolute_url or result.url}" in prompt
    assert "因数分解#method-tasukigake" in [r.id for r in results]
    assert chat.requests[0]["messages"][-1] == {"role": "user", "content": "たすきがけで因数分解する方法"}
    assert answer.context_used and answer.note is None
    assert answer.sources == urls
    assert [r["url"] for r in answer.retrieval] == urls and [r["rank"] for r in answer.retrieval] == [1, 2, 3]
    assert all(r["source"] == "site" and "relevance" in r for r in answer.retrieval)
    assert all(url in answer.answer for url in urls)  # the server answered from the context it was sent


def test_the_context_holds_each_boxs_learns_and_text(chat, index, fake_index_dir):
    kb.ask("解の公式", _config(chat, fake_index_dir, retrieval_count=1), index=index)
    top = index.get(index.search("解の公式", k=1)[0].id)
    prompt = chat.last_prompt
    assert top.content[:200] in prompt
    assert all(item in prompt for item in top.learns)


def test_web_chunks_sharing_a_url_are_one_place_in_one_context_block_mixed_with_the_site(chat, index, fake_index_dir,
                                                                                          tmp_path):
    store = _monster_store(tmp_path / "store.sqlite")
    try:
        answer = kb.ask("ピカチュウ コダック ロコン タイプ", _config(chat, fake_index_dir, retrieval_count=6),
                        index=index, sources=store)
    finally:
        store.close()
    web = [r for r in answer.retrieval if r["source"] == "web"]
    assert len(web) == 1 and web[0]["url"] == f"{MONSTERS}#table"
    assert "similarity" in web[0] and "relevance" in web[0]
    assert answer.sources.count(f"{MONSTERS}#table") == 1
    assert answer.sources == list(dict.fromkeys(r["url"] for r in answer.retrieval))
    assert any(r["source"] == "site" for r in answer.retrieval)  # RRF mixes both lists
    prompt = chat.last_prompt
    assert prompt.count(f"URL: {MONSTERS}#table") == 1
    block = prompt.split(f"URL: {MONSTERS}#table")[1].split("\n\n[")[0]  # the place's block, up to the next
    assert all(row in block for row in ("フシギダネ | くさ", "ピカチュウ | でんき", "ロコン | ほのお"))


def test_a_similarity_threshold_keeps_weak_web_chunks_out_of_the_context(chat, index, fake_index_dir, tmp_path):
    store = _monster_store(tmp_path / "store.sqlite")
    try:
        answer = kb.ask("ピカチュウ", _config(chat, fake_index_dir, similarity_threshold=0.99), index=index,
                        sources=store)
    finally:
        store.close()
    assert answer.retrieval and not [r for r in answer.retrieval if r["source"] == "web"]
    assert MONSTERS not in chat.last_prompt


def test_an_unreadable_store_leaves_the_site_answering_with_a_warning(chat, index, fake_index_dir, tmp_path, caplog):
    (tmp_path / "broken.sqlite").write_text("not a database", encoding="utf-8")
    config = _config(chat, fake_index_dir, store=str(tmp_path / "broken.sqlite"))
    with caplog.at_level(logging.WARNING, logger="knowledge_build.answer"):
        answer = kb.ask("たすきがけ", config, index=index)
    assert answer.context_used and all(r["source"] == "site" for r in answer.retrieval)
    assert "the web sources were not searched (cannot open the sources store" in caplog.text
    assert (tmp_path / "broken.sqlite").read_text(encoding="utf-8") == "not a database"


def test_with_rag_disabled_the_model_is_asked_without_context_and_the_answer_says_so(chat, index, fake_index_dir):
    answer = kb.ask("たすきがけ", _config(chat, fake_index_dir, rag_enabled=False), index=index)
    assert "URL:" not in chat.last_prompt and "たすきがけ" in chat.last_prompt
    assert not answer.context_used and answer.sources == [] and answer.retrieval == []
    assert answer.note == NOTE_DISABLED == "retrieval disabled (rag_enabled: false)"
    text = format_answer(answer)
    assert NOTE_DISABLED in text and "参照元:" not in text



def _system(chat) -> str:
    return chat.requests[-1]["messages"][0]["content"]


def test_the_system_prompt_names_the_site_its_manifest_names(chat, fake_index_dir, tmp_path):
    named = with_site(fake_index_dir, tmp_path / "v2", name="Rust 入門", description="所有権から学ぶ講座", lang="ja")
    answer = kb.ask("所有権とは", _config(chat, named), index=kb.KnowledgeIndex.open(named, FakeEmbedder()))
    assert answer.context_used
    assert _system(chat).startswith("あなたは『Rust 入門』（所有権から学ぶ講座）の案内役です。")
    assert MATH_SITE not in _system(chat)


def test_the_site_settings_win_over_the_manifest_even_when_no_index_is_opened(chat, fake_index_dir, tmp_path):
    named = with_site(fake_index_dir, tmp_path / "v2", name="Rust 入門", description="講座", lang="ja")
    kb.ask("所有権とは", _config(chat, named, rag_enabled=False, site_name="化学ノート"))
    assert _system(chat).startswith("あなたは『化学ノート』（講座）の案内役です。")


def test_an_english_site_is_asked_in_english(chat, fake_index_dir, tmp_path):
    named = with_site(fake_index_dir, tmp_path / "v2", name="Widget Docs", description=None, lang="en")
    kb.ask("what is a widget", _config(chat, named), index=kb.KnowledgeIndex.open(named, FakeEmbedder()))
    assert _system(chat).startswith("You are the guide to “Widget Docs”. Answer briefly and accurately")
    assert "\n\nSources:\n[1] " in _system(chat) and "資料" not in _system(chat)


def test_an_off_topic_question_is_answered_without_context_and_says_so(chat, index, fake_index_dir):
    config = kb.load_config(env={}, chat_base_url=chat.url, index=fake_index_dir)  # relevance_threshold 0.5
    assert config.relevance_threshold == 0.5
    answer = kb.ask(OFF_TOPIC, config, index=index)
    assert index.search(OFF_TOPIC, k=5)  # there were results, none relevant enough
    assert not answer.context_used and answer.note == NOTE_NOTHING and answer.sources == []
    assert "URL:" not in chat.last_prompt
    assert "nothing relevant found" in format_answer(answer)


# The fake embedder's cosines say nothing of topic: with the cosine's slope at 0, the lexical coverage
# decides relevance (the site's against its index, the web's against the store), as it does for a
# question the real model reads poorly.
COVERAGE_ONLY = SearchSettings(relevance_cosine_slope=0.0)


@pytest.fixture
def by_coverage(fake_index_dir, tmp_path):
    store = _monster_store(tmp_path / "store.sqlite", COVERAGE_ONLY)
    yield kb.KnowledgeIndex.open(fake_index_dir, FakeEmbedder(), settings=COVERAGE_ONLY), store
    store.close()


def test_an_off_topic_question_gets_neither_site_nor_web_context_and_the_model_is_told(chat, fake_index_dir,
                                                                                         by_coverage):
    index, store = by_coverage
    assert index.search(OFF_TOPIC, k=5) and store.query(OFF_TOPIC, k=5)  # both had results, none relevant
    config = kb.load_config(env={}, chat_base_url=chat.url, index=fake_index_dir)
    answer = kb.ask(OFF_TOPIC, config, index=index, sources=store)
    assert not answer.context_used and answer.note == NOTE_NOTHING and answer.retrieval == []
    assert "URL:" not in chat.last_prompt and MONSTERS not in chat.last_prompt
    assert "関連する内容が見つかりませんでした（nothing relevant found）" in _system(chat)
    assert "nothing relevant found" in format_answer(answer)


def test_an_on_topic_question_keeps_its_relevant_site_and_web_context(chat, fake_index_dir, by_coverage):
    index, store = by_coverage
    config = kb.load_config(env={}, chat_base_url=chat.url, index=fake_index_dir)
    web = kb.ask("ピカチュウのタイプ", config, index=index, sources=store)
    assert web.context_used and f"URL: {MONSTERS}#table" in chat.last_prompt
    assert [r["source"] for r in web.retrieval if r["relevance"] >= 0.5] == [r["source"] for r in web.retrieval]
    assert "web" in [r["source"] for r in web.retrieval]
    site = kb.ask("判別式で解の個数を調べる", config, index=index, sources=store)
    assert site.context_used and [r["source"] for r in site.retrieval] == ["site"] * len(site.retrieval)
    assert MONSTERS not in chat.last_prompt
    assert all(r["relevance"] >= 0.5 for r in site.retrieval)


def test_retrieval_failing_answers_without_context_and_says_why(chat, tmp_path):
    config = kb.load_config(env={}, chat_base_url=chat.url, index=tmp_path / "missing" / "v1")
    answer = kb.ask("たすきがけ", config)
    assert not answer.context_used and answer.note.startswith("retrieval failed: no artifact set at")
    assert len(chat.requests) == 1 and "URL:" not in chat.last_prompt
    assert answer.note in format_answer(answer)


def test_a_chat_server_answering_500_raises_chat_failed_with_the_url_and_a_fix(index, fake_index_dir):
    with ChatServer(mode="error", status=500) as chat, pytest.raises(ChatFailed) as caught:
        kb.ask("たすきがけ", _config(chat, fake_index_dir), index=index)
    message = str(caught.value)
    assert message.startswith(f"the chat model at {chat.url}/ failed: HTTP 500 (the model crashed)")
    assert "Fix:" in message


def test_a_chat_server_past_the_timeout_raises_chat_failed(index, fake_index_dir):
    with ChatServer(mode="slow", delay=60) as chat, pytest.raises(ChatFailed) as caught:
        kb.ask("たすきがけ", _config(chat, fake_index_dir, chat_timeout=0.5), index=index)
    assert "did not answer within 0.5 s" in str(caught.value) and "chat_timeout" in str(caught.value)


def test_a_chat_server_nobody_listens_on_raises_chat_failed(index, fake_index_dir):
    with ChatServer() as chat:
        config = _config(chat, fake_index_dir)
    with pytest.raises(ChatFailed, match=r"cannot be reached .* Fix: start the server"):
        kb.ask("たすきがけ", config, index=index)


def test_without_an_api_key_or_a_chat_server_nothing_is_retrieved_and_the_fix_is_named(index, fake_index_dir):
    config = kb.load_config(env={}, index=fake_index_dir)
    with pytest.raises(ChatFailed, match="OPENAI_API_KEY is not set.*--chat-base-url"):
        kb.ask("たすきがけ", config, index=index)


def test_an_empty_question_is_refused(chat, index, fake_index_dir):
    with pytest.raises(kb.KnowledgeBuildError, match="the question is empty"):
        kb.ask("  ", _config(chat, fake_index_dir), index=index)
    assert chat.requests == []


def test_the_retrieval_is_logged_with_each_results_score(chat, index, fake_index_dir):
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    logger = logging.getLogger("knowledge_build.retrieval")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        answer = kb.ask("判別式", _config(chat, fake_index_dir, retrieval_count=2), index=index)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    lines = [r.getMessage() for r in records]
    assert lines[0] == 'retrieve: query="判別式" results=2'
    assert [line.split(" id=")[1] for line in lines[1:]] == [r["id"] for r in answer.retrieval]


def test_format_answer_lists_the_sources_after_the_answer_in_the_seeds_format():
    answer = kb.Answer("答えです。", ["https://a.example/x#1", "https://a.example/y#2"], True, [])
    assert format_answer(answer) == "答えです。\n\n---\n参照元:\n• https://a.example/x#1\n• https://a.example/y#2"
    assert format_answer(answer, show_sources=False) == "答えです。"
    assert answer.to_dict() == {"answer": "答えです。", "sources": ["https://a.example/x#1", "https://a.example/y#2"],
                                "context_used": True, "retrieval": [], "note": None}


# the settings ----------------------------------------------------------------------------------

def test_the_ask_settings_have_their_defaults_and_read_the_environment():
    config = kb.load_config(env={})
    assert (config.rag_enabled, config.retrieval_count, config.relevance_threshold, config.similarity_threshold,
            config.show_sources, config.chat_timeout) == (True, 5, 0.5, None, True, 60.0)
    config = kb.load_config(env={"KB_RAG_ENABLED": "false", "KB_RETRIEVAL_COUNT": "3", "KB_RELEVANCE_THRESHOLD": "0.2",
                                 "KB_SIMILARITY_THRESHOLD": "0.7", "KB_SHOW_SOURCES": "no", "KB_CHAT_TIMEOUT": "5"})
    assert (config.rag_enabled, config.retrieval_count, config.relevance_threshold, config.similarity_threshold,
            config.show_sources, config.chat_timeout) == (False, 3, 0.2, 0.7, False, 5.0)


@pytest.mark.parametrize("name, value, expected", [
    ("KB_RETRIEVAL_COUNT", "0", "retrieval_count must be a positive integer"),
    ("KB_RELEVANCE_THRESHOLD", "1.5", "relevance_threshold must be a number from 0 to 1"),
    ("KB_SIMILARITY_THRESHOLD", "high", "similarity_threshold must be a number from 0 to 1"),
    ("KB_RAG_ENABLED", "maybe", "rag_enabled must be true or false"),
    ("KB_CHAT_TIMEOUT", "-1", "chat_timeout must be a positive number of seconds"),
])
def test_a_bad_ask_setting_is_a_config_error_naming_it(name, value, expected):
    with pytest.raises(kb.ConfigError, match=expected):
        kb.load_config(env={name: value})


# the command -----------------------------------------------------------------------------------

def _run(*args, env=None):
    return CliRunner().invoke(main, ["ask", *args], env={"KB_RELEVANCE_THRESHOLD": "0", **(env or {})})


def test_cli_ask_prints_the_answer_then_its_sources(chat, fake_index_dir, fake_open):
    result = _run("判別式とは", "--index", str(fake_index_dir), "--chat-base-url", chat.url, "-k", "2")
    assert result.exit_code == 0, result.output
    answer, sources = result.output.rstrip("\n").split("\n\n---\n参照元:\n")
    assert answer.startswith("「判別式とは」への回答です。")
    listed = [line.removeprefix("• ") for line in sources.splitlines()]
    assert len(listed) == 2 and all(f"URL: {url}" in chat.last_prompt for url in listed)
    assert chat.requests[0]["model"] == "gpt-4o-mini"


def test_cli_ask_no_sources_and_chat_model(chat, fake_index_dir, fake_open):
    result = _run("判別式とは", "--index", str(fake_index_dir), "--chat-base-url", chat.url, "--no-sources",
                  "--chat-model", "local-chat")
    assert result.exit_code == 0, result.output
    assert "参照元" not in result.output and chat.requests[0]["model"] == "local-chat"



def test_cli_ask_takes_the_site_description_from_the_environment(chat, fake_index_dir, fake_open):
    result = _run("判別式とは", "--index", str(fake_index_dir), "--chat-base-url", chat.url,
                  env={"KB_SITE_NAME": "数学ノート", "KB_SITE_DESCRIPTION": "中学・高校数学の教材サイト"})
    assert result.exit_code == 0, result.output
    assert _system(chat).startswith("あなたは『数学ノート』（中学・高校数学の教材サイト）の案内役です。")


def test_cli_ask_format_json_has_the_answer_sources_context_and_retrieval(chat, fake_index_dir, fake_open):
    result = _run("一次関数の傾き", "--index", str(fake_index_dir), "--format", "json", "-k", "3",
                  env={"KB_CHAT_BASE_URL": chat.url})
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"answer", "sources", "context_used", "retrieval", "note"}
    assert data["context_used"] is True and data["note"] is None and len(data["retrieval"]) == 3
    assert set(data["retrieval"][0]) == {"rank", "id", "title", "url", "source", "relevance", "score"}
    assert data["sources"] == list(dict.fromkeys(r["url"] for r in data["retrieval"]))


def test_cli_ask_reads_web_sources_from_the_store(chat, fake_index_dir, fake_open, tmp_path):
    _monster_store(tmp_path / "web.sqlite").close()
    result = _run("ピカチュウ コダック タイプ", "--index", str(fake_index_dir), "--store", str(tmp_path / "web.sqlite"),
                  "--chat-base-url", chat.url, "--format", "json")
    assert result.exit_code == 0, result.output
    assert f"{MONSTERS}#table" in json.loads(result.output)["sources"]


def test_cli_ask_does_not_create_a_store_that_does_not_exist(chat, fake_index_dir, fake_open, tmp_path):
    result = _run("たすきがけ", "--index", str(fake_index_dir), "--chat-base-url", chat.url)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / ".knowledge-notes.sqlite").exists()


@pytest.mark.parametrize("mode, expected", [("error", "failed: HTTP 500"), ("slow", "did not answer within 0.5 s"),
                                            ("not-json", "answered HTTP 200 with a body that is not JSON")])
def test_cli_ask_reports_a_failing_chat_model_in_one_line_with_exit_1(fake_index_dir, fake_open, mode, expected):
    with ChatServer(mode=mode, delay=60) as chat:
        result = _run("たすきがけ", "--index", str(fake_index_dir), "--chat-base-url", chat.url,
                      env={"KB_CHAT_TIMEOUT": "0.5"})
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: the chat model at {chat.url}/ ") and expected in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_cli_ask_with_an_empty_question_is_a_usage_error(fake_index_dir):
    result = _run("  ", "--index", str(fake_index_dir))
    assert result.exit_code == 2 and "the question is empty" in result.output


# the real model (issue 15's must-show) ----------------------------------------------------------

QUESTIONS = [
    ("二次方程式の解の公式を教えて", "二次方程式#rule-quadratic-formula"),
    ("たすきがけで因数分解するには？", "因数分解#method-tasukigake"),
    ("判別式で解の個数を調べる方法", "二次方程式#rule-discriminant"),
    ("一次関数の傾きってなに？", "一次関数#def-slope"),
    ("平方根とは何ですか", "平方根#def-square-root"),
]


@pytest.mark.model
def test_with_the_real_model_the_prompt_holds_the_right_box_for_five_questions(real_index, real_index_dir):
    with ChatServer() as chat:
        config = kb.load_config(env={}, chat_base_url=chat.url, index=real_index_dir)
        for question, box in QUESTIONS:
            answer = kb.ask(question, config, index=real_index)
            chunk = real_index.get(box)
            url = real_index.absolute_url(chunk.url) or chunk.url
            assert f"URL: {url}" in chat.last_prompt, (question, answer.retrieval)
            assert chunk.title in chat.last_prompt and url in answer.sources and url in answer.answer
            assert answer.sources == list(dict.fromkeys(r["url"] for r in answer.retrieval))
        off_topic = kb.ask(OFF_TOPIC, config, index=real_index)
    assert not off_topic.context_used and off_topic.note == NOTE_NOTHING
    assert len(chat.requests) == len(QUESTIONS) + 1


@pytest.mark.model
def test_with_the_real_model_web_context_is_given_only_when_relevant(real_index, real_index_dir, tmp_path):
    with SourceStore(real_index.embedder, tmp_path / "store.sqlite") as store, ChatServer() as chat:
        rows = [("フシギダネ", "くさ"), ("ヒトカゲ", "ほのお"), ("ピカチュウ", "でんき"), ("コダック", "みず")]
        store.replace_source(MONSTERS, "モンスター図鑑", [WebChunk(
            MONSTERS, f"{MONSTERS}#table", "モンスター図鑑", "初期モンスターのタイプ", (), "table",
            "名前 | タイプ\n" + "\n".join(f"{n} | {t}" for n, t in rows[i:i + 2]), i // 2, CRAWLED)
            for i in range(0, len(rows), 2)])
        config = kb.load_config(env={}, chat_base_url=chat.url, index=real_index_dir)
        assert store.query(OFF_TOPIC)  # the store answers; relevance keeps it out
        off_topic = kb.ask(OFF_TOPIC, config, index=real_index, sources=store)
        assert not off_topic.context_used and MONSTERS not in chat.last_prompt
        on_topic = kb.ask("ピカチュウのタイプ", config, index=real_index, sources=store)
        assert on_topic.context_used and f"URL: {MONSTERS}#table" in chat.last_prompt
        assert "ピカチュウ | でんき" in chat.last_prompt
