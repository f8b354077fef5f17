"""What a tutor plans with (issue 42, item 4): outline and learning_path, in the library (teaching.py), the CLI and on
built sites: the sample site, a site whose prerequisites loop, the reference corpus and a generated site."""

import json

import pytest

import knowledge_build as kb
from knowledge_build.model import Chunk
from knowledge_build.teaching import learning_path, outline

from .conftest import FakeEmbedder
from .generated_sites.fixtures import SITE_PARAMS


def _chunk(material: str, anchor: str, type_: str, line: int, parents=(), prerequisites=(), level="基礎") -> Chunk:
    return Chunk(id=f"{material}#{anchor}", material=material, anchor=anchor, url=f"/s/{material}.html#{anchor}",
                 title=anchor, content="", excerpt="", learns=(), learns_source="heuristic", type=type_,
                 category="", level=level, prerequisites=tuple(prerequisites), content_hash="", material_title=material,
                 line=line, parents=tuple(parents))


def test_an_outline_nests_boxes_under_the_section_before_them_and_subsections_by_their_headings():
    chunks = [_chunk("p", "rule-b", "rule", 30), _chunk("p", "sec-1", "section", 10), _chunk("p", "rule-a", "rule", 5),
              _chunk("p", "sec-1-1", "section", 20, parents=("1",)), _chunk("p", "sec-2", "section", 40),
              _chunk("p", "ex-c", "example", 50), _chunk("q", "tip-d", "tip", 1)]
    pages = outline(chunks)
    assert [p["material"] for p in pages] == ["p", "q"] and pages[0]["url"] == "/s/p.html"
    items = pages[0]["items"]
    assert [i["id"] for i in items] == ["p#rule-a", "p#sec-1", "p#sec-2"]
    assert [i["id"] for i in items[1]["items"]] == ["p#sec-1-1"]
    assert [i["id"] for i in items[1]["items"][0]["items"]] == ["p#rule-b"]
    assert [i["id"] for i in items[2]["items"]] == ["p#ex-c"]
    assert outline(chunks, "q")[0]["items"][0] == {"id": "q#tip-d", "title": "tip-d", "type": "tip", "level": "基礎",
                                                   "url": "/s/q.html#tip-d", "line": 1}
    with pytest.raises(KeyError):
        outline(chunks, "none")


def test_a_learning_path_puts_each_prerequisite_before_the_pages_that_need_it():
    chunks = [_chunk("c", "rule-c", "rule", 1, prerequisites=("b", "a")), _chunk("b", "rule-b", "rule", 1, prerequisites=("a",)),
              _chunk("a", "rule-a", "rule", 1), _chunk("d", "rule-d", "rule", 1, prerequisites=("c", "gone")),
              _chunk("e", "rule-e", "rule", 1, prerequisites=("d",))]
    path = learning_path(chunks, "c#rule-c")  # a box id: its page
    assert path.page["material"] == "c" and path.page["boxes"] == ["c#rule-c"] and path.page["url"] == "/s/c.html"
    assert [p["material"] for p in path.before] == ["a", "b"]
    assert [p["material"] for p in path.after] == ["d", "e"]
    assert path.missing == [] and path.cycles == []
    assert learning_path(chunks, "e").missing == [{"page": "d", "prerequisite": "gone"}]
    with pytest.raises(KeyError):
        learning_path(chunks, "nowhere")


def test_a_loop_of_prerequisites_ends_and_is_named():
    chunks = [_chunk("a", "x", "rule", 1, prerequisites=("c",)), _chunk("b", "x", "rule", 1, prerequisites=("a",)),
              _chunk("c", "x", "rule", 1, prerequisites=("b",)), _chunk("d", "x", "rule", 1, prerequisites=("c",))]
    path = learning_path(chunks, "d")
    assert [p["material"] for p in path.before] == ["a", "b", "c"]
    assert len(path.cycles) == 1 and sorted(path.cycles[0]) == ["a", "b", "c"]
    assert learning_path(chunks, "a").cycles and learning_path(chunks, "a").after  # from inside the loop too


LOOP = """---
layout: material
title: {title}
level: 基礎
related:
  - url: /{after}.html
    type: prerequisite
---
<div class="rule-box" id="rule-{name}"><strong>{title}の決まり</strong><p>{title}について学ぶ。</p></div>
"""


