"""Links that survive edits (issue 42, item 3): a box renamed or slightly edited keeps answering to its old id, through
the library, get_chunk_by_id (MCP and SearchService), the CLI and the database's get_chunk_by_id."""

import json
import random
import shutil
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

import knowledge_build as kb
from knowledge_build.cli import main
from knowledge_build.index.aliases import ALIASES, aliases_for
from knowledge_build.model import Chunk

from .conftest import CORPUS, FakeEmbedder, require_shared

BOXES = ("rule", "method", "definition", "tip", "example")


def _chunk(id_: str, content: str, type_: str = "rule", content_hash: str | None = None) -> Chunk:
    material = id_.split("#")[0]
    return Chunk(id=id_, material=material, anchor=id_.split("#")[1], url=f"/{material}.html", title="t",
                 content=content, excerpt="", learns=(), learns_source="heuristic", type=type_, category="", level="",
                 prerequisites=(), content_hash=content_hash or f"h-{content}")


def _previous(*chunks: Chunk) -> list[dict]:
    return [{"id": c.id, "material": c.material, "type": c.type, "content": c.content, "content_hash": c.content_hash}
            for c in chunks]


def test_a_renamed_or_slightly_edited_chunk_leaves_its_old_id_as_an_alias():
    text = "二次方程式の解の公式は x = (-b ± √(b²-4ac)) / 2a である。係数を代入して解く。"
    before = _previous(_chunk("p#rule-a", "同じ本文"), _chunk("p#rule-b", text), _chunk("p#rule-gone", "消えた箱"),
                       _chunk("p#rule-kept", "残る"))
    after = [_chunk("p#rule-a2", "同じ本文"), _chunk("p#rule-b2", text + "（補足）"), _chunk("p#rule-kept", "残る"),
             _chunk("p#tip-b3", text + "（補足）", "tip")]  # another kind: not a candidate for rule-b
    assert aliases_for(before, {}, after) == {"p#rule-a": "p#rule-a2", "p#rule-b": "p#rule-b2"}
    # an earlier alias follows its chunk when it moves again, and goes when its chunk is gone without a successor
    later = [_chunk("p#rule-a3", "同じ本文"), _chunk("p#rule-kept", "残る")]
    assert aliases_for(_previous(*after), {"p#rule-a": "p#rule-a2", "p#rule-b": "p#rule-b2"}, later) == \
        {"p#rule-a": "p#rule-a3", "p#rule-a2": "p#rule-a3"}
    # an id that is a chunk again is no alias
    assert aliases_for(_previous(*after), {"p#rule-a": "p#rule-a2"}, [*after, _chunk("p#rule-a", "新しい")]) == {}
    # two new chunks alike: no guess
    twins = [_chunk("p#rule-x", text + "甲"), _chunk("p#rule-y", text + "乙")]
    assert aliases_for(_previous(_chunk("p#rule-b", text)), {}, twins) == {}


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """A copy of the reference corpus built, then built again into the same set after 20 box ids were renamed
    (content unchanged) and 10 boxes were renamed and slightly edited. (the set, {old id: new id}, old ids)."""
    work = tmp_path_factory.mktemp("aliases")
    site = work / "site"
    shutil.copytree(require_shared(CORPUS), site)

    def build():
        return kb.build(kb.load_config(site=site, output=work / "v2", cache_dir=work / "cache", env={}),
                        embedder=FakeEmbedder())

    first = build()
    boxes = [c for c in first.chunks if c.type in BOXES]
    picked = random.Random(5).sample(boxes, 30)
    expected = {}
    for i, c in enumerate(picked):
        page = site / c.source_path
        text = page.read_text(encoding="utf-8")
        at = text.index(f'id="{c.anchor}"')
        if i >= 20:  # a slight edit: a few words added to the box's first paragraph
            close = text.index("</p>", at)
            text = text[:close] + "（ここに補足を加えた）" + text[close:]
        new = f"{c.anchor}-{'renamed' if i < 20 else 'edited'}"
        page.write_text(text[:at] + f'id="{new}"' + text[at + len(f'id="{c.anchor}"'):], encoding="utf-8")
        expected[c.id] = f"{c.material}#{new}"
    return build().output, expected


@pytest.mark.corpus
def test_every_old_id_of_the_reference_corpus_resolves_to_its_new_chunk(moved, fake_open):
    output, expected = moved
    assert json.loads((output / ALIASES).read_text(encoding="utf-8")) == expected
    service = kb.SearchService(kb.KnowledgeIndex.open(output, embedder=FakeEmbedder()))
    for old, new in expected.items():
        found = service.get(old)
        assert found["id"] == new and found["moved_from"] == old
        assert "moved_from" not in service.get(new)
        shown = CliRunner().invoke(main, ["chunk", old, "--index", str(output), "--format", "json"])
        assert shown.exit_code == 0 and json.loads(shown.output)["id"] == new, shown.output
    text = CliRunner().invoke(main, ["chunk", next(iter(expected)), "--index", str(output)])
    assert text.output.startswith(f"{next(iter(expected))} moved to {expected[next(iter(expected))]}")
    gone = CliRunner().invoke(main, ["chunk", "無い#rule-x", "--index", str(output)])
    assert gone.exit_code == 1 and "no chunk with id '無い#rule-x'" in gone.output


@pytest.mark.corpus
def test_the_coverage_report_lists_the_moved_ids(moved, tmp_path):
    from knowledge_build.checks.report import coverage, render_html

    output, expected = moved
    data = coverage(kb.load_config(site=output.parent / "site", env={}), output)
    assert {a["old"]: a["new"] for a in data["index"]["aliases"]} == expected
    page = render_html(data)
    assert "Moved ids (30)" in page and all(f"<code>{old}</code>" in page for old in expected)


@pytest.mark.corpus
@pytest.mark.db
def test_the_database_resolves_every_old_id(moved, fresh_db):
    output, expected = moved
    published = CliRunner().invoke(main, ["publish", "--index", str(output), "--database-url", fresh_db])
    assert published.exit_code == 0, published.output
    with psycopg.connect(fresh_db) as conn:
        assert dict(conn.execute("select old_id, new_id from knowledge_aliases").fetchall()) == expected
        for old, new in expected.items():
            rows = conn.execute("select id from get_chunk_by_id(%s)", (old,)).fetchall()
            assert rows == [(new,)], old
            assert conn.execute("select id from get_chunk_by_id(%s)", (new,)).fetchall() == [(new,)]
        conn.execute("set role anon")  # the anonymous role reads through the function too
        assert conn.execute("select id from get_chunk_by_id(%s)", (next(iter(expected)),)).fetchall() == \
            [(next(iter(expected.values())),)]


def test_a_set_without_aliases_has_none_and_an_unknown_id_is_not_found(fake_index_dir):
    index = kb.KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    assert not (Path(fake_index_dir) / ALIASES).exists() and index.artifacts.aliases == {}
    with pytest.raises(kb.ChunkNotFound):
        index.resolve("二次方程式#rule-nothing")
