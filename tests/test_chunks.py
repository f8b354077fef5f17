"""Chunks: every contract field, learns resolution, URLs and excerpts."""

from pathlib import Path

import pytest

from knowledge_build import extract, load_config
from knowledge_build.chunking.chunks import EXCERPT_CHARS
from knowledge_build.kinds import PART_TYPES
from knowledge_build.text.tex import readable

SITE = Path(__file__).parent.parent / "site"


@pytest.fixture(scope="module")
def chunks():
    return {c.id: c for c in extract(load_config(site=SITE, env={})).chunks}


def test_quadratic_formula_chunk_has_every_contract_field(chunks):
    chunk = chunks["二次方程式#rule-quadratic-formula"]
    assert chunk.material == "二次方程式"
    assert chunk.anchor == "rule-quadratic-formula"
    assert chunk.url == "/math-note/junior/二次方程式.html#rule-quadratic-formula"
    assert chunk.title == "解の公式"
    assert "\\frac{-b \\pm \\sqrt{b^2 - 4ac}}{2a}" in chunk.content
    assert chunk.type == "rule"
    assert chunk.category == "equations"
    assert chunk.level == "標準"
    assert chunk.prerequisites == ("因数分解", "平方根")
    assert chunk.learns_source == "yaml"
    assert len(chunk.content_hash) == 64


def test_learns_come_from_yaml_then_attribute_then_heuristic(chunks):
    sources = {c.learns_source for c in chunks.values()}
    assert sources == {"yaml", "attribute", "heuristic"}
    tasukigake = chunks["因数分解#method-tasukigake"]
    assert tasukigake.learns_source == "attribute"
    assert 3 <= len(tasukigake.learns) <= 5


def test_heuristic_learns_are_the_box_own_items_or_else_its_kind_templates(chunks):
    heuristic = [c for c in chunks.values() if c.learns_source == "heuristic" and c.type not in PART_TYPES]
    assert len(heuristic) == 78  # 121 boxes: 40 with yaml learns, 3 with data-learns
    templated = [c for c in heuristic if not c.embedded_learns]
    assert 0 < len(templated) < len(heuristic)
    for chunk in heuristic:
        assert 1 <= len(chunk.learns) <= 5, chunk.id
        if chunk in templated:
            assert chunk.title.split("とは")[0] in chunk.learns[0]
        else:
            assert all(line in readable(chunk.content) or "：" in line for line in chunk.learns), chunk.id


def test_examples_are_chunks_of_type_example(chunks):
    examples = [c for c in chunks.values() if c.anchor.startswith("ex-")]
    assert examples and all(c.type == "example" for c in examples)


def test_excerpt_is_short_and_skips_the_title(chunks):
    for chunk in chunks.values():
        assert len(chunk.excerpt) <= EXCERPT_CHARS + 1
        assert not chunk.excerpt.startswith(chunk.title)


def test_urls_are_baseurl_plus_permalink_plus_anchor(chunks):
    for chunk in (c for c in chunks.values() if c.type not in PART_TYPES):  # sections: tests/test_site_sections.py
        assert chunk.url.startswith("/math-note/")
        assert chunk.url.endswith(f".html#{chunk.anchor}")


def test_content_hash_changes_with_the_embedded_text_only(site_dir):
    before = {c.id: c.content_hash for c in extract(load_config(site=site_dir, env={})).chunks}
    page = site_dir / "junior" / "一次方程式.html"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("<strong>📌 移項</strong>", "<strong>📌 移項（いこう）</strong>"), encoding="utf-8")
    after = {c.id: c.content_hash for c in extract(load_config(site=site_dir, env={})).chunks}
    changed = [k for k in before if before[k] != after[k]]
    assert changed == ["一次方程式#rule-transposition"]


def test_permalink_front_matter_overrides_the_path(tmp_path):
    (tmp_path / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    (tmp_path / "p.html").write_text('---\ntitle: P\npermalink: /custom/page/\n---\n'
                                     '<div class="rule-box" id="rule-a"><strong>A</strong>本文</div>', encoding="utf-8")
    (chunk,) = extract(load_config(site=tmp_path, env={})).chunks
    assert chunk.url == "/custom/page/#rule-a"
