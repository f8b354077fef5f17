"""The search box's gap log in the owner's database (issue 42, item 1; migration 013, store/functions/gaps.sql,
store/gaps_pg.py): the anonymous role may only call knowledge_report_gap, which keeps nothing unless the owner's
setting gap_log is on, keeps a question only when the words answer it weakly, counts the others, holds to a rate
limit and to the retention; and the box in Chromium, configured by the site's settings through its include, posts the
questions students settled on to a loopback stand-in for PostgREST, and nowhere else."""

import json
import os
import time
from datetime import date, timedelta

import psycopg
import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build.cli import main
from knowledge_build.store import gaps_pg

from .conftest import new_database
from .postgrest import KEY, PostgrestStandIn
from .served import box_site, running, serving

pytestmark = pytest.mark.db

OFF_TOPIC = "カレーに入れる玉ねぎの炒め方"  # nothing on the sample site is about cooking (its words still match some)
NO_WORDS = "犬の散歩"  # none of whose words the sample site has
ON_TOPIC = "たすき掛けによる因数分解"  # the box 因数分解#method-tasukigake
TABLES = ("knowledge_gaps", "knowledge_gap_answered", "knowledge_gap_settings", "knowledge_gap_rate")


def _configure(url: str, **settings) -> None:
    with psycopg.connect(url) as conn:
        gaps_pg.configure(conn, kb.load_config(env={}, **settings))


def _report(url: str, query: str, chosen: bool = False) -> bool:
    """knowledge_report_gap as the anonymous role calls it (`chosen`: the student opened a result)."""
    with psycopg.connect(url) as conn:
        conn.execute("set role anon")
        return conn.execute("select knowledge_report_gap(%s, %s)", (query, chosen)).fetchone()[0]


def _read(url: str):
    with psycopg.connect(url) as conn:
        return gaps_pg.read(conn)


def test_nothing_is_kept_unless_the_owner_turned_the_gap_log_on(published_db):
    assert _report(published_db, OFF_TOPIC) is False  # no settings row: published with no gap settings
    _configure(published_db, gap_log=False)
    assert _report(published_db, OFF_TOPIC) is False
    with psycopg.connect(published_db) as conn:
        for table in TABLES[:2] + TABLES[3:]:
            assert conn.execute(f"select count(*) from {table}").fetchone()[0] == 0, table


def test_the_anonymous_role_can_neither_read_nor_change_nor_delete_the_log(published_db):
    _configure(published_db, gap_log=True)
    assert _report(published_db, OFF_TOPIC) is True
    statements = [f"select * from {t}" for t in TABLES] + [f"delete from {t}" for t in TABLES] + \
        [f"truncate {t}" for t in TABLES] + ["update knowledge_gaps set query = 'x'",
                                             "update knowledge_gap_settings set enabled = false",
                                             "insert into knowledge_gaps (day, channel, query, best, results)"
                                             " values (current_date, 'box', 'x', 0, '[]')",
                                             "select nextval('knowledge_gaps_id_seq')"]
    for role in ("anon", "authenticated"):
        for statement in statements:
            with psycopg.connect(published_db) as conn:
                conn.execute(f"set role {role}")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement)
    rows, _, _ = _read(published_db)
    assert [r["query"] for r in rows] == [OFF_TOPIC]


def test_weak_questions_are_kept_answered_ones_counted_old_ones_go_and_the_rate_is_held(published_db):
    _configure(published_db, gap_log=True, gap_retention_days=30, gap_box_per_minute=5)
    old = (date.today() - timedelta(days=31)).isoformat()
    with psycopg.connect(published_db) as conn:
        conn.execute("insert into knowledge_gaps (day, channel, query, best, results) values (%s, 'box', 'old', 0, '[]')",
                     (old,))
        conn.execute("insert into knowledge_gap_answered (day, channel, count) values (%s, 'box', 7)", (old,))
    assert _report(published_db, NO_WORDS, chosen=True) is True  # a result opened, but the words do not answer it
    assert _report(published_db, ON_TOPIC, chosen=True) is False  # the words answer it and a result was opened
    rows, answered, dropped = _read(published_db)
    assert [r["query"] for r in rows] == [NO_WORDS] and answered == {"box": 1} and dropped == 0
    assert rows[0]["channel"] == "box" and rows[0]["day"] == date.today().isoformat() and rows[0]["best"] < 0.6
    assert set(rows[0]) == {"day", "channel", "query", "best", "results", "ref"}  # no user, client or address
    assert _report(published_db, ON_TOPIC) is True  # the student left its results without opening one
    assert _report(published_db, OFF_TOPIC) is True
    assert _report(published_db, OFF_TOPIC + "を") is True  # the fifth report of the minute
    sixth = _report(published_db, OFF_TOPIC + "が")  # over the limit: not kept, counted as dropped
    rows, _, dropped = _read(published_db)
    # A minute may turn between the calls: then the limit starts again and nothing is dropped. Rows: the
    # first, third, fourth and fifth reports.
    assert (sixth, len(rows), dropped) in ((False, 4, 1), (True, 5, 0))
    too_long = "あ" * 5000
    with psycopg.connect(published_db) as conn:
        conn.execute("set role anon")
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="the limit is"):
            conn.execute("select knowledge_report_gap(%s)", (too_long,))


