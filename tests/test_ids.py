"""Semantic ids: readable suggestions, explained prefixes, and byte-exact write-back."""

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge_build import extract, load_config
from knowledge_build.checks.lint import plans_for
from knowledge_build.cli import main
from knowledge_build.site.ids import FileChanged, choose_prefix, write_plan
from knowledge_build.text.slugs import load_glossary, slug_for

INSERTED = re.compile(rb' id="(rule|method|def|ex|tip)-[a-z0-9]+(-[a-z0-9]+)*"')


def test_suggestions_for_core_terms_are_readable_slugs(data_regression):
    glossary = load_glossary()
    titles = ["たすき掛け", "解の公式", "判別式", "移項", "平方完成", "たすき掛けによる因数分解", "平方完成の手順",
              "判別式とは", "移項のコツ", "例題：解の公式を使う", "コツ2：\\(\\pi\\) は最後まで残す", "ベクトルの内積"]
    data_regression.check({t: slug_for(t, glossary) for t in titles})


@pytest.mark.parametrize("box, title, prefix, because", [
    ("rule-box", "解の公式", "rule", "title word 「公式」"),
    ("rule-box", "平方完成の手順", "method", "title word 「手順」"),
    ("rule-box", "判別式とは", "def", "title word 「とは」"),
    ("rule-box", "計算のポイント", "rule", "box class rule-box"),
    ("tip-box", "移項のコツ", "tip", "title word 「コツ」"),
    ("example-box", "連立方程式", "ex", "box class example-box"),
    ("def-box", "方程式の解", "def", "box class def-box"),
    ("", "何かの説明", "rule", "by default"),
])
def test_prefix_comes_from_box_class_and_title_words_with_a_reason(box, title, prefix, because):
    chosen, reason = choose_prefix(box, title)
    assert chosen == prefix and because in reason


def _page(tmp_path, body: str, name="p.html", newline="\n") -> bytes:
    root = tmp_path / "s"
    root.mkdir(exist_ok=True)
    (root / "_config.yml").write_text("baseurl: ''\n", encoding="utf-8")
    data = body.replace("\n", newline).encode("utf-8")
    (root / name).write_bytes(data)
    return data


def _strip_inserted(data: bytes) -> bytes:
    return INSERTED.sub(b"", data)


def test_write_inserts_only_the_id_attribute_with_front_matter_liquid_and_crlf(tmp_path):
    body = ("---\ntitle: テスト\ntoc:\n  - id: s1\n---\n{% include note.html %}\n<section id=\"s1\">\n"
            "<div class=\"rule-box\"><strong>📌 解の公式</strong>{{ page.title }}</div>\n"
            "<DIV data-x='1' class='tip-box big'  ><b>移項のコツ</b></DIV>\n"
            "<div class=\"example-box\"><div class=\"example-title\">例1</div>本文</div>\n</section>\n")
    original = _page(tmp_path, body, newline="\r\n")
    (plan,) = plans_for(load_config(site=tmp_path / "s", env={}))
    assert [s.id for s in plan.suggestions] == ["rule-quadratic-formula", "tip-transposition", "ex-tesuto-1"]
    assert write_plan(plan) == 3
    written = (tmp_path / "s" / "p.html").read_bytes()
    assert _strip_inserted(written) == original
    assert b'<div id="rule-quadratic-formula" class="rule-box">' in written
    assert b"<DIV id=\"tip-transposition\" data-x='1' class='tip-box big'  >" in written
    assert written.count(b"\r\n") == original.count(b"\r\n")


def test_write_is_idempotent(tmp_path):
    _page(tmp_path, '<div class="rule-box"><strong>判別式</strong>本文</div>')
    config = load_config(site=tmp_path / "s", env={})
    (plan,) = plans_for(config)
    write_plan(plan)
    once = (tmp_path / "s" / "p.html").read_bytes()
    (again,) = plans_for(config)
    assert again.suggestions == [] and write_plan(again) == 0
    assert (tmp_path / "s" / "p.html").read_bytes() == once


