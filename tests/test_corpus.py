"""The reference corpus (../shared/corpus/school_asset) builds and yields every anchored element."""

import collections
from pathlib import Path
from urllib.parse import unquote

import pytest

from knowledge_build import KnowledgeIndex, build, extract, load_config
from knowledge_build.html.fragments import fragment_lands
from knowledge_build.html.sections import page_text
from knowledge_build.kinds import PART_TYPES
from knowledge_build.site.scan import parse_page

from .conftest import FakeEmbedder

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus_build(corpus_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    config = load_config(site=corpus_dir, output=out / "v1", cache_dir=out / "cache", env={})
    return build(config, embedder=FakeEmbedder())


def test_corpus_builds_without_error_and_yields_all_1044_boxes(corpus_build):
    # 1,046 knowledge ids, two of them on <h3> headings: a heading is not a box (README, Which elements are boxes)
    assert not [d for d in corpus_build.diagnostics if d.severity == "error"]
    counts = collections.Counter(c.type for c in corpus_build.chunks)
    boxes = {t: n for t, n in counts.items() if t not in PART_TYPES}
    assert boxes == {"rule": 305, "tip": 115, "method": 33, "definition": 24, "example": 567}
    assert counts["section"] > 0 and counts["table"] > 0  # sections: all, the default
    assert corpus_build.artifacts.manifest["counts"]["chunks"] == 1044 + counts["section"] + counts["table"]


def test_the_corpus_exercises_with_marked_answers_keep_their_problem_apart(corpus_build):
    """README, "problem, solution": the example boxes and the section chunks whose answers a <details> marks."""
    marked = collections.Counter(c.type for c in corpus_build.chunks if c.solution)
    assert marked == {"example": 65, "section": 112}
    for chunk in (c for c in corpus_build.chunks if c.solution):
        assert chunk.problem and chunk.solution not in chunk.problem, chunk.id


def test_every_corpus_url_points_at_an_existing_page_and_anchor(corpus_build, corpus_dir):
    pages: dict[Path, str] = {}
    for chunk in (c for c in corpus_build.chunks if c.type not in PART_TYPES):  # sections: see below
        path, anchor = chunk.url.split("#")
        assert path.startswith("/school_asset/"), chunk.url
        page = corpus_dir / unquote(path.removeprefix("/school_asset/"))
        if page not in pages:
            pages[page] = page.read_text(encoding="utf-8")
        assert f'id="{anchor}"' in pages[page], chunk.url


def test_corpus_chunks_take_learns_from_its_learns_yml(corpus_build):
    sources = collections.Counter(c.learns_source for c in corpus_build.chunks)
    assert sources["yaml"] >= 300
    chunk = next(c for c in corpus_build.chunks if c.id == "二次方程式の解き方_教材#rule-quadratic-formula")
    assert chunk.learns_source == "yaml" and chunk.title == "解の公式" and chunk.level == "標準"


def test_corpus_index_loads_and_answers(corpus_build):
    index = KnowledgeIndex.open(corpus_build.output, embedder=FakeEmbedder())
    assert len(index) == len(corpus_build.chunks)
    assert index.search("解の公式", k=5, mode="lexical")


def test_every_corpus_page_without_anchored_boxes_yields_sections_whose_links_land(corpus_dir):
    """Issue 13's must-show: with sections: unanchored, each of the 22 material pages without a
    rule/method/def/tip anchor yields section chunks, and every section or table link resolves (the id
    exists in the page, or the text fragment's text occurs in the page's visible text)."""
    extraction = extract(load_config(site=corpus_dir, sections="unanchored", env={}))
    chunks = collections.defaultdict(list)
    for chunk in extraction.chunks:
        chunks[chunk.material].append(chunk)
    materials = [p for p in extraction.pages if p.rel.startswith(("junior/", "senior/"))]
    without = [p for p in materials if not any(e.type != "example" for e in p.elements)]
    assert len(materials) == 93 and len(without) == 22
    assert [p.rel for p in without if not any(c.type == "section" for c in chunks[p.material])] == []
    for page in materials:
        root = parse_page(page.path)
        text = page_text(root)
        for chunk in (c for c in chunks[page.material] if c.type in PART_TYPES):
            fragment = chunk.url.partition("#")[2]
            if fragment.startswith(":~:"):
                assert fragment_lands(fragment, text), chunk.url
            else:
                assert not fragment or root.xpath("//*[@id=$id]", id=unquote(fragment)), chunk.url


def test_every_table_of_the_corpus_outside_boxes_is_in_a_chunk(corpus_dir):
    """Issue 25: with the default setting every <table> of a material page that no anchored box holds
    is in a table chunk of its page: each of its rows is a row of one of them."""
    from knowledge_build.html.tables import html_table, row_line

    extraction = extract(load_config(site=corpus_dir, env={}))
    table_text = collections.defaultdict(str)
    for chunk in extraction.chunks:
        if chunk.type == "table":
            table_text[chunk.material] += chunk.content + "\n"
    counted, missing = 0, []
    for page in (p for p in extraction.pages if p.rel.startswith(("junior/", "senior/"))):
        root = parse_page(page.path)
        boxes = {e.id for e in page.elements}
        for table in root.iter("table"):
            if any(a.get("id") in boxes for a in table.iterancestors()):
                continue  # inside a box: the box's chunk holds it
            rows = html_table(table).rows
            if not rows:
                continue
            counted += 1
            lost = [row_line(r) for r in rows if row_line(r) not in table_text[page.material]]
            if lost:
                missing.append(f"{page.rel}:{table.sourceline}: {lost[0]!r}")
    assert counted >= 40, f"only {counted} tables outside boxes found; the test could not fail"
    assert missing == [], f"{len(missing)} of {counted} tables outside boxes are in no chunk: {missing[:5]}"