@pytest.mark.model
def test_gaps_judges_the_boxs_questions_again_with_the_model_reports_them_and_forgets_them(
        published_db, fake_index_dir, real_index_dir, tmp_path, monkeypatch):
    """publish with gap_log on turns the box's log on; `gaps` judges each question the box sent with the model: the
    one the site answers after all is moved to the counts, the other reported; --forget empties the database."""
    monkeypatch.chdir(tmp_path)
    published = CliRunner().invoke(main, ["publish", "--index", str(fake_index_dir), "--database-url", published_db],
                                   env={"KB_GAP_LOG": "true"})
    assert published.exit_code == 0, published.output
    assert _report(published_db, OFF_TOPIC) is True and _report(published_db, ON_TOPIC) is True  # none opened
    shown = CliRunner().invoke(main, ["gaps", "--index", str(real_index_dir), "--database-url", published_db,
                                      "--format", "json"], env={})
    assert shown.exit_code == 0, shown.output
    report = json.loads(shown.stdout)
    assert report["questions"] == 1 and report["answered"] == {"box": 1} and report["dropped"] == 0
    rows, answered, _ = _read(published_db)
    assert [r["query"] for r in rows] == [OFF_TOPIC] and answered == {"box": 1}
    forgot = CliRunner().invoke(main, ["gaps", "--database-url", published_db, "--forget"])
    assert forgot.exit_code == 0 and "forgot 1 questions (the database's knowledge_gaps)" in forgot.output
    assert _read(published_db) == ([], {}, 0)
    off = CliRunner().invoke(main, ["publish", "--index", str(fake_index_dir), "--database-url", published_db],
                             env={"KB_GAP_LOG": "false"})
    assert off.exit_code == 0 and _report(published_db, OFF_TOPIC) is False


# --- the box in Chromium ----------------------------------------------------------------------------------------

TIMEOUT_MS = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000
BASEURL = "/math-note"
PAGE = f"{BASEURL}/junior/%E4%B8%80%E6%AC%A1%E6%96%B9%E7%A8%8B%E5%BC%8F.html"  # 一次方程式
INPUT = "input[role=combobox]"
RPC = "/rest/v1/rpc/knowledge_report_gap"


@pytest.fixture(scope="module")
def box_database(pg_server, published_template) -> str:
    """The sample site (fake vectors) published to a database of this module's, its gap log turned on."""
    url = new_database(pg_server["url"], prefix="kb_gapbox_", template=published_template)
    _configure(url, gap_log=True)
    return url


@pytest.fixture(scope="module")
def rest(box_database):
    with running(PostgrestStandIn(box_database)) as server:
        yield server


@pytest.fixture(scope="module")
def box_origin(rest, tmp_path_factory):
    """The sample site with the box, its _config.yml turning the gap report on (gap_log, gap_report_url: the
    stand-in, gap_report_key), built by jekyll (the include writes the attributes) and served on 127.0.0.1."""
    base = tmp_path_factory.mktemp("gap-box")
    site = box_site(base, f"  gap_log: true\n  gap_report_url: {rest.url}\n  gap_report_key: {KEY}\n")
    (base / "www").mkdir()
    (base / "www" / BASEURL.strip("/")).symlink_to(site, target_is_directory=True)
    with serving(base / "www") as origin:
        yield origin


def _type(tab, query: str) -> None:
    tab.locator(INPUT).click()
    tab.locator(INPUT).press("Control+a")
    tab.keyboard.type(query)
    tab.wait_for_function("(query) => document.querySelector('[role=listbox]').dataset.query === query", arg=query)


def _reports(rest, count: int) -> None:
    """Wait (bounded by KB_TEST_TIMEOUT) until the stand-in has had `count` reports."""
    deadline = TIMEOUT_MS / 1000
    waited = 0.0
    while sum(path == RPC for path in rest.requests) < count:
        assert waited < deadline, rest.requests
        time.sleep(0.05)
        waited += 0.05


@pytest.mark.browser
def test_the_box_reports_the_questions_students_settled_on_to_the_owners_database_only(browser, box_origin, rest,
                                                                                      box_database):
    """Opened result, by the words answered: counted. Left without opening one: kept. Typing does not report; each
    question once per page; every request goes to the site or to the configured database."""
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    requests = []
    tab.on("request", lambda request: requests.append(request.url))
    tab.goto(box_origin + PAGE, wait_until="load")
    assert tab.locator(".knowledge-search").get_attribute("data-gap-report") == rest.url
    _type(tab, ON_TOPIC)
    assert not any(path == RPC for path in rest.requests)  # typing, and the results shown, report nothing
    with tab.expect_navigation():
        tab.locator("[role=option] a").first.click()  # the student opens the first result
    _reports(rest, 1)
    tab.goto(box_origin + PAGE, wait_until="load")
    _type(tab, OFF_TOPIC)
    tab.locator(INPUT).press("Escape")  # closes the list: the student leaves the results
    _reports(rest, 2)
    tab.locator(INPUT).press("Escape")  # clears the field
    _type(tab, OFF_TOPIC)
    tab.locator(INPUT).press("Escape")  # the same question again on this page: not sent twice
    _type(tab, NO_WORDS)  # no result: the box says so, with no list to close
    tab.locator(INPUT).press("Escape")  # clearing the field leaves it
    _reports(rest, 3)
    _type(tab, "二次方程式")
    tab.locator("footer a").first.focus()  # focus leaves the box: the list closes
    _reports(rest, 4)
    context.close()
    assert sum(path == RPC for path in rest.requests) == 4
    rows, answered, dropped = _read(box_database)
    assert [r["query"] for r in rows] == [OFF_TOPIC, NO_WORDS, "二次方程式"] and answered == {"box": 1}
    assert dropped == 0
    assert all(r["channel"] == "box" for r in rows)
    assert [u for u in requests if not (u.startswith(box_origin + "/") or u == rest.url + RPC)] == [], requests
