"""`validate`: the index against the HTML, and the artifact set's integrity."""

import json
import re

import pytest
from click.testing import CliRunner

from knowledge_build import build, load_config
from knowledge_build.checks.validate import validate_site
from knowledge_build.index.artifacts import build_id_of
from knowledge_build.cli import main

from .conftest import LocalLookalike


@pytest.fixture
def schema():
    return 2  # the only schema a build writes


@pytest.fixture
def indexed(site_dir, schema, build_copies):
    """`site_dir`, built (made once per run per schema, copied here: see conftest.BuildCopies)."""
    def configure(site):
        return load_config(site=site, env={"KB_CACHE_DIR": str(site.parent / "cache")}, artifact_schema=schema)

    build_copies(f"validate-v{schema}", configure, LocalLookalike, site_dir.parent)
    return site_dir


def _findings(site):
    return [(d.rule, d.severity, d.path.rsplit("/", 1)[-1]) for d in validate_site(load_config(site=site, env={}))]


def test_a_fresh_index_validates_clean(indexed):
    assert _findings(indexed) == []
    result = CliRunner().invoke(main, ["validate", "--site", str(indexed)])
    assert result.exit_code == 0 and result.output == "0 error(s), 0 warning(s).\n"


def test_an_anchor_renamed_after_the_build_is_an_error(indexed):
    page = indexed / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace('id="rule-transposition"', 'id="rule-iko"'),
                    encoding="utf-8")
    findings = _findings(indexed)
    assert ("stale-anchor", "error", "一次方程式.html") in findings
    assert ("not-indexed", "warning", "一次方程式.html") in findings
    result = CliRunner().invoke(main, ["validate", "--site", str(indexed)])
    assert result.exit_code == 1
    assert ("the index links '/math-note/junior/一次方程式.html#rule-transposition', but rule-transposition is "
            "no longer in the HTML") in result.output


def test_a_new_box_without_a_rebuild_is_a_warning(indexed):
    page = indexed / "junior" / "平方根.html"
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("</section>", '<div class="tip-box" id="tip-new"><strong>新しいコツ</strong>本文</div>'
                                 "</section>", 1), encoding="utf-8")
    assert _findings(indexed) == [("not-indexed", "warning", "平方根.html")]
    assert CliRunner().invoke(main, ["validate", "--site", str(indexed)]).exit_code == 0
    assert CliRunner().invoke(main, ["validate", "--site", str(indexed), "--strict"]).exit_code == 1


def test_edited_box_text_is_a_stale_content_warning(indexed):
    page = indexed / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace("符号を変えて", "符号を反対にして", 1), encoding="utf-8")
    assert ("stale-content", "warning", "一次方程式.html") in _findings(indexed)


def test_a_damaged_artifact_set_is_an_integrity_error(indexed, schema):
    found = (r"artifact 'rows\.npy' in '.*/knowledge/v2' cannot be used \(holds .* \(171,\), the manifest's counts need "
             r".* \(172,\)\)")
    index = indexed / "_site" / "knowledge" / f"v{schema}"
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    manifest["counts"]["chunks"] += 1
    manifest["build_id"] = build_id_of(manifest)  # a consistent forgery: only the content checks see it
    (index / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", "--site", str(indexed), "--format", "json"])
    assert result.exit_code == 1
    (finding,) = json.loads(result.output)["diagnostics"]
    assert finding["rule"] == "artifact-integrity" and re.search(found, finding["message"]), finding["message"]


@pytest.mark.parametrize("field, value", [
    (("site", "url"), "https://attacker.example"), (("site", "baseurl"), "/elsewhere"),
    (("site", "name"), "別のサイト"), (("embedder", "provider"), "openai"), (("embedder", "model"), "other"),
    (("lexical", "analyzer"), "other"), (("counts", "materials"), 99)])
def test_an_edited_manifest_field_is_refused_by_validate_and_search_in_one_line(indexed, schema, field, value):
    index = indexed / "_site" / "knowledge" / f"v{schema}"
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    manifest[field[0]][field[1]] = value
    (index / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    expected = (f"artifact set '{index}': the manifest's build_id is '{manifest['build_id']}', but its file checksums "
                "and fields give '")
    result = CliRunner().invoke(main, ["validate", "--site", str(indexed), "--format", "json"])
    assert result.exit_code == 1
    (finding,) = json.loads(result.output)["diagnostics"]
    assert finding["rule"] == "artifact-integrity" and finding["message"].startswith(expected)
    assert finding["message"].rstrip(".").endswith("Fix: rebuild it with 'knowledge-build build'")
    searched = CliRunner().invoke(main, ["search", "x", "--index", str(index)])
    assert searched.exit_code == 1 and searched.output.startswith(f"Error: {expected}")
    assert len(searched.output.splitlines()) == 1 and "Fix: rebuild it" in searched.output


def test_a_missing_index_says_how_to_build_one(site_dir):
    result = CliRunner().invoke(main, ["validate", "--site", str(site_dir)])
    assert result.exit_code == 1 and "knowledge-build build --site SITE" in result.output
