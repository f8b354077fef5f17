"""Bad input: each problem is a diagnostic with file:line and a fix; the build fails only
where its output can't be trusted, and never leaves half-written artifacts."""

import pytest
from click.testing import CliRunner

from knowledge_build import BuildFailed, SiteNotFound, build, extract, load_config
from knowledge_build.cli import main


def _site(tmp_path, pages: dict[str, bytes | str]):
    root = tmp_path / "s"
    root.mkdir()
    (root / "_config.yml").write_text("baseurl: /x\n", encoding="utf-8")
    for name, body in pages.items():
        data = body if isinstance(body, bytes) else body.encode("utf-8")
        (root / name).write_bytes(data)
    return root


GOOD = "---\ntitle: 良い\n---\n<div class=\"rule-box\" id=\"rule-good\"><strong>良い規則</strong>本文</div>\n"


def _rules(extraction):
    return {(d.severity, d.rule) for d in extraction.diagnostics}


def test_missing_site_dir_says_how_to_point_at_one(tmp_path):
    with pytest.raises(SiteNotFound, match="does not exist. Provide a --site flag, a KB_SITE"):
        extract(load_config(site=tmp_path / "nope", env={}))
    result = CliRunner().invoke(main, ["build", "--site", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "Error: site directory" in result.output


def test_invalid_utf8_is_an_error_with_line_and_column(tmp_path):
    bad = "---\ntitle: 壊れた\n---\n<p>ok</p>\n<p>".encode("utf-8") + b"\xff\xfe</p>\n"
    root = _site(tmp_path, {"good.html": GOOD, "bad.html": bad})
    extraction = extract(load_config(site=root, env={}))
    (diag,) = [d for d in extraction.diagnostics if d.rule == "invalid-utf8"]
    assert (diag.severity, diag.line, diag.col) == ("error", 5, 4)
    assert diag.path.endswith("bad.html") and "re-save the file as UTF-8" in diag.fix


def test_page_without_front_matter_is_indexed_with_a_warning(tmp_path):
    root = _site(tmp_path, {"raw.html": '<div class="tip-box" id="tip-a" class="tip-box"><strong>コツ</strong>本文</div>'})
    extraction = extract(load_config(site=root, env={}))
    assert ("warning", "no-front-matter") in _rules(extraction)
    assert [c.id for c in extraction.chunks] == ["raw#tip-a"]


def test_broken_front_matter_yaml_is_an_error_on_its_line(tmp_path):
    root = _site(tmp_path, {"p.html": "---\ntitle: a\nlevel: [unclosed\n---\n<div id=\"rule-a\">x</div>"})
    (diag,) = [d for d in extract(load_config(site=root, env={})).diagnostics if d.rule == "front-matter-yaml"]
    assert diag.severity == "error" and diag.line >= 3


def test_duplicate_ids_are_an_error_naming_both_lines(tmp_path):
    root = _site(tmp_path, {"p.html": GOOD + '<div class="rule-box" id="rule-good"><strong>二つ目</strong>本文</div>\n'})
    (diag,) = [d for d in extract(load_config(site=root, env={})).diagnostics if d.rule == "duplicate-id"]
    assert diag.severity == "error" and diag.line == 5 and "first at line 4" in diag.message


def test_empty_box_is_left_out_with_a_warning(tmp_path):
    root = _site(tmp_path, {"p.html": GOOD + '<div class="rule-box" id="rule-empty"> <svg><text>図</text></svg> </div>'})
    extraction = extract(load_config(site=root, env={}))
    assert ("warning", "empty-box") in _rules(extraction)
    assert [c.anchor for c in extraction.chunks] == ["rule-good"]


def test_malformed_html_is_a_warning_and_the_box_is_still_indexed(tmp_path):
    root = _site(tmp_path, {"p.html": "---\ntitle: t\n---\n<div class=\"rule-box\" id=\"rule-a\"><strong>規則</strong>"
                                      "<p>本文</span></div>\n"})
    extraction = extract(load_config(site=root, env={}))
    assert ("warning", "html-malformed") in _rules(extraction)
    assert [c.anchor for c in extraction.chunks] == ["rule-a"]


def test_an_error_fails_the_build_and_writes_nothing(tmp_path, fake_embedder):
    root = _site(tmp_path, {"good.html": GOOD, "dup.html": GOOD + GOOD.split("---\n")[-1]})
    with pytest.raises(BuildFailed, match="1 error"):
        build(load_config(site=root, env={}), embedder=fake_embedder)
    assert not (root / "_site").exists()
    assert fake_embedder.calls == 0


def test_cli_build_failure_prints_file_line_and_exits_non_zero(tmp_path):
    root = _site(tmp_path, {"dup.html": GOOD + GOOD.split("---\n")[-1]})
    result = CliRunner().invoke(main, ["build", "--site", str(root)])
    assert result.exit_code == 1
    assert "dup.html:5:1: error: [duplicate-id] id 'rule-good' is used twice" in result.output
    assert "no artifacts were written" in result.output


def test_warnings_alone_do_not_fail_the_build(tmp_path, fake_embedder):
    root = _site(tmp_path, {"good.html": GOOD, "raw.html": '<div class="tip-box" id="tip-a"><strong>T</strong>本文</div>'})
    result = build(load_config(site=root, env={}), embedder=fake_embedder)
    assert len(result.chunks) == 2 and any(d.severity == "warning" for d in result.diagnostics)


def test_broken_config_and_learns_yaml_are_errors_on_their_line(tmp_path):
    root = _site(tmp_path, {"good.html": GOOD})
    (root / "_config.yml").write_text("baseurl: /x\ntitle: [oops\n", encoding="utf-8")
    (root / "_data").mkdir()
    (root / "_data" / "learns.yml").write_text("- just\n- a list\n", encoding="utf-8")
    diagnostics = {d.rule: d for d in extract(load_config(site=root, env={})).diagnostics}
    assert diagnostics["config-yaml"].severity == "error" and diagnostics["config-yaml"].line >= 2
    assert "must map material -> anchor -> list of items" in diagnostics["learns-yaml"].message


def test_suggest_ids_and_install_search_refuse_a_site_whose_config_is_broken(tmp_path):
    root = _site(tmp_path, {"raw.html": '---\ntitle: t\n---\n<div class="rule-box"><strong>解の公式</strong>本文</div>\n'})
    (root / "_config.yml").write_text("baseurl: [unclosed\n", encoding="utf-8")
    before = (root / "raw.html").read_bytes()
    for args in (["suggest-ids", "--site", str(root), "--write"], ["install-search", "--site", str(root)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, result.output
        assert "1 error(s) in the site's settings; nothing was written" in result.output
        assert "_config.yml:2:1: error: [config-yaml] not valid YAML" in result.output
    assert (root / "raw.html").read_bytes() == before and not (root / "_includes").exists()


def test_report_with_a_broken_index_given_writes_the_report_and_exits_non_zero(tmp_path):
    root = _site(tmp_path, {"good.html": GOOD})
    broken = tmp_path / "index"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json", encoding="utf-8")
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", "--site", str(root), "--index", str(broken), "--out", str(out)])
    assert result.exit_code == 1 and out.is_file()
    assert f"wrote {out}, but the artifact set given cannot be read: manifest.json in" in result.output
    # Without --index, a site never built is no error: the report says there is no set yet.
    result = CliRunner().invoke(main, ["report", "--site", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output


def test_report_checks_every_file_of_the_set_it_names(tmp_path):
    from .conftest import LocalLookalike

    root = _site(tmp_path, {"good.html": GOOD})
    build(load_config(site=root, env={}, cache_dir=tmp_path / "cache"), embedder=LocalLookalike())
    index = root / "_site" / "knowledge" / "v2"
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", "--site", str(root), "--index", str(index), "--out", str(out)])
    assert result.exit_code == 0, result.output
    chunks = index / "knowledge_chunks.jsonl"
    data = bytearray(chunks.read_bytes())
    data[len(data) // 2] ^= 1  # same size, one bit: only the checksum tells
    chunks.write_bytes(bytes(data))
    result = CliRunner().invoke(main, ["report", "--site", str(root), "--index", str(index), "--out", str(out)])
    assert result.exit_code == 1 and "'knowledge_chunks.jsonl'" in result.output and "sha256 differs" in result.output