def test_write_refuses_a_file_changed_since_it_was_read(tmp_path):
    _page(tmp_path, '<div class="rule-box"><strong>移項</strong>本文</div>')
    (plan,) = plans_for(load_config(site=tmp_path / "s", env={}))
    path = tmp_path / "s" / "p.html"
    path.write_bytes(path.read_bytes() + b"<p>edited</p>")
    with pytest.raises(FileChanged, match="changed since it was read; nothing was written"):
        write_plan(plan)
    assert b"id=" not in path.read_bytes()


def test_suggestions_are_unique_in_the_page_and_never_collide(tmp_path):
    _page(tmp_path, '<p id="rule-transposition">既存</p>'
                    '<div class="rule-box"><strong>移項</strong>一</div>'
                    '<div class="rule-box"><strong>移項</strong>二</div>')
    (plan,) = plans_for(load_config(site=tmp_path / "s", env={}))
    assert [s.id for s in plan.suggestions] == ["rule-transposition-2", "rule-transposition-3"]
    (again,) = plans_for(load_config(site=tmp_path / "s", env={}))
    assert [s.id for s in again.suggestions] == [s.id for s in plan.suggestions]


def test_box_with_a_non_knowledge_id_is_reported_not_rewritten(tmp_path):
    original = _page(tmp_path, '<div class="rule-box" id="formula"><strong>解の公式</strong>本文</div>')
    (plan,) = plans_for(load_config(site=tmp_path / "s", env={}))
    (suggestion,) = plan.suggestions
    assert suggestion.existing_id == "formula" and not suggestion.writable
    assert write_plan(plan) == 0
    assert (tmp_path / "s" / "p.html").read_bytes() == original


_TITLES = st.sampled_from(["解の公式", "たすき掛け", "判別式", "移項のコツ", "平方完成の手順", "例題", "グラフ", "x"])
_CLASSES = st.sampled_from(["rule-box", "tip-box", "example-box", "def-box", "method-box"])


@st.composite
def _html(draw):
    parts = []
    if draw(st.booleans()):
        parts.append("---\ntitle: ページ\nlevel: 基礎\n---\n")
    for i in range(draw(st.integers(1, 6))):
        cls = draw(_CLASSES)
        attrs = [f'class="{cls}"']
        if draw(st.booleans()):
            attrs.append(f"id='rule-existing-{i}'")
        if draw(st.booleans()):
            attrs.insert(0, "data-n='%d'" % i)
        space = draw(st.sampled_from(["", " ", "  "]))
        filler = draw(st.sampled_from(["", "{% if x %}条件{% endif %}", "<!-- <div class=\"rule-box\"> -->", "\t"]))
        parts.append(f"<div {' '.join(attrs)}{space}><strong>{draw(_TITLES)}</strong>{filler}本文{i}</div>")
        parts.append(draw(st.sampled_from(["\n", "\r\n", "\n\n", " "])))
    return "".join(parts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_html())
def test_write_changes_nothing_but_the_inserted_attributes(tmp_path_factory, html):
    tmp_path = tmp_path_factory.mktemp("prop")
    original = _page(tmp_path, html)
    config = load_config(site=tmp_path / "s", env={})
    plans = plans_for(config)
    for plan in plans:
        write_plan(plan)
    written = (tmp_path / "s" / "p.html").read_bytes()
    assert _strip_inserted(written) == original
    assert len(INSERTED.findall(written)) == sum(s.writable for p in plans for s in p.suggestions)
    page = extract(config).pages[0]
    assert [b for b in page.unanchored if b.id is None] == []


def test_cli_suggest_ids_explains_and_writes(site_dir):
    runner = CliRunner()
    result = runner.invoke(main, ["suggest-ids", "--site", str(site_dir)])
    assert result.exit_code == 0
    assert "site/junior/平方根.html:81:3: tip-box 「覚えておくと便利な近似値」 -> tip-benri-approximation  [tip- from the box class tip-box]" in result.output
    assert "4 suggestion(s). Run again with --write to insert them." in result.output
    result = runner.invoke(main, ["suggest-ids", str(site_dir / "senior"), "--write"])
    assert result.exit_code == 0 and "Wrote 2 id(s) into 1 file(s)." in result.output
    result = runner.invoke(main, ["suggest-ids", "--site", str(site_dir), "--format", "json"])
    assert [s["title"] for s in __import__("json").loads(result.output)["suggestions"]] == [
        "傾きの符号とグラフの向き", "覚えておくと便利な近似値"]


