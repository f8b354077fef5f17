"""Questions nobody answered (issue 42, items 1 and 2): the gap log keeps nothing unless the owner turns it on; then
it keeps the weakly answered questions (day, channel, text, results), counts the others, forgets on request and past
its retention; `knowledge-build gaps` groups them by meaning, the search box's (in the owner's database,
tests/test_gaps_box.py) with the others."""

import asyncio
import json
import sqlite3
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build.cli import main
from knowledge_build.store.gaps import GapLog, gap_hook

from .chat_server import ChatServer
from .conftest import FakeEmbedder

MARK = "ギャップ検査用の質問カレーの玉ねぎ"  # a question no page answers, found by its text wherever it is written
THEMES = Path(__file__).resolve().parents[1] / "data" / "eval" / "gap_themes.jsonl"


def _files_holding(root: Path, text: str) -> list[Path]:
    needle = text.encode("utf-8")
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def _tables_holding(url: str, text: str) -> list[str]:
    found = []
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute("select tablename from pg_tables where schemaname = 'public'")]
        for table in tables:
            if conn.execute(f'select 1 from "{table}" t where t::text like %s limit 1', (f"%{text}%",)).fetchone():
                found.append(table)
    return found


def _every_channel(config, output: Path, url: str, tmp_path: Path, monkeypatch) -> None:
    """MARK through MCP (the server serve() makes, its on_search), ask (a real chat server on loopback), the Slack
    channel's ask, search --database-url (the CLI) and the search box's report to the database."""
    from mcp import Client

    from knowledge_build.serve.answer import ask
    from knowledge_build.serve.mcp_server import create_server

    service = kb.SearchService(kb.KnowledgeIndex.open(output, embedder=FakeEmbedder()))
    server = create_server(service, kb.NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"), on_search=gap_hook(config)("mcp"))

    async def session():
        async with Client(server) as client:
            return await client.call_tool("search_knowledge", {"query": MARK})

    assert not asyncio.run(session()).is_error
    with ChatServer() as chat:
        chatting = kb.load_config(env={}, chat_base_url=chat.url, index=output, gap_log=config.gap_log,
                                  gap_log_file=config.gap_log_file)
        for channel in ("ask", "slack"):
            ask(MARK, chatting, index=service, channel=channel)
    searched = CliRunner().invoke(main, ["search", MARK, "--index", str(output), "--database-url", url],
                                  env={"KB_GAP_LOG": "true" if config.gap_log else "false",
                                       "KB_GAP_LOG_FILE": str(config.gap_log_file)})
    assert searched.exit_code == 0, searched.output
    # The search box's channel: publish writes the database's gap settings from gap_log, then the box's report, as
    # the stand-in for PostgREST runs it (tests/test_gaps_box.py: the box in Chromium).
    env = {"KB_GAP_LOG": "true" if config.gap_log else "false"}
    published = CliRunner().invoke(main, ["publish", "--index", str(output), "--database-url", url], env=env)
    assert published.exit_code == 0, published.output
    with psycopg.connect(url) as conn:
        conn.execute("set role anon")
        assert conn.execute("select knowledge_report_gap(%s, false)", (MARK,)).fetchone()[0] is config.gap_log


@pytest.mark.db
def test_with_the_setting_off_no_question_is_written_anywhere_and_on_only_the_gap_log_holds_it(
        published_db, fake_index_dir, fake_open, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "state" / "gaps.sqlite"
    log.parent.mkdir()
    off = kb.load_config(env={}, gap_log_file=log)
    assert off.gap_log is False  # the default
    _every_channel(off, fake_index_dir, published_db, tmp_path, monkeypatch)
    assert not log.exists()
    assert _files_holding(tmp_path, MARK) == [] and _tables_holding(published_db, MARK) == []
    on = kb.load_config(env={}, gap_log=True, gap_log_file=log)
    _every_channel(on, fake_index_dir, published_db, tmp_path, monkeypatch)
    assert _files_holding(tmp_path, MARK) == [log] and _tables_holding(published_db, MARK) == ["knowledge_gaps"]
    with GapLog(log) as gaps:
        assert Counter(r["channel"] for r in gaps.rows()) == {"mcp": 1, "ask": 1, "slack": 1, "search": 1}
        row = gaps.rows()[0]
    assert set(row) == {"day", "channel", "query", "best", "results"}  # no user, client or address
    assert row["day"] in {(date.today() + timedelta(days=d)).isoformat() for d in (-1, 0, 1)}  # a UTC day, no time
    assert all(set(r) == {"id", "relevance"} for r in row["results"])


def test_weak_questions_are_kept_answered_ones_counted_and_old_ones_go_on_the_next_write(tmp_path):
    path = tmp_path / "gaps.sqlite"
    today = date(2026, 11, 29)
    with GapLog(path, retention_days=90, day=today - timedelta(days=91)) as old:
        assert old.record("mcp", "古い質問", [("a#rule-x", 0.2)], weak=0.6)
    with GapLog(path, retention_days=90, day=today) as log:
        assert [r["query"] for r in log.rows()] == ["古い質問"]
        assert not log.record("ask", "答えられた質問", [("a#rule-x", 0.9), ("a#rule-y", 0.3)], weak=0.6)
        assert [r["query"] for r in log.rows()] == []  # the write removed the row past the retention
        assert log.record("ask", "弱い答え", [("a#rule-x", 0.55)], weak=0.6)
        assert log.record("box", "何もない", [], weak=0.6)
        assert [r["query"] for r in log.rows()] == ["弱い答え", "何もない"] and log.answered() == {"ask": 1}
        with pytest.raises(ValueError):
            log.record("email", "x", [], weak=0.6)
    forgot = CliRunner().invoke(main, ["gaps", "--forget", "--log", str(path)])
    assert forgot.exit_code == 0 and "forgot 2 questions" in forgot.output
    assert b"\xe5\xbc\xb1" not in path.read_bytes()  # 弱: the text left the file, not only the table
    with sqlite3.connect(path) as db:
        assert db.execute("select count(*) from gaps").fetchone() == (0,)


def test_gaps_without_a_log_says_how_to_turn_it_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["gaps"])
    assert result.exit_code == 1 and "no gap log" in result.output and "KB_GAP_LOG=true" in result.output


@pytest.fixture
def corpus_box(corpus_real_index, pg_server, tmp_path):
    """The reference corpus published to a database of its own with the gap log on, a loopback stand-in for PostgREST
    over it, and a page holding the search box (the set's bundle, its gap report pointed at the stand-in) served on
    127.0.0.1; yields (page URL, database URL, stand-in)."""
    from knowledge_build.store.postgres import connect, publish

    from .conftest import new_database
    from .postgrest import KEY, PostgrestStandIn
    from .served import running, serving

    url = new_database(pg_server["url"], prefix="kb_gapcorpus_")
    with connect(url) as conn:
        publish(conn, corpus_real_index, gap_settings=kb.load_config(env={}, gap_log=True, gap_box_per_minute=1000))
    www = tmp_path / "www"
    www.mkdir()
    (www / "set").symlink_to(corpus_real_index, target_is_directory=True)
    with running(PostgrestStandIn(url)) as rest:
        (www / "index.html").write_text(
            '<!DOCTYPE html><html lang="ja"><head><meta charset="utf-8"><title>box</title></head><body>'
            f'<div class="knowledge-search" data-bundle="/set/" data-gap-report="{rest.url}" data-gap-key="{KEY}">'
            '</div><script type="module" src="/set/knowledge-search-ui.js"></script></body></html>', encoding="utf-8")
        with serving(www) as origin:
            yield f"{origin}/index.html", url, rest


def _through_the_box(browser, page: str, asked: list[tuple[str, list[str]]], rest) -> None:
    """Each question typed into the box as a student would: when one of the results shown is an answer the set is
    labelled with (by its link's anchor), the student opens it (the page stays: the link's navigation is
    prevented, the box's own click handling is not); else they leave the results (Escape)."""
    from .test_gaps_box import RPC, TIMEOUT_MS, _reports, _type

    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    tab.goto(page, wait_until="load")
    tab.evaluate("document.addEventListener('click', (e) => { if (e.target.closest('a')) e.preventDefault(); }, true)")
    before = sum(path == RPC for path in rest.requests)
    for n, (query, relevant) in enumerate(asked, 1):
        _type(tab, query)
        anchors = tab.eval_on_selector_all("[role=option] a", "links => links.map(a => decodeURIComponent(new URL("
                                           "a.href).hash.slice(1)))")
        wanted = {r.split("#", 1)[1] for r in relevant}
        opened = next((i for i, anchor in enumerate(anchors) if anchor in wanted), None)
        if opened is None:
            tab.locator("input[role=combobox]").press("Escape")
        else:
            tab.locator("[role=option] a").nth(opened).click()
        _reports(rest, before + n)
        tab.locator("input[role=combobox]").press("Escape")  # the field cleared for the next one
    context.close()


@pytest.mark.model
@pytest.mark.corpus
@pytest.mark.db
@pytest.mark.browser
def test_gaps_groups_off_topic_questions_by_theme_and_shows_no_wording_asked_fewer_than_k_times(
        corpus_real_index, corpus_box, browser, dev_queries, tmp_path):
    """200 questions, a third each through MCP's and ask's hooks and through the search box in Chromium to the
    corpus's own database (the anonymous role, through the stand-in for PostgREST): 60 off the site's topics in 6
    themes (data/eval/gap_themes.jsonl, written before any was searched), 140 of the dev and own sets; one cooking
    question asked 3 times. `gaps` takes the file's questions and the database's, judges the box's again with the
    model, and groups them."""
    from knowledge_build.serve.gaps_report import group_wordings
    from knowledge_build.store import gaps_pg

    page, database, rest = corpus_box
    log = tmp_path / "gaps.sqlite"
    config = kb.load_config(env={}, gap_log=True, gap_log_file=log)
    index = kb.KnowledgeIndex.open(corpus_real_index)
    themes = [json.loads(line) for line in THEMES.read_text(encoding="utf-8").splitlines()]
    own = Path(__file__).resolve().parents[1] / "data" / "eval" / "corpus_queries.jsonl"
    labelled = [json.loads(line) for line in dev_queries.read_text(encoding="utf-8").splitlines()] + \
        [json.loads(line) for line in own.read_text(encoding="utf-8").splitlines()][:78]
    asked = [(t["query"], []) for t in themes] + [(q["query"], q["relevant"]) for q in labelled] + \
        [(themes[0]["query"], [])] * 2
    assert len(asked) == 200
    by_box = [item for i, item in enumerate(asked) if i % 3 == 2]
    for i, (query, _) in enumerate(asked):
        if i % 3 != 2:
            gap_hook(config)(("mcp", "ask")[i % 3])(query, index.search(query, k=5))
    _through_the_box(browser, page, by_box, rest)
    json_report = CliRunner().invoke(main, ["gaps", "--log", str(log), "--index", str(corpus_real_index),
                                            "--database-url", database, "--format", "json"])
    assert json_report.exit_code == 0, json_report.output
    report = json.loads(json_report.stdout)
    with GapLog(log) as gaps:
        rows = gaps.rows()
    with psycopg.connect(database) as conn:
        box_rows, box_answered, dropped = gaps_pg.read(conn)
    assert dropped == 0 and box_rows and box_answered.get("box")
    kept = {r["query"] for r in rows + box_rows}
    assert {t["query"] for t in themes} <= kept and sum(report["answered"].values()) >= 100
    assert report["questions"] == len(rows) + len(box_rows)
    theme_of = {t["query"]: t["theme"] for t in themes}
    recovered = []
    for theme in sorted(set(theme_of.values())):
        members = {q for q, t in theme_of.items() if t == theme}
        for group in group_wordings(sorted(kept), index.embedder):
            inside = members & set(group)
            if len(inside) >= 0.6 * len(members) and len(inside) >= 0.6 * len(group):
                recovered.append(theme)
    assert len(recovered) >= 5, recovered
    shown = [w for g in report["groups"] for w in g["wordings"]]
    assert shown == [{"wording": themes[0]["query"], "times": 3}]  # the only one asked 3 times
    assert sum(g["count"] for g in report["groups"]) == report["questions"]
    assert all(g["todo"]["say"] and g["nearest"] for g in report["groups"])
    out = tmp_path / "reports" / "gaps.html"
    written = CliRunner().invoke(main, ["gaps", "--log", str(log), "--index", str(corpus_real_index),
                                        "--database-url", database, "--out", str(out)])
    assert written.exit_code == 0 and f"groups of {report['questions']} questions" in written.output, written.output
    page_text = out.read_text(encoding="utf-8")
    assert f"「{themes[0]['query']}」 ×3" in page_text and themes[1]["query"] not in page_text