def _cli(*args: str):
    """The CLI in this process (CliRunner); with the `fake_open` fixture a set built with the fake embedder opens."""
    from click.testing import CliRunner

    from knowledge_build.cli import main

    return CliRunner().invoke(main, list(args))


def test_the_cli_on_a_site_whose_prerequisites_loop_names_the_loop_and_ends(site_dir, tmp_path, fake_open):
    for name, title, after in (("loop-a", "ループA", "loop-c"), ("loop-b", "ループB", "loop-a"), ("loop-c", "ループC", "loop-b")):
        (site_dir / "junior" / f"{name}.html").write_text(LOOP.format(name=name, title=title, after=after), encoding="utf-8")
    output = kb.build(kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder()).output
    done = _cli("learning-path", "loop-a", "--index", str(output), "--format", "json")
    assert done.exit_code == 0, done.output
    path = json.loads(done.output)
    assert sorted(path["cycles"][0]) == ["loop-a", "loop-b", "loop-c"]
    assert [p["material"] for p in path["before"]] == ["loop-b", "loop-c"]
    text = _cli("learning-path", "loop-a", "--index", str(output))
    assert "cycle: " in text.output and text.output.count("loop-a") >= 2


def test_the_cli_outlines_the_sample_site_and_gives_the_path_of_a_box(fake_index_dir, fake_open):
    done = _cli("outline", "--index", str(fake_index_dir), "--format", "json")
    assert done.exit_code == 0, done.output
    pages = json.loads(done.output)["pages"]
    chunks = [json.loads(line) for line in (fake_index_dir / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()]

    def ids(items):
        return [i["id"] for item in items for i in [item, *[{"id": x} for x in ids(item.get("items", []))]]]

    listed = [i for page in pages for i in ids(page["items"])]
    assert sorted(listed) == sorted(c["id"] for c in chunks)  # every chunk once
    text = _cli("outline", "--index", str(fake_index_dir), "--material", "二次方程式")
    assert text.exit_code == 0 and "rule: 解の公式" in text.output, text.output
    path = _cli("learning-path", "二次方程式#rule-quadratic-formula", "--index", str(fake_index_dir), "--format", "json")
    assert json.loads(path.output)["page"]["material"] == "二次方程式"
    found = _cli("learning-path", "解の公式で解きたい", "--query", "--index", str(fake_index_dir), "--format", "json")
    assert json.loads(found.output)["found_by"]["query"] == "解の公式で解きたい"
    missing = _cli("learning-path", "無い", "--index", str(fake_index_dir))
    assert missing.exit_code == 1 and "Error: no page or chunk '無い'" in missing.output and "Fix:" in missing.output


@pytest.mark.corpus
def test_the_reference_corpus_has_an_outline_of_every_page_and_paths_that_end(corpus_dir, tmp_path):
    from knowledge_build.pipeline import extract

    chunks = extract(kb.load_config(site=corpus_dir, cache_dir=tmp_path / "cache", env={})).chunks
    pages = outline(chunks)
    assert len(pages) == len({c.material for c in chunks})
    for page in pages:
        lines = [item["line"] for item in page["items"]]
        assert lines == sorted(lines), page["material"]
    for material in sorted({c.material for c in chunks}):  # every page's path ends, in an order a student can follow
        path = learning_path(chunks, material)
        before = [p["material"] for p in path.before]
        for i, page in enumerate(path.before):
            assert path.cycles or all(p not in before[i:] for p in page["prerequisites"]), (material, page["material"])
    quadratic = learning_path(chunks, next(c.id for c in chunks if c.anchor == "rule-quadratic-formula"))
    assert quadratic.after and quadratic.page["material"] in quadratic.after[0]["prerequisites"]


def test_a_missing_page_is_one_line_from_the_library(fake_index_dir):
    index = kb.KnowledgeIndex.open(fake_index_dir, embedder=FakeEmbedder())
    with pytest.raises(kb.PageNotFound, match="no page or chunk 'x'"):
        index.outline("x")
    assert index.learning_path("二次方程式").page["material"] == "二次方程式"


@pytest.mark.model
@pytest.mark.generators
@pytest.mark.parametrize("generated_site", SITE_PARAMS, indirect=True)
def test_a_generated_site_has_an_outline_of_every_chunk_in_page_order(generated_index):
    chunks = [Chunk.from_dict(c) for c in generated_index.chunks]
    pages = outline(chunks)

    def flat(items):
        return [x for item in items for x in [item, *flat(item.get("items", []))]]

    listed = [item for page in pages for item in flat(page["items"])]
    assert sorted(i["id"] for i in listed) == sorted(c.id for c in chunks)
    for page in pages:
        lines = [item["line"] for item in flat(page["items"])]
        assert lines == sorted(lines), (generated_index.site.generator, page["material"])


# -- exercises: a box whose answer the page marks (issue 42, item 4) --------------------------------------------------

EXERCISES = """---
layout: material
title: 演習
level: 基礎
---
<div class="example-box" id="ex-line-through-points"><strong>練習：2点を通る直線</strong>
<p>2点 (2, 5) と (5, 11) を通る直線の式を求めなさい。</p>
<details><summary>答えを見る</summary><div><p>傾きは 6 ÷ 3 で 2 になる。</p><p><strong>答え：y = 2x + 1</strong></p></div></details>
</div>
<div class="example-box" id="ex-mean"><strong>練習：平均値</strong>
<p>データ 4, 8, 9 の平均値を求めなさい。</p>
<p><strong>解答：</strong>合計は 21 なので平均値は 7 である。</p>
</div>
<div class="rule-box" id="rule-plain"><strong>直線の式</strong><p>傾き a と切片 b で y = ax + b と書く。</p></div>
"""
ANSWERS = {"ex-line-through-points": ["傾きは", "6 ÷ 3", "y = 2x + 1", "答え"],
           "ex-mean": ["合計", "21", "平均値は 7", "解答"]}


def test_answer_parts_split_a_box_at_its_details_or_its_answer_heading():
    import lxml.html

    from knowledge_build.html.box_text import answer_parts

    box = lxml.html.fromstring("<div id='ex-a'><strong>問</strong><p>x を求めよ。</p><details><summary>答えを見る</summary>"
                               "<p>x = 3</p></details><p>補足は後で。</p></div>")
    assert answer_parts(box) == ("問 x を求めよ。 補足は後で。", "x = 3")
    marked = lxml.html.fromstring("<div id='ex-b'><p>y を求めよ。</p><h4>解説</h4><p>y = 2 となる。</p></div>")
    assert answer_parts(marked) == ("y を求めよ。", "解説 y = 2 となる。")
    assert answer_parts(lxml.html.fromstring("<div id='rule-c'><strong>公式</strong><p>答えの出し方。</p></div>")) is None


def test_the_problem_part_of_an_exercise_holds_none_of_its_answer(site_dir, tmp_path):
    import asyncio

    from mcp import Client

    from knowledge_build.serve.mcp_server import create_server

    (site_dir / "junior" / "演習.html").write_text(EXERCISES, encoding="utf-8")
    output = kb.build(kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder()).output
    service = kb.SearchService(kb.KnowledgeIndex.open(output, embedder=FakeEmbedder()))
    for anchor, answer in ANSWERS.items():
        problem = service.get(f"演習#{anchor}", part="problem")
        assert problem["answer_marked"] and "求めなさい" in problem["content"]
        assert not any(word in json.dumps(problem, ensure_ascii=False) for word in answer), problem
        solution = service.get(f"演習#{anchor}", part="solution")
        assert all(word in solution["content"] for word in answer[:3]), solution
        assert all(word in service.get(f"演習#{anchor}")["content"] for word in answer[:3])  # whole, as before
    plain = service.get("演習#rule-plain", part="problem")
    assert not plain["answer_marked"] and plain["content"] == service.get("演習#rule-plain")["content"]
    with pytest.raises(kb.KnowledgeBuildError, match="has no marked answer"):
        service.get("演習#rule-plain", part="solution")
    server = create_server(service, kb.NoteStore(FakeEmbedder(), tmp_path / "notes.sqlite"))

    async def session():
        async with Client(server) as client:
            got = await client.call_tool("get_chunk_by_id", {"id": "演習#ex-mean", "part": "problem"})
            bad = await client.call_tool("get_chunk_by_id", {"id": "演習#ex-mean", "part": "answer"})
            return got.structured_content, bad

    got, bad = asyncio.run(session())
    assert got["part"] == "problem" and "21" not in json.dumps(got, ensure_ascii=False)
    assert bad.is_error and bad.content[0].text == "part must be one of problem, solution, not 'answer'"


SECTION_EXERCISES = """---
layout: material
title: 練習
level: 基礎
---
<h2 id="renshu">練習問題</h2>
<p>次の問題を解きなさい。</p>
<div class="rule-box"><strong>練習1</strong><p>x + 3 = 5 を解きなさい。</p>
<details><summary>答えを見る</summary><p>両辺から 3 を引いて x = 2 となる。</p></details></div>
<div class="rule-box"><strong>練習2</strong><p>2x = 8 を解きなさい。</p>
<div class="solution"><p>両辺を 2 で割ると x = 4 である。</p></div></div>
<h2 id="matome">まとめ</h2>
<p>移項するときは符号を変える。等式の性質を使えば、どの一次方程式も同じ手順で解ける。かっこがあればまず分配法則で外し、
分数や小数の係数があれば両辺に同じ数をかけて整数にしてから移項する。最後に求めた解をもとの式に代入して、左辺と右辺が
等しくなることを確かめる習慣をつけよう。</p>
"""


def test_a_section_whose_exercises_mark_their_answers_keeps_the_problem_apart(site_dir, tmp_path):
    """Exercises outside any anchored box (unanchored boxes in a section, as the reference corpus's 練習問題 sections
    hold theirs): the section's chunk has the parts; a section without answers has none."""
    (site_dir / "junior" / "練習.html").write_text(SECTION_EXERCISES, encoding="utf-8")
    output = kb.build(kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder()).output
    service = kb.SearchService(kb.KnowledgeIndex.open(output, embedder=FakeEmbedder()))
    index = service.index
    sections = {c.title: c for c in index.artifacts.chunks if c.material == "練習"}
    exercises = sections["練習問題"]
    problem = service.get(exercises.id, part="problem")
    assert problem["answer_marked"] and "x + 3 = 5 を解きなさい" in problem["content"] and "2x = 8" in problem["content"]
    answer = ["両辺", "x = 2", "x = 4"]
    assert not any(word in json.dumps(problem, ensure_ascii=False) for word in answer), problem
    solution = service.get(exercises.id, part="solution")["content"]
    assert all(word in solution for word in answer) and "解きなさい" not in solution
    assert all(word in service.get(exercises.id)["content"] for word in answer)  # the whole section, as before
    assert not service.get(sections["まとめ"].id, part="problem")["answer_marked"]


def test_a_long_answer_line_split_across_parts_stays_in_the_solution():
    from knowledge_build.html.sections import _exercise

    answers = {"長い解答の行で、途中で切られる。"}
    assert _exercise("問題文\n長い解答の行で", answers) == {"problem": "問題文", "solution": "長い解答の行で"}
    assert _exercise("問題文だけ", answers) == {}


KAITOU = """---
layout: material
title: 解答欄
level: 基礎
---
<div class="example-box" id="ex-kaitou"><strong>練習：一次方程式</strong>
<p>3x + 2 = 11 を解きなさい。</p>
<div class="kaitou"><p>移項して 3x = 9、よって x = 3 となる。</p></div>
</div>
"""


def test_a_configured_answer_selector_marks_what_the_site_uses_for_answers(site_dir, tmp_path):
    (site_dir / "junior" / "解答欄.html").write_text(KAITOU, encoding="utf-8")

    def chunk_of(**settings):
        config = kb.load_config(site=site_dir, cache_dir=tmp_path / "cache", output=tmp_path / "v2", env={}, **settings)
        output = kb.build(config, embedder=FakeEmbedder()).output
        return kb.KnowledgeIndex.open(output, embedder=FakeEmbedder()).get("解答欄#ex-kaitou")

    assert chunk_of().solution == ""  # a class the tool does not know marks nothing by itself
    marked = chunk_of(answer_selector="div.kaitou")
    assert "x = 3" in marked.solution and "x = 3" not in marked.problem and "11 を解きなさい" in marked.problem
    with pytest.raises(kb.ConfigError, match="answer_selector: 'div..' is not a CSS selector"):
        kb.load_config(env={"KB_ANSWER_SELECTOR": "div.."})
