"""`check`: lint findings with file:line:col, rule and fix, in text, json and GitHub formats."""

import json
import shlex

from click.testing import CliRunner

from knowledge_build import load_config
from knowledge_build.checks.lint import check_site
from knowledge_build.cli import main


def _site(tmp_path, body: str, other: str | None = None, config: str = "baseurl: /b\n"):
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text(config, encoding="utf-8")
    front = "" if body.startswith("---") else "---\ntitle: t\n---\n"  # lines below count from 4
    (root / "p.html").write_text(front + body, encoding="utf-8")
    if other is not None:
        (root / "q.html").write_text(other, encoding="utf-8")
    return root


def _rules(root, **overrides):
    return [(d.rule, d.severity, d.line) for d in check_site(load_config(site=root, env={}, **overrides)).diagnostics]


def test_the_sample_site_has_only_its_four_unanchored_boxes(site_dir):
    result = check_site(load_config(site=site_dir, env={}))
    # index.html lists the materials with Liquid: its sections exist only once Jekyll renders it
    assert [(d.rule, d.severity) for d in result.diagnostics] == [("sections-need-render", "info")] + [
        ("missing-id", "warning")] * 4


def test_malformed_knowledge_ids_are_errors(tmp_path):
    root = _site(tmp_path, '<div class="rule-box" id="rule-Quadratic_formula"><strong>A</strong>x</div>')
    assert ("id-format", "error", 4) in _rules(root)


def test_prefix_that_contradicts_the_box_is_a_configurable_finding(tmp_path):
    root = _site(tmp_path, '<div class="tip-box" id="rule-a"><strong>A</strong>x</div>\n'
                           '<div class="rule-box" id="method-b"><strong>B</strong>x</div>')
    assert _rules(root) == [("prefix-mismatch", "warning", 4)]
    assert _rules(root, prefix_mismatch="error") == [("prefix-mismatch", "error", 4)]
    assert _rules(root, prefix_mismatch="off") == []


def test_duplicate_ids_of_any_kind_are_errors(tmp_path):
    root = _site(tmp_path, '<h2 id="s1">a</h2>\n<h2 id="s1">b</h2>\n'
                           '<div class="rule-box" id="rule-a"><b>A</b>x</div>\n<div class="rule-box" id="rule-a"><b>A</b>y</div>')
    assert sorted(_rules(root)) == [("duplicate-id", "error", 5), ("duplicate-id", "error", 7)]


def test_links_to_missing_anchors_in_page_and_across_pages_are_errors(tmp_path):
    root = _site(tmp_path,
                 '<div class="rule-box" id="rule-a"><b>A</b><a href="#ex-1">例1</a> <a href="#rule-a">ok</a></div>\n'
                 '<a href="/b/q.html#rule-q">ok</a> <a href="q.html#rule-gone">bad</a> <a href="/b/q.html#nope">bad</a>\n'
                 '<a href="https://example.com/#x">ext</a> <a href="{{ \'/q.html\' | relative_url }}#x">liquid</a>',
                 other='---\ntitle: q\n---\n<div class="rule-box" id="rule-q"><b>Q</b>x</div>')
    assert _rules(root) == [("broken-anchor", "error", 4), ("broken-anchor", "error", 5), ("broken-anchor", "error", 5)]


def test_toc_ids_missing_from_the_page_are_errors(tmp_path):
    root = _site(tmp_path, "---\ntitle: t\ntoc:\n  - id: s1\n    title: 一\n  - id: s2\n    title: 二\n---\n"
                           '<section id="s1">x</section>')
    diagnostics = check_site(load_config(site=root, env={})).diagnostics
    assert [(d.rule, d.message) for d in diagnostics] == [
        ("toc-missing", "front matter toc entry 's2' (二) has no element with that id in the page")]


def test_cli_text_output_names_file_line_col_rule_and_fix(tmp_path):
    root = _site(tmp_path, '<p>x</p>\n  <div class="tip-box"><strong>移項のコツ</strong>本文</div>\n')
    result = CliRunner().invoke(main, ["check", "--site", str(root)])
    assert result.exit_code == 0
    assert result.output == (
        "s/p.html:5:3: warning: [missing-id] tip-box 「移項のコツ」 has no id, so nothing can link to it. "
        "Fix: add id=\"tip-transposition\" (tip- from the title word 「コツ」), or run: "
        "knowledge-build suggest-ids --site s --write s/p.html\n0 error(s), 1 warning(s).\n")
    strict = CliRunner().invoke(main, ["check", "--site", str(root), "--strict"])
    assert strict.exit_code == 1


def test_the_hinted_suggest_ids_command_works_for_a_page_in_a_subfolder(tmp_path, monkeypatch):
    root = tmp_path / "site"
    (root / "図形").mkdir(parents=True)
    (root / "_config.yml").write_text("baseurl: /b\n", encoding="utf-8")
    (root / "図形" / "おうぎ形の弧と面積 教材.html").write_text(
        '---\ntitle: t\n---\n<div class="tip-box"><strong>移項のコツ</strong>本文</div>\n', encoding="utf-8")
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    result = CliRunner().invoke(main, ["check", "--site", "../site", "--format", "json"])
    [hint] = [d["fix"] for d in json.loads(result.output)["diagnostics"] if d["rule"] == "missing-id"]
    command = shlex.split(hint.split("or run: ", 1)[1])
    assert command[:2] == ["knowledge-build", "suggest-ids"]
    written = CliRunner().invoke(main, command[1:])
    assert written.exit_code == 0, written.output
    assert written.output.endswith("Wrote 1 id(s) into 1 file(s).\n")
    assert 'id="tip-transposition"' in (root / "図形" / "おうぎ形の弧と面積 教材.html").read_text(encoding="utf-8")


def test_cli_github_format_prints_workflow_annotations(tmp_path):
    root = _site(tmp_path, '<a href="#nowhere">x</a>\n')
    result = CliRunner().invoke(main, ["check", "--site", str(root), "--format", "github"])
    assert result.exit_code == 1
    assert result.output == ("::error file=s/p.html,line=4,col=1,title=broken-anchor::link '#nowhere' points to "
                             "#nowhere, but there is no such anchor on this page. Fix: fix the link or give the "
                             "target element that id\n")


def test_cli_json_format_is_machine_readable(tmp_path):
    root = _site(tmp_path, '<div class="rule-box"><strong>解の公式</strong>x</div>')
    data = json.loads(CliRunner().invoke(main, ["check", "--site", str(root), "--format", "json"]).output)
    assert data["summary"] == {"pages": 1, "errors": 0, "warnings": 1}
    assert data["diagnostics"][0]["rule"] == "missing-id" and data["diagnostics"][0]["path"] == "s/p.html"
