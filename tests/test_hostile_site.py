"""A hostile or broken site, run through the CLI as a user would: every problem ends in
`file:line: error: … Fix: …` or one clear line and exit status 1 — never a traceback, a hang,
a silent loss or a half-written file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build import build, extract, load_config
from knowledge_build.cli import main
from knowledge_build.kinds import PART_TYPES

TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120"))
BOX = '<div class="rule-box" id="rule-last"><strong>最後の規則</strong>本文</div>\n'
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _site(tmp_path, pages: dict[str, str], config: str = "baseurl: /x\n") -> Path:
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text(config, encoding="utf-8")
    for name, body in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")
    return root


def _run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _anchors(root) -> list[str]:
    """The anchors of the boxes extracted (the text around them is in section chunks)."""
    return [c.anchor for c in extract(load_config(site=root, env={})).chunks if c.type not in PART_TYPES]


# --- item 4: parser limits ---------------------------------------------------------------


def test_box_after_300_nested_divs_is_indexed(tmp_path):
    page = "---\ntitle: t\n---\n" + "<div>" * 300 + "深い\n" + "</div>" * 300 + "\n" + BOX
    root = _site(tmp_path, {"p.html": page})
    assert _anchors(root) == ["rule-last"]
    assert _run("check", "--site", root, "--strict").exit_code == 0


def test_box_after_an_11_mb_text_node_is_indexed(tmp_path):
    page = "---\ntitle: t\n---\n<p>" + "あ" * (4 * 1024 * 1024) + "</p>\n" + BOX
    root = _site(tmp_path, {"p.html": page})
    assert len(page.encode()) > 11 * 1024 * 1024
    assert _anchors(root) == ["rule-last"]


def test_nesting_beyond_the_parser_limit_is_an_error_and_fails_strict_check(tmp_path):
    page = "---\ntitle: t\n---\n<p>x</p>\n" + "<div>\n" * 2100 + "深い" + "</div>" * 2100 + "\n" + BOX
    root = _site(tmp_path, {"p.html": page})
    result = _run("check", "--site", root, "--strict")
    assert result.exit_code == 1
    assert "s/p.html:" in result.output and ": error: [html-truncated] the HTML parser stopped at line" in result.output
    assert "Fix: nest elements less deeply" in result.output
    assert "0 error(s)" not in result.output


def test_text_of_a_box_nested_deeper_than_the_recursion_limit_is_read(tmp_path):
    inner = "<span>" * 1500 + "奥の本文" + "</span>" * 1500
    root = _site(tmp_path, {"p.html": f'---\ntitle: t\n---\n<div class="rule-box" id="rule-deep"><strong>題</strong>{inner}</div>\n'})
    (chunk,) = extract(load_config(site=root, env={})).chunks
    assert "奥の本文" in chunk.content


def test_box_after_the_closing_html_tag_is_an_error_not_a_silent_loss(tmp_path):
    # libxml2 drops markup after </html> without any message.
    root = _site(tmp_path, {"p.html": "---\ntitle: t\n---\n<html><body><p>x</p></body></html>\n" + BOX})
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert ("s/p.html:5:1: error: [html-lost] box 'rule-last' is not in the parsed page (the HTML parser "
            "dropped it), so it is not indexed. Fix: move it inside <body>") in result.output


def test_a_knowledge_id_in_a_comment_is_not_reported_as_lost(tmp_path):
    root = _site(tmp_path, {"p.html": '---\ntitle: t\n---\n<!-- <div class="rule-box" id="rule-old">古い</div> -->\n' + BOX})
    assert _run("check", "--site", root, "--strict").exit_code == 0


# --- item 5: YAML aliases -----------------------------------------------------------------

BOMB = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else '"lol"'] * 9) + "]\n" for i in range(9))


def test_alias_bomb_in_front_matter_is_refused_on_its_line(tmp_path):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n{BOMB}---\n{BOX}"})
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert ("s/p.html:4:10: error: [front-matter-yaml] YAML alias '*l0' is not allowed. Fix: write the value out "
            "instead of referring to an anchor (&name / *name)") in result.output


@pytest.mark.parametrize("where, rule", [("_config.yml", "config-yaml"), ("_data/learns.yml", "learns-yaml")])
def test_alias_bomb_in_site_yaml_is_refused_on_its_line(tmp_path, where, rule):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}"})
    (root / where).parent.mkdir(exist_ok=True)
    (root / where).write_text(BOMB, encoding="utf-8")
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert f"s/{where}:2:10: error: [{rule}] YAML alias '*l0' is not allowed." in result.output


def test_alias_in_knowledge_yml_or_generated_learns_is_one_clear_line(tmp_path):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}"})
    (tmp_path / "knowledge.yml").write_text("exclude: &a [x]\nbox_classes: *a\n", encoding="utf-8")
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "knowledge.yml:2:14: YAML alias '*a' is not allowed" in result.output
    (tmp_path / "knowledge.yml").write_text("generated_learns: gen.yml\n", encoding="utf-8")
    (tmp_path / "gen.yml").write_text(BOMB, encoding="utf-8")
    result = _run("check", "--site", root)
    assert result.exit_code == 1 and "gen.yml:2:10: YAML alias '*l0' is not allowed" in result.output


def test_yaml_larger_than_the_limit_and_aliases_in_a_glossary_are_refused(tmp_path):
    from knowledge_build import yamlfile

    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}"})
    (tmp_path / "knowledge.yml").write_text("glossary: terms.yml\n", encoding="utf-8")
    (tmp_path / "terms.yml").write_text("移項: &t transposition\n符号: *t\n", encoding="utf-8")
    result = _run("check", "--site", root)
    assert result.exit_code == 1 and "terms.yml:2:5: YAML alias '*t' is not allowed" in result.output
    (tmp_path / "terms.yml").write_text("移項: transposition\n", encoding="utf-8")
    assert _run("check", "--site", root).exit_code == 0
    with pytest.raises(yamlfile.YamlError, match="^big.yml:1:1: YAML document of 10000001 characters is larger "
                       "than the limit of 10000000. Fix: split it into smaller files.$"):
        yamlfile.load("#" * 10_000_001, "big.yml")


@pytest.mark.parametrize("front, message", [
    ("level: " + "[" * 100_000, "YAML nested more than 100 levels deep"),
    ("date: 2024-13-45", "the value cannot be read (month must be in 1..12)"),
    ("n: " + "1" * 5000, "the value cannot be read (Exceeds the limit"),
])
def test_yaml_that_would_crash_the_reader_is_an_error_on_its_line(tmp_path, front, message):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n{front}\n---\n{BOX}"})
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert "s/p.html:3:" in result.output and f"error: [front-matter-yaml] {message}" in result.output


# --- item 7: shapes and files -------------------------------------------------------------


@pytest.mark.parametrize("front, line, message", [
    ("related: 5", 3, "front matter 'related' must be a list of entries, not int '5'; it is ignored"),
    ("toc: true", 3, "front matter 'toc' must be a list of entries, not bool 'True'; it is ignored"),
    ("related:\n  - just a string", 4, "front matter 'related' entry 1 is not a mapping; it is ignored"),
    ("title:\n  - a\n  - b", 4, "front matter 'title' must be a single value, not a list; it is ignored"),
    ("permalink: {a: 1}", 3, "front matter 'permalink' must be a single value, not a mapping; it is ignored"),
])
def test_front_matter_of_the_wrong_shape_is_a_warning_on_its_line(tmp_path, fake_embedder, front, line, message):
    root = _site(tmp_path, {"p.html": f"---\nlevel: 標準\n{front}\n---\n{BOX}"})
    result = _run("check", "--site", root)
    assert result.exit_code == 0
    assert f"s/p.html:{line}:1: warning: [front-matter-shape] {message}." in result.output
    assert _run("check", "--site", root, "--strict").exit_code == 1
    assert [c.anchor for c in build(load_config(site=root, env={}), embedder=fake_embedder).chunks] == ["rule-last"]


@pytest.mark.parametrize("config, line, message", [
    ("- baseurl\n- /x\n", 1, "_config.yml must be a mapping of settings"),
    ("baseurl: /x\nexclude: 5\n", 2, "exclude must be a list of paths or patterns"),
    ("baseurl: [a, b]\n", 1, "baseurl must be a single value, not a list"),
    ("destination: {a: 1}\n", 1, "destination must be a single value, not a mapping"),
])
def test_config_of_the_wrong_shape_is_an_error_on_its_line(tmp_path, config, line, message):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}"}, config=config)
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert f"s/_config.yml:{line}:1: error: [config-yaml] {message}." in result.output


@pytest.mark.parametrize("learns, line, message", [
    ("p: [a, b]\n", 1, "learns of 'p' must map anchors to lists of items"),
    ("p:\n  rule-last: 一つだけ\n", 2, "learns of 'p#rule-last' must be a list of texts"),
    ("p:\n  rule-last:\n    - {a: 1}\n", 3, "learns of 'p#rule-last' must be a list of texts"),
])
def test_learns_of_the_wrong_shape_are_errors_on_their_line(tmp_path, learns, line, message):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}"})
    (root / "_data").mkdir()
    (root / "_data" / "learns.yml").write_text(learns, encoding="utf-8")
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert f"s/_data/learns.yml:{line}:1: error: [learns-yaml] {message}." in result.output


def test_dangling_symlink_directory_and_fifo_named_html_are_skipped_without_hanging(tmp_path):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}"})
    (root / "gone.html").symlink_to(root / "missing.html")
    (root / "dir.html").mkdir()
    os.mkfifo(root / "pipe.html")
    # A subprocess, so that a regression (blocking on the FIFO) fails the test instead of hanging it.
    result = subprocess.run([sys.executable, "-m", "knowledge_build.cli", "check", "--site", str(root)],
                            capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert ("s/gone.html:1:1: warning: [page-skipped] gone.html is a symlink to "
            f"'{root / 'missing.html'}', which does not exist; it is skipped") in result.stdout
    assert ("s/pipe.html:1:1: warning: [page-skipped] pipe.html is a named pipe (FIFO), not a page; "
            "it is skipped. Fix: replace it with a regular file or remove it") in result.stdout
    assert "dir.html" not in result.stdout


def test_unreadable_page_is_an_error_with_its_path_and_fix(tmp_path, monkeypatch):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}", "locked.html": f"---\ntitle: t\n---\n{BOX}"})
    locked = str(root / "locked.html")
    real_open = os.open

    def deny(path, *args, **kwargs):  # what chmod 000 does for a user who is not root
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    for command in ("check", "suggest-ids"):
        result = _run(command, "--site", root)
        assert result.exit_code == 1, command
        assert ("s/locked.html:1:1: error: [page-unreadable] the page cannot be read (permission denied). "
                f"Fix: make it readable (chmod a+r '{locked}')") in result.output


def test_unreadable_directory_is_an_error_not_a_silent_loss(tmp_path, monkeypatch):
    root = _site(tmp_path, {"p.html": f"---\ntitle: t\n---\n{BOX}", "locked/q.html": f"---\ntitle: t\n---\n{BOX}"})
    real_scandir = os.scandir

    def deny(path="."):  # what chmod 000 on the directory does for a user who is not root
        if Path(path) == root / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", deny)
    result = _run("check", "--site", root)
    assert result.exit_code == 1
    assert ("s/locked:1:1: error: [directory-unreadable] the directory cannot be read (Permission denied); pages in "
            f"it are not indexed. Fix: make it readable (chmod a+rx '{root / 'locked'}')") in result.output


@pytest.mark.skipif(IS_ROOT, reason="root reads chmod-000 files; the monkeypatched test above covers it")
def test_chmod_000_page_is_an_error_for_a_normal_user(tmp_path):
    root = _site(tmp_path, {"locked.html": f"---\ntitle: t\n---\n{BOX}"})
    (root / "locked.html").chmod(0)
    result = _run("check", "--site", root)
    assert result.exit_code == 1 and "error: [page-unreadable]" in result.output


def _unanchored_site(tmp_path) -> Path:
    return _site(tmp_path, {"p.html": '---\ntitle: t\n---\n<div class="tip-box"><strong>移項のコツ</strong>本文</div>\n'})


def test_suggest_ids_write_into_a_read_only_directory_is_one_line_and_changes_nothing(tmp_path, monkeypatch):
    root = _unanchored_site(tmp_path)
    before = (root / "p.html").read_bytes()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: mode != os.W_OK and real_access(p, mode, **kw)
                        if Path(p) == root else real_access(p, mode, **kw))
    result = _run("suggest-ids", "--site", root, "--write")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {root / 'p.html'}: cannot write the ids ({root} is read-only); "
                                    "the file is unchanged. Fix: make the file and its directory writable")
    assert (root / "p.html").read_bytes() == before
    assert sorted(p.name for p in root.iterdir()) == ["_config.yml", "p.html"]


def test_suggest_ids_write_failure_during_the_write_is_one_line(tmp_path, monkeypatch):
    root = _unanchored_site(tmp_path)
    before = (root / "p.html").read_bytes()

    def refuse(path, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("knowledge_build.site.ids.atomic_write", refuse)
    result = _run("suggest-ids", "--site", root, "--write")
    assert result.exit_code == 1
    assert "p.html: cannot write the ids (Permission denied); the file is unchanged." in result.output
    assert (root / "p.html").read_bytes() == before


@pytest.mark.skipif(IS_ROOT, reason="root writes into read-only directories; the monkeypatched tests cover it")
def test_suggest_ids_write_into_a_really_read_only_directory(tmp_path):
    root = _unanchored_site(tmp_path)
    root.chmod(0o555)
    try:
        result = _run("suggest-ids", "--site", root, "--write")
    finally:
        root.chmod(0o755)
    assert result.exit_code == 1 and "is read-only); the file is unchanged" in result.output


# --- item 9: CI annotation injection ------------------------------------------------------


def test_github_annotations_escape_file_names_and_messages(tmp_path):
    root = _site(tmp_path, {"a,line=1\n::error file=x.html": '<a href="#nowhere">x</a>\n'})
    result = _run("check", "--site", root, "--format", "github")
    assert result.exit_code == 1
    assert result.output == ("::error file=s/a%2Cline=1%0A%3A%3Aerror file=x.html,line=1,col=1,title=broken-anchor::"
                             "link '#nowhere' points to #nowhere, but there is no such anchor on this page. "
                             "Fix: fix the link or give the target element that id\n")


def test_text_output_cannot_start_a_line_with_a_workflow_command(tmp_path, monkeypatch):
    root = _site(tmp_path, {"::warning x.html": '<a href="#a\n::error file=y::forged\x1b[2J">x</a>\n'})
    monkeypatch.chdir(root)
    result = _run("check", "--site", root)
    lines = result.output.splitlines()
    assert result.exit_code == 1 and len(lines) == 2
    assert not any(line.startswith("::") for line in lines)
    assert lines[0].startswith("./::warning x.html:1:1: error: [broken-anchor] link '#a\\n::error file=y::forged\\x1b[2J'")


def test_suggest_ids_prints_control_characters_of_titles_as_escapes(tmp_path):
    root = _site(tmp_path, {"p.html": '<div class="tip-box"><strong>コツ\x1b]0;pwned\x07</strong>本文</div>\n'})
    result = _run("suggest-ids", "--site", root)
    assert "「コツ\\x1b]0;pwned\\x07」" in result.output and "\x1b" not in result.output


# --- item 10: suggest-ids --write ---------------------------------------------------------


def test_tag_with_two_class_attributes_is_refused_and_its_neighbour_untouched(tmp_path):
    # lxml takes the first class, the tag locator used to take the last: the id meant for the
    # first box went into the second tag.
    page = ('---\ntitle: t\n---\n<div class="tip-box" class="x"><strong>移項のコツ</strong>A</div>\n'
            '<div class="x" class="tip-box"><strong>符号のコツ</strong>B</div>\n')
    root = _site(tmp_path, {"p.html": page, "q.html": '<div class="tip-box"><strong>移項のコツ</strong>C</div>\n'})
    result = _run("suggest-ids", "--site", root, "--write")
    assert result.exit_code == 1
    assert "Wrote 1 id(s) into 1 file(s)." in result.output and 'id="tip-transposition"' in (root / "q.html").read_text()
    assert ("s/p.html:4:1: error: [duplicate-attribute] <div> has more than one class attribute; browsers use the "
            "first (class=\"tip-box\") and the id tools refuse to guess. Fix: merge them into one class attribute"
            ) in result.output
    assert (root / "p.html").read_text(encoding="utf-8") == page
    check = _run("check", "--site", root)
    assert check.exit_code == 1 and check.output.count("[duplicate-attribute]") == 2


def test_suggest_ids_write_goes_through_a_symlinked_page_and_keeps_the_link(tmp_path):
    root = _unanchored_site(tmp_path)
    real = tmp_path / "shared-pages" / "real.html"
    real.parent.mkdir()
    (root / "p.html").rename(real)
    (root / "p.html").symlink_to(real)
    result = _run("suggest-ids", "--site", root, "--write")
    assert result.exit_code == 0 and "Wrote 1 id(s) into 1 file(s)." in result.output
    assert (root / "p.html").is_symlink() and (root / "p.html").resolve() == real
    assert '<div id="tip-transposition" class="tip-box">' in real.read_text(encoding="utf-8")
    assert json.loads(_run("suggest-ids", "--site", root, "--format", "json").output)["suggestions"] == []


@pytest.mark.parametrize("permalink, baseurl, path", [
    ("//evil.example/steal/", "", "/evil.example/steal/"),          # as Jekyll writes it: a path on the site
    ("///evil.example/steal/", "/x", "/x/evil.example/steal/"),
    ('"/\\\\evil.example/steal/"', "", "/%5Cevil.example/steal/"),   # a browser reads /\host as //host
    ('"/\\t/evil.example/steal/"', "", "/%09/evil.example/steal/"),   # … and drops the tab
    ("https://evil.example/steal/", "", "/https:/evil.example/steal/"),
])
def test_a_permalink_naming_another_host_stays_a_path_on_the_site(tmp_path, permalink, baseurl, path):
    page = f"---\ntitle: t\npermalink: {permalink}\n---\n{BOX}"
    root = _site(tmp_path, {"p.html": page}, config=f"baseurl: {baseurl}\n" if baseurl else "title: s\n")
    from .conftest import FakeEmbedder

    output = build(load_config(site=root, output=tmp_path / "out", sections="off", env={}), embedder=FakeEmbedder()).output
    rows = [json.loads(line) for line in (output / "knowledge_chunks.jsonl").read_text().splitlines()]
    assert [row["url"] for row in rows] == [f"{path}#rule-last"]
    assert all(not row["url"].startswith("//") and "\\" not in row["url"] for row in rows)
