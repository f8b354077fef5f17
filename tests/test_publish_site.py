"""`publish` never silently replaces another site's chunks (issue 37, finding 3): a set of another
site is refused, naming both, with the table untouched, unless `--replace`; a rebuild of the same site
(new build id, changed chunks, even a new title) publishes as before."""

import json
import shutil

import psycopg
import pytest
from click.testing import CliRunner

from knowledge_build import build, load_config
from knowledge_build.cli import main

from .conftest import SITE, FakeEmbedder

pytestmark = pytest.mark.db

MATH_NOTE = "“数学ノート” (https://example.github.io/math-note)"
QUEST = "“数学クエスト” (https://quest.example.org/quest)"


def _copy(tmp_path, name):
    root = tmp_path / name
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    return root


def _config(root, **replace):
    config = root / "_config.yml"
    text = config.read_text(encoding="utf-8")
    for old, new in replace.items():
        old = {"title": "title: 数学ノート", "url": 'url: "https://example.github.io"',
               "baseurl": 'baseurl: "/math-note"'}[old]
        assert old in text
        text = text.replace(old, new)
    config.write_text(text, encoding="utf-8")


def _build(tmp_path, root):
    return build(load_config(site=root, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder()).output


def _our_site(tmp_path, name="site", edit=None):
    root = _copy(tmp_path, name)
    if edit:
        edit(root)
    return _build(tmp_path, root)


def _other_site(tmp_path, name="quest", address=True):
    """Another site: one page of its own (no chunk id in common with the sample site), its own title
    and its own url and baseurl (`address` False: none)."""
    root = _copy(tmp_path, name)
    shutil.rmtree(root / "senior")
    for page in (root / "junior").iterdir():
        if page.name != "平方根.html":
            page.unlink()
    (root / "junior" / "平方根.html").rename(root / "junior" / "平方根の教材.html")
    _config(root, title="title: 数学クエスト",
            **({"url": 'url: "https://quest.example.org"', "baseurl": 'baseurl: "/quest"'} if address else
               {"url": "", "baseurl": ""}))
    return _build(tmp_path, root)


def _publish(index, url, *options):
    return CliRunner().invoke(main, ["publish", "--index", str(index), "--database-url", url, *options])


def _state(url):
    with psycopg.connect(url) as conn:
        rows = dict(conn.execute("select id, fingerprint from knowledge_chunks").fetchall())
        meta = dict(conn.execute("select key, value from knowledge_meta").fetchall())
    return rows, meta


def _build_id(index):
    return json.loads((index / "manifest.json").read_text(encoding="utf-8"))["build_id"]


def test_another_sites_set_is_refused_naming_both_and_the_table_keeps_its_rows(tmp_path, fresh_db):
    ours, theirs = _our_site(tmp_path), _other_site(tmp_path)
    assert _publish(ours, fresh_db).exit_code == 0
    before = _state(fresh_db)
    assert len(before[0]) == 171

    refused = _publish(theirs, fresh_db)
    assert refused.exit_code == 1 and refused.stdout == ""
    line = refused.stderr.strip()
    assert "\n" not in line and "Traceback" not in refused.output
    assert line == (f"Error: the database holds another site: {MATH_NOTE}, 171 chunks; this artifact set is "
                    f"{QUEST}. Publishing it would delete those chunks. Fix: publish to the database of "
                    "“数学クエスト”, or pass --replace to replace “数学ノート” with it.")
    assert _state(fresh_db) == before

    dry = _publish(theirs, fresh_db, "--dry-run")
    assert dry.exit_code == 1 and dry.stderr.strip() == line
    assert "Would publish" in dry.stdout and "171 deleted" in dry.stdout  # what --replace would do
    as_json = _publish(theirs, fresh_db, "--dry-run", "--format", "json")
    assert as_json.exit_code == 1
    plan = json.loads(as_json.stdout)
    assert plan["refused"] == line.removeprefix("Error: ") and plan["dry_run"] is True
    assert plan["site"] == {"name": "数学クエスト", "url": "https://quest.example.org", "baseurl": "/quest"}
    assert plan["database_site"] == {"name": "数学ノート", "url": "https://example.github.io",
                                     "baseurl": "/math-note"}
    not_dry = _publish(theirs, fresh_db, "--format", "json")
    assert not_dry.exit_code == 1 and json.loads(not_dry.stdout)["refused"] == plan["refused"]
    assert _state(fresh_db) == before

    replaced = _publish(theirs, fresh_db, "--replace")
    assert replaced.exit_code == 0, replaced.output
    assert "15 new, 0 changed, 171 deleted, 0 unchanged" in replaced.stdout
    rows, meta = _state(fresh_db)
    assert len(rows) == 15 and all(i.startswith("平方根の教材#") for i in rows)
    assert meta["build_id"] == _build_id(theirs)
    assert json.loads(meta["site"]) == plan["site"]
    # from now on the database holds 数学クエスト: publishing it again needs nothing, the first site is refused
    assert _publish(theirs, fresh_db).exit_code == 0
    assert f"another site: {QUEST}, 15 chunks;" in _publish(ours, fresh_db).stderr


def test_a_rebuild_of_the_same_site_publishes_without_replace(tmp_path, fresh_db):
    first = _our_site(tmp_path)
    assert _publish(first, fresh_db).exit_code == 0

    def edit(root):  # a new title, one page gone, a box changed: the site's address stays
        _config(root, title="title: 数学ノート 改訂版")
        (root / "junior" / "平方根.html").unlink()
        page = root / "junior" / "一次方程式.html"
        page.write_text(page.read_text(encoding="utf-8").replace("<strong>📌 移項</strong>",
                                                                "<strong>📌 移項の規則</strong>"), encoding="utf-8")

    second = _our_site(tmp_path, "site2", edit)
    assert _build_id(second) != _build_id(first)
    dry = _publish(second, fresh_db, "--dry-run", "--format", "json")
    assert dry.exit_code == 0 and json.loads(dry.stdout)["refused"] is None
    result = _publish(second, fresh_db)
    assert result.exit_code == 0, result.output
    rows, meta = _state(fresh_db)
    assert meta["build_id"] == _build_id(second) and not any(i.startswith("平方根#") for i in rows)
    assert json.loads(meta["site"])["name"] == "数学ノート 改訂版"


def test_a_database_published_before_sites_were_recorded_is_judged_by_its_chunk_ids(tmp_path, fresh_db):
    ours, theirs = _our_site(tmp_path), _other_site(tmp_path)
    assert _publish(ours, fresh_db).exit_code == 0
    with psycopg.connect(fresh_db) as conn:  # what a publish before this change left: no site recorded
        conn.execute("delete from knowledge_meta where key = 'site'")
    before = _state(fresh_db)

    refused = _publish(theirs, fresh_db)
    assert refused.exit_code == 1 and _state(fresh_db) == before
    assert refused.stderr.startswith("Error: the database holds another site: one published before sites were "
                                     "recorded, 171 chunks on 10 pages (一次方程式, 一次関数, 三平方の定理, …)")
    assert (f"; this artifact set is {QUEST}. Publishing it would delete those chunks. Fix: publish to the database"
            " of “数学クエスト”, or pass --replace to replace the site published there with it.") in refused.stderr

    again = _publish(_our_site(tmp_path, "site2", lambda root: _config(root, title="title: 数学ノート 2")), fresh_db)
    assert again.exit_code == 0, again.output
    assert json.loads(_state(fresh_db)[1]["site"])["name"] == "数学ノート 2"


def test_sites_without_an_address_are_told_apart_by_their_chunk_ids(tmp_path, fresh_db):
    def no_address(root):
        _config(root, url="", baseurl="")

    ours = _our_site(tmp_path, edit=no_address)
    assert _publish(ours, fresh_db).exit_code == 0
    theirs = _other_site(tmp_path, address=False)
    assert json.loads((theirs / "manifest.json").read_text())["site"]["url"] == ""
    refused = _publish(theirs, fresh_db)
    assert refused.exit_code == 1
    assert ("another site: “数学ノート” (no url or baseurl), 171 chunks; this artifact set is “数学クエスト” (no url or "
            "baseurl).") in refused.stderr
    rebuilt = _our_site(tmp_path, "site2", lambda root: (no_address(root), (root / "junior" / "平方根.html").unlink()))
    assert _publish(rebuilt, fresh_db).exit_code == 0


@pytest.mark.parametrize(("held", "incoming", "same"), [
    ({"url": "https://a.example", "baseurl": "/docs"}, {"url": "HTTPS://A.example/", "baseurl": "docs/"}, True),
    ({"url": "https://a.example", "baseurl": "/docs"}, {"url": "https://a.example", "baseurl": "/blog"}, False),
    ({"url": "https://a.example", "baseurl": "/docs"}, {"url": "https://b.example", "baseurl": "/docs"}, False),
    ({"url": "", "baseurl": "/docs"}, {"url": "https://a.example", "baseurl": "/docs"}, True),  # a url added
    ({"url": "", "baseurl": ""}, {"url": "https://a.example", "baseurl": None}, None),  # the chunk ids decide
    ({"url": "https://a.example", "baseurl": ""}, {"url": "https://a.example", "baseurl": "/"}, True),
    ({"url": 7, "baseurl": ["x"]}, {"url": "http://[::1", "baseurl": ""}, None),  # garbage is no address
])
def test_a_site_is_its_baseurl_and_its_url_when_both_record_one(held, incoming, same):
    from knowledge_build.store.published_site import PublishedSite

    assert PublishedSite.from_dict(held).same_as(PublishedSite.from_dict(incoming)) is same