def test_glossary_setting_adds_site_terms(tmp_path):
    extra = tmp_path / "glossary.yml"
    extra.write_text("近似値: approx-values\n", encoding="utf-8")
    assert slug_for("近似値を覚える", load_glossary(extra)) == "approx-values"
    shutil.rmtree(tmp_path / "nothing", ignore_errors=True)


@pytest.mark.parametrize("box", ["rule-box", "tip-box", "example-box", ""])
@pytest.mark.parametrize("title", ["練習1", "練習②：解法を選んで解く", "演習3", "問題 2：次の式を展開しなさい"])
def test_a_practice_problem_is_an_example_whatever_its_box_class(box, title):
    prefix, reason = choose_prefix(box, title)
    assert prefix == "ex" and "label" in reason


def test_a_title_that_is_only_a_label_takes_the_page_topic_and_keeps_its_number():
    glossary = load_glossary()
    assert slug_for("練習1", glossary, "解の公式") == "quadratic-formula-1"
    assert slug_for("練習②", glossary, "コツ：解の公式") == "quadratic-formula-2"
    assert slug_for("練習3：解の公式を使う", glossary, "判別式") == "quadratic-formula"  # words of its own
    assert slug_for("練習4", glossary, "とてもとても長いページの題名と解の公式と判別式と移項").endswith("-4")


def test_practice_boxes_in_a_rule_box_get_example_ids_named_after_the_page(tmp_path):
    _page(tmp_path, "---\ntitle: 解の公式\n---\n"
                    '<div class="rule-box"><strong>練習1</strong>一</div>'
                    '<div class="rule-box"><strong>練習2</strong>二</div>'
                    '<div class="rule-box"><strong>1</strong>三</div>')
    (plan,) = plans_for(load_config(site=tmp_path / "s", env={}))
    ids = [s.id for s in plan.suggestions]
    assert ids == ["ex-quadratic-formula-1", "ex-quadratic-formula-2", "rule-quadratic-formula-1"]
    assert not [i for i in ids if re.fullmatch(r"(rule|method|def|ex|tip)-\d+", i)]


@pytest.mark.parametrize("title", [
    "コツ3：弧の長さが分かっているなら \\(A = \\frac{1}{2}\\ell r\\) が速い",
    "正規分布 \\(N(\\mu, \\sigma^2)\\)",
    "特性方程式（\\(a_{n+1} = pa_n + q\\) 型）",
    "\\(\\sqrt{x}\\) と \\[\\dfrac{a}{b}\\]",
    "\\(\\pi\\)",
])
def test_a_slug_never_contains_tex(title):
    slug = slug_for(title, load_glossary(), "解の公式")
    commands = re.findall(r"\\([A-Za-z]+)", title)
    assert slug and not set(slug.split("-")) & {c.lower() for c in commands}, slug
    assert not {"n", "a", "b", "x", "q", "r", "1", "2"} & set(slug.split("-")), slug


@pytest.mark.parametrize("title, slug", [
    ("正多角形の外角", "regular-polygon-exterior-angle"),  # not tadashi: read in context
    ("度数分布表は「正」の字でカウント", "frequency-table-sei-ji-kaunto"),
    ("二次式なら判別式", "niji-shiki-discriminant"),  # not ni-tsugi
    ("等比数列の和の公式", "geometric-sequence-sum-formula"),  # no romaji wa beside English
    ("面積なら2乗", "area-square"),
    ("イメージする", "imeji"),  # the long-vowel mark is no hyphen
])
def test_slug_words_are_read_in_context_and_sums_are_english(title, slug):
    assert slug_for(title, load_glossary(Path(__file__).parents[1] / "knowledge_build" / "data" / "glossary.yml")) == slug
