"""bench/retrieval/bench_real_sites.py judges a result by where its URL lands in the built page, and
refuses a questions file whose labels name no built place, in one line, before any build."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "retrieval"))

import bench_real_sites as bench  # noqa: E402

PAGE = """<html><head><title>Guide</title></head><body>
<nav><h2>Menu</h2><a href="/">home</a></nav>
<main>
<h1 id="guide">Guide</h1><p>intro</p>
<section id="install"><h2>Install</h2><p>pip install</p>
  <h3 id="linux">Linux</h3><p>apt-get install</p>
</section>
<h2 id="usage">Usage</h2><p>run the command</p>
</main></body></html>"""


@pytest.fixture
def site(tmp_path):
    (tmp_path / "out" / "guide").mkdir(parents=True)
    (tmp_path / "out" / "guide" / "index.html").write_text(PAGE, encoding="utf-8")
    return tmp_path


def label(page="guide/index.html", fragment="install"):
    return bench.Label("q1", "how to install", "exact", page, fragment)


def test_a_result_under_the_labelled_heading_is_a_hit_and_a_sibling_section_is_not(site):
    built = bench.BuiltSite(site / "out")
    page = built.page_of_url("/docs/guide/#linux")  # served under a base path
    assert page == "guide/index.html"
    assert bench.is_hit(built, page, "linux", label())  # h3 inside the labelled <section id>
    assert bench.is_hit(built, page, "install", label())
    assert not bench.is_hit(built, page, "usage", label())
    assert not bench.is_hit(built, page, "", label())  # the page as a whole is not the section
    assert bench.is_hit(built, page, "", label(fragment=""))  # unless the label names the page


def test_a_text_directive_lands_in_the_section_that_holds_its_text(site):
    built = bench.BuiltSite(site / "out")
    assert bench.is_hit(built, "guide/index.html", ":~:text=apt%2Dget%20install", label())
    assert not bench.is_hit(built, "guide/index.html", ":~:text=run%20the%20command", label())


def test_the_baseline_sections_carry_the_id_of_their_heading_or_its_wrapper(site):
    built = bench.BuiltSite(site / "out")
    sections = bench.split_page(built, "guide/index.html")
    assert [(s.fragment, s.text.split()[0]) for s in sections] == [
        ("guide", "Guide"), ("install", "Install"), ("linux", "Linux"), ("usage", "Usage")]
    assert all("Menu" not in s.text for s in sections)  # nav is not the page's text


def test_a_label_naming_no_id_of_the_built_page_is_refused_in_one_line(site):
    (site / "site.json").write_text(json.dumps({"output": "out"}), encoding="utf-8")
    good = {"qid": "q1", "query": "install", "kind": "exact", "page": "guide/index.html", "fragment": "install"}
    bad = dict(good, qid="q2", fragment="nowhere")
    (site / "questions.jsonl").write_text(f"{json.dumps(good)}\n{json.dumps(bad)}\n", encoding="utf-8")
    with pytest.raises(bench.BadSite) as refused:
        bench.read_site(site)
    message = str(refused.value)
    assert message == (f"{site / 'questions.jsonl'}:2: error: no id 'nowhere' in guide/index.html. "
                       "Fix: give a heading's id (or '' for the whole page).")


def test_pagefinds_links_are_judged_like_every_other_systems(site, monkeypatch):
    """--pagefind: the links Pagefind's UI shows, in order, judged by where they land (the Pagefind run
    itself, npm and Chromium, is bench/browser/pagefind_run.py's and measured there)."""
    import types

    asked = {}

    def results(site_dir, baseurl, queries, work, k):
        asked.update(site_dir=site_dir, queries=queries, k=k)
        return {"results": {"how to install": ["/guide/#usage", "/docs/guide/#linux", "/guide/#install"]}}

    monkeypatch.setitem(sys.modules, "pagefind_run", types.SimpleNamespace(pagefind_results=results))
    built = bench.BuiltSite(site / "out")
    ranks, pages = bench.pagefind_runs(built, [label(), bench.Label("q2", "nothing", "exact", "guide/index.html", "")],
                                       site / "work")
    assert ranks == {"Pagefind 1.6": [2, None]} and pages == {"Pagefind 1.6": [1, None]}
    assert asked == {"site_dir": built.output, "queries": ["how to install", "nothing"], "k": bench.K}
