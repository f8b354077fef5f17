"""Section and table chunks of the sample site (issue 13): the setting, ids and links that land, the
25-row table found by one cell, validate's link check, and the errors a user can meet. No model."""

import json
import sys

import pytest
from click.testing import CliRunner

from knowledge_build import ConfigError, KnowledgeIndex, SearchSettings, build, extract, load_config
from knowledge_build.checks.validate import validate_site
from knowledge_build.cli import main
from knowledge_build.html.fragments import fragment_lands
from knowledge_build.html.sections import page_text
from knowledge_build.kinds import PART_TYPES
from knowledge_build.model import CONTEXT_MARK
from knowledge_build.pipeline import lexical_text
from knowledge_build.site.scan import parse_page

from .conftest import SITE, FakeEmbedder, LocalLookalike

TABLE = "平方数と立方数"


@pytest.fixture(scope="module")
def extraction():
    return extract(load_config(site=SITE, env={}))


def _parts(chunks):
    return [c for c in chunks if c.type in PART_TYPES]


def test_sample_site_section_chunks_match_the_golden_file(extraction, data_regression):
    data_regression.check([{"id": c.id, "url": c.url, "title": c.title, "parents": list(c.parents), "line": c.line}
                           for c in _parts(extraction.chunks)])


def test_every_section_link_lands_on_its_page(extraction):
    pages = {p.material: p for p in extraction.pages}
    for chunk in _parts(extraction.chunks):
        root = parse_page(pages[chunk.material].path)
        fragment = chunk.url.partition("#")[2]
        if fragment.startswith(":~:"):
            assert fragment_lands(fragment, page_text(root)), chunk.id
        elif fragment:
            assert root.xpath("//*[@id=$id]", id=fragment), chunk.id


def test_a_decorated_heading_is_titled_without_its_mark_and_linked_with_it(extraction):
    chunk = next(c for c in extraction.chunks if c.id == "指数法則#sec-2-3tsu-exponent-hosoku-product-hosoku")
    assert chunk.title == "積の法則" and chunk.parents == ("2. 3つの指数法則",)
    assert chunk.url.endswith("#:~:text=%E2%96%B6%20%E7%A9%8D%E3%81%AE%E6%B3%95%E5%89%87")  # ▶ 積の法則


def test_a_repeated_heading_gets_its_own_id_and_a_link_to_the_second_occurrence(extraction):
    first, second = (c for c in extraction.chunks if c.title == "まちがえやすい例")
    assert first.id != second.id and first.url != second.url
    assert second.parents == ("3. 0や負の整数の指数",)


def test_the_breadcrumb_is_embedded_and_read_by_the_lexical_channel(extraction):
    chunk = next(c for c in extraction.chunks if c.title == "積の法則")
    assert chunk.embed_text.startswith("指数法則の整理: 2. 3つの指数法則 > 積の法則\n")
    assert lexical_text(chunk).split("\n")[1] == "2. 3つの指数法則 積の法則"


def test_all_is_the_default_and_off_and_unanchored_choose_fewer_parts(site_dir):
    by_mode = {mode: extract(load_config(site=site_dir, env={}, **({"sections": mode} if mode else {}))).chunks
               for mode in (None, "off", "unanchored", "all")}
    assert [c.id for c in by_mode[None]] == [c.id for c in by_mode["all"]]
    assert not _parts(by_mode["off"]) and len(by_mode["off"]) == 121
    unanchored, every = {c.id for c in _parts(by_mode["unanchored"])}, {c.id for c in _parts(by_mode["all"])}
    assert unanchored < every
    # `all` adds the sections that hold boxes; their text is what lies outside the boxes
    extra = [c for c in by_mode["all"] if c.id in every - unanchored]
    assert any(c.material == "平方根" for c in extra)
    assert all("2乗すると \\(a\\) になる数を" not in c.content for c in extra)  # text of def-square-root


@pytest.mark.parametrize("where", ["file", "env", "flag"])
def test_a_bad_sections_value_is_an_error_naming_the_allowed_values(site_dir, tmp_path, where, monkeypatch):
    if where == "file":
        (tmp_path / "knowledge.yml").write_text("sections: some\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="sections must be one of off, unanchored, all, got 'some'"):
            load_config(cwd=tmp_path)
    elif where == "env":
        with pytest.raises(ConfigError, match="environment: sections must be one of off, unanchored, all"):
            load_config(cwd=tmp_path, env={"KB_SECTIONS": "some"})
    else:
        result = CliRunner().invoke(main, ["check", "--site", str(site_dir), "--sections", "some"])
        assert result.exit_code == 2 and "'some' is not one of 'off', 'unanchored', 'all'" in result.output


def test_sections_off_unquoted_in_knowledge_yml_is_off(tmp_path):
    (tmp_path / "knowledge.yml").write_text("sections: off\n", encoding="utf-8")  # YAML 1.1 reads false
    assert load_config(cwd=tmp_path, env={}).sections == "off"
    assert load_config(cwd=tmp_path, env={"KB_SECTIONS": "all"}).sections == "all"


# --- the 25-row table -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def index(fake_index_dir):
    return KnowledgeIndex.open(fake_index_dir, FakeEmbedder())


INTRO = "1から25までの整数 n について、n² と n³ の値をまとめました。"


def test_each_row_of_the_table_is_a_chunk_that_carries_the_header(extraction):
    rows = [c for c in extraction.chunks if c.material == TABLE and c.type == "table"]
    assert len(rows) == 25
    for chunk in rows:
        # the sentence that introduces the table, then its header line (issue 25)
        assert chunk.content.startswith(f"{INTRO}\nn | n の2乗（平方数） | n の3乗（立方数）\n")
        assert chunk.url.endswith(f"{TABLE}.html#section1") and chunk.title == "1. 平方数・立方数の表"


def test_context_rows_are_shown_marked_and_not_read_by_the_channels(extraction):
    row17 = next(c for c in extraction.chunks if c.id == f"{TABLE}#tbl-1-heiho-su-rippo-t1-r17-17")
    assert row17.content.split("\n")[2:] == [f"{CONTEXT_MARK}16 | 256 | 4096", "17 | 289 | 4913",
                                             f"{CONTEXT_MARK}18 | 324 | 5832"]
    assert "256" not in lexical_text(row17) and "324" not in row17.embed_text
    assert row17.excerpt == f"{INTRO}\nn | n の2乗（平方数） | n の3乗（立方数）\n17 | 289 | 4913"


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("query, row", [("4913", 17), ("289", 17), ("立方数 2197", 13), ("576", 24), ("13824", 24)])
def test_a_query_naming_one_cell_finds_that_rows_chunk_first(index, mode, query, row):
    top = index.search(query, k=3, mode=mode)[0]
    assert top.id == f"{TABLE}#tbl-1-heiho-su-rippo-t1-r{row}-{row}", [r.id for r in index.search(query, k=3, mode=mode)]


def test_the_type_filter_accepts_sections_and_tables(index):
    assert {r.type for r in index.search("指数法則", k=5, type="section")} == {"section"}
    assert {r.type for r in index.search("平方数", k=5, type="tables")} == {"table"}
    assert {r.type for r in index.search("指数", k=5, type="sec")} == {"section"}


# --- validate, Liquid, names --------------------------------------------------------------------


@pytest.fixture
def indexed(site_dir):
    build(load_config(site=site_dir, env={"KB_CACHE_DIR": str(site_dir.parent / "cache")}), embedder=LocalLookalike())
    return site_dir


def _findings(site, **flags):
    return [(d.rule, d.severity, d.path.rsplit("/", 1)[-1], d.line)
            for d in validate_site(load_config(site=site, env={}, **flags))]


def test_a_heading_that_changed_since_the_build_is_a_section_link_error_not_a_stale_anchor(indexed):
    page = indexed / "senior" / "指数法則.html"
    page.write_text(page.read_text(encoding="utf-8").replace("<h2>4. 計算の進め方</h2>", "<h2>4. 計算の手順</h2>"),
                    encoding="utf-8")
    findings = _findings(indexed)
    assert ("section-link", "error", "指数法則.html", 1) in findings
    assert not [f for f in findings if f[0] == "stale-anchor"]
    assert ("not-indexed", "warning", "指数法則.html", 36) in findings  # the new heading's section


def test_an_id_the_section_links_to_must_still_exist(indexed):
    page = indexed / "junior" / f"{TABLE}.html"
    page.write_text(page.read_text(encoding="utf-8").replace('<section id="section2">', '<section id="usage">'),
                    encoding="utf-8")
    findings = _findings(indexed)
    assert ("section-link", "error", f"{TABLE}.html", 54) in findings  # the section is still there, its id is not


def test_an_index_with_sections_validates_clean_and_sections_off_reports_them_as_stale(indexed):
    assert _findings(indexed) == []
    stale = _findings(indexed, sections="off")
    assert stale and {f[:2] for f in stale} == {("stale-section", "warning")}


def test_a_source_page_with_liquid_in_its_text_has_no_sections_and_says_why(extraction, tmp_path):
    assert not [c for c in extraction.chunks if c.material == "index"]
    (info,) = [d for d in extraction.diagnostics if d.rule == "sections-need-render"]
    assert info.severity == "info" and info.path.endswith("index.html") and "--site _site" in info.fix
    site = tmp_path / "s"
    site.mkdir()
    (site / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (site / "p.html").write_text("---\ntitle: t\n---\n<h2>見出し</h2><p>本文は十分な長さの文章です。"
                                 "<a href=\"{{ '/q.html' | relative_url }}\">次へ</a></p>", encoding="utf-8")
    (chunk,) = extract(load_config(site=site, env={})).chunks  # Liquid in an attribute changes no text
    assert chunk.id == "p#sec-midashi" and "本文は十分な長さの文章です。" in chunk.content


def test_two_pages_of_one_file_name_are_two_pages_named_by_their_paths(tmp_path):
    site = tmp_path / "s"
    for folder in ("a", "b"):
        (site / folder).mkdir(parents=True)
        (site / folder / "index.html").write_text(f"<h2>{folder}の見出し</h2><p>本文です。</p>", encoding="utf-8")
    (site / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    extraction = extract(load_config(site=site, env={}))
    assert [(c.material, c.url) for c in extraction.chunks] == [
        ("a", "/a/index.html#:~:text=a%E3%81%AE%E8%A6%8B%E5%87%BA%E3%81%97"),
        ("b", "/b/index.html#:~:text=b%E3%81%AE%E8%A6%8B%E5%87%BA%E3%81%97")]
    assert not [d for d in extraction.diagnostics if d.severity != "info"]


def test_two_pages_with_one_path_are_an_error_naming_both(tmp_path):
    site = tmp_path / "s"
    (site / "a").mkdir(parents=True)
    (site / "a.html").write_text("<h2>見出し</h2><p>本文です。</p>", encoding="utf-8")
    (site / "a" / "index.html").write_text("<h2>別の見出し</h2><p>本文です。</p>", encoding="utf-8")
    extraction = extract(load_config(site=site, env={}))
    (error,) = [d for d in extraction.diagnostics if d.rule == "duplicate-page"]
    assert error.severity == "error" and "'a.html'" in error.message and "'a/index.html'" in error.message


def test_without_the_japanese_tokenizer_sections_are_a_clear_error_and_off_still_works(tmp_path, monkeypatch):
    from knowledge_build.html import sections

    site_dir = tmp_path / "s"
    site_dir.mkdir()
    (site_dir / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (site_dir / "p.html").write_text("<h2>見出しの言葉</h2><p>本文です。</p>", encoding="utf-8")
    sections._computed_slug.cache_clear()
    monkeypatch.setitem(sys.modules, "jaconv", None)  # `import jaconv` raises ImportError
    result = CliRunner().invoke(main, ["check", "--site", str(site_dir)])
    assert result.exit_code == 1 and "Error: section and table chunks (setting 'sections')" in result.output
    assert "pip install 'knowledge-build[ids]'" in result.output and "Traceback" not in result.output
    sections._computed_slug.cache_clear()
    off = CliRunner().invoke(main, ["check", "--site", str(site_dir), "--sections", "off", "--format", "json"])
    assert off.exit_code == 0, off.output
    sections._computed_slug.cache_clear()


def test_report_json_counts_sections_and_pages_indexed_only_by_them(indexed, tmp_path):
    result = CliRunner().invoke(main, ["report", "--site", str(indexed), "--out", str(tmp_path / "r.html"),
                                       "--format", "json"])
    totals = json.loads(result.output)
    assert (totals["section"], totals["table"], totals["pages_only_sections"]) == (25, 25, 2)
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "pages indexed only by sections" in html and "<th>only sections</th>" in html


@pytest.mark.model
@pytest.mark.parametrize("query, row", [("4913は何の3乗？", 17), ("17の2乗はいくつ", 17), ("2197は何の3乗", 13)])
def test_a_question_about_one_cell_finds_that_rows_chunk_first_with_the_real_model(real_index, query, row):
    assert real_index.search(query, k=1)[0].id == f"{TABLE}#tbl-1-heiho-su-rippo-t1-r{row}-{row}"


def test_a_box_beats_the_section_that_merely_mentions_it_unless_sections_are_asked_for(tmp_path):
    import faiss
    import numpy as np

    from knowledge_build.model import Chunk
    from knowledge_build.text.ja import ANALYZER, analyze_box, box_text

    embedder = FakeEmbedder()
    box = "解の公式は二次方程式の解を係数で表す式"
    mention = "解の公式の歴史。解の公式を最初に書いた人と、解の公式が広まった時代"  # names it, teaches it not
    chunks = [Chunk(id=f"p#{a}", material="p", anchor=a, url=f"/p.html#{a}", title=title, content=text,
                    excerpt=text, learns=(), learns_source="heuristic", type=kind, category="", level="",
                    prerequisites=(), content_hash=a)
              for a, kind, title, text in (("rule-a", "rule", "解の公式", box), ("sec-b", "section", "解の公式の歴史", mention),
                                           # other boxes: DBSF over two candidates only maps them to 1/3 and 2/3
                                           ("rule-c", "rule", "円の面積", "円の面積は半径の二乗に円周率を掛けて求める"),
                                           ("rule-d", "rule", "二次方程式", "二次方程式は因数分解で解くこともできる"))]
    index = faiss.IndexFlatIP(embedder.dim)
    index.add(np.stack([embedder.embed_documents([c.content])[0] for c in chunks]))
    fields = [analyze_box(box_text("p", c.title, c.content)) for c in chunks]
    lexical = {"analyzer": ANALYZER, "fields": {name: [f[name] for f in fields] for name in fields[0]}}
    def ranked(**settings):
        found = KnowledgeIndex.from_parts(tmp_path, {"build_id": "x"}, chunks, index, lexical, embedder,
                                          SearchSettings(**settings))
        return [r.id for r in found.search("解の公式", k=2)]

    # 「公式」 also lifts rules (intent_boost); without it the section weight alone decides.
    assert ranked(section_weight=1.0, intent_boost=1.0) == ["p#sec-b", "p#rule-a"]  # by its words alone
    assert ranked(intent_boost=1.0) == ["p#rule-a", "p#sec-b"]
    search = KnowledgeIndex.from_parts(tmp_path, {"build_id": "x"}, chunks, index, lexical, embedder)
    assert [r.type for r in search.search("解の公式", k=2)] == ["rule", "section"]
    assert [r.type for r in search.search("解の公式", k=2, type="section")] == ["section"]


def test_each_channel_takes_its_candidates_among_boxes_and_among_sections_separately(fake_index_dir):
    """With few candidates, the sections (many, long) must not push a box out of a channel's list:
    each channel holds the best `candidates` boxes and the best `candidates` parts."""
    import numpy as np

    index = KnowledgeIndex.open(fake_index_dir, FakeEmbedder(), settings=SearchSettings(candidates=3))
    query = "指数法則の表"
    qvec = index.analyser.embed(query)
    parts = np.array([c.type in PART_TYPES for c in index.chunks])
    assert parts.any() and not parts.all()
    dense_index = index.artifacts.dense_index
    cosines = np.array([float(np.dot(dense_index.reconstruct(r), qvec)) for r in range(len(index.chunks))])
    dense = index.channels.dense(qvec, None)
    for group in (~parts, parts):
        best = sorted(np.flatnonzero(group), key=lambda r: -cosines[r])[:3]
        assert {r for r in dense if group[r]} == {int(r) for r in best}
    lexical = index.channels.lexical(index.analyser.fields(query), None)
    assert any(parts[r] for r in lexical) and any(not parts[r] for r in lexical)
    assert sum(1 for r in lexical if parts[r]) <= 3 and sum(1 for r in lexical if not parts[r]) <= 3
    supplied = index.ranker.per_kind({r: float(c) for r, c in enumerate(cosines)})  # the database's ranking
    assert set(supplied) == set(dense)
