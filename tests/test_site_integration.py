"""Site integration: the GitHub workflow lints clean, the coverage report, the Makefile targets."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_build.cli import main

from .conftest import manual_text

ROOT = Path(__file__).resolve().parent.parent


def test_workflows_pass_actionlint():
    actionlint = Path(sys.executable).parent / "actionlint"
    result = subprocess.run([str(actionlint), *sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.yml"))],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_index_workflow_runs_every_gate():
    workflow = (ROOT / ".github" / "workflows" / "index.yml").read_text(encoding="utf-8")
    for step in ("actions/cache@", "make index", "check --site site --format github", "jekyll build",
                 "validate --site site", "eval --index", "--fail-on-regression", "upload-pages-artifact",
                 "deploy-pages", "secrets.DATABASE_URL", "knowledge-build publish"):
        assert step in workflow, step
    assert "OPENAI_API_KEY" not in workflow  # the sample site is built with the local model


def test_broken_anchor_becomes_an_annotation_on_its_line(site_dir):
    page = site_dir / "junior" / "一次方程式.html"
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if 'id="rule-transposition"' in line)
    lines.insert(number + 1, '<a href="#rule-nowhere">移項</a>\n')
    page.write_text("".join(lines), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--site", str(site_dir), "--format", "github"])
    assert result.exit_code == 1
    assert f"::error file=site/junior/一次方程式.html,line={number + 2},col=1,title=broken-anchor::" in result.output


def test_report_shows_pages_boxes_without_ids_and_the_index(site_dir, fake_embedder, tmp_path):
    from knowledge_build import build, load_config

    build(load_config(site=site_dir), embedder=fake_embedder)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", "--site", str(site_dir), "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    totals = json.loads(result.output)
    assert totals["anchored"] == 121 and totals["unanchored"] == 4 and totals["pages"] == 10
    # the two pages without ids (指数法則, 平方数と立方数) are found through their sections only
    assert totals["pages_only_sections"] == 2 and totals["section"] == 25 and totals["table"] == 25
    html = out.read_text(encoding="utf-8")
    assert "junior/二次方程式.html" in html and "fake:char-bigram-hash/1" in html and "missing-id" in html
    assert html.count("<tr>") >= 8 + 4  # a row per page, a row per finding


@pytest.mark.corpus
def test_report_on_the_corpus_counts_its_unanchored_boxes_and_pages(corpus_dir, tmp_path):
    out = tmp_path / "corpus.html"
    result = CliRunner().invoke(main, ["report", "--site", str(corpus_dir), "--out", str(out), "--format", "json"])
    totals = json.loads(result.output)
    assert totals["unanchored"] == 654 and totals["pages_without_knowledge_anchors"] == 22
    assert totals["anchored"] == 1044 and "index problem" in out.read_text(encoding="utf-8")


def test_makefile_has_the_documented_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    readme = manual_text()
    for target in ("install", "index", "test", "test-unit", "check", "eval", "bench", "bench-retrieval", "serve", "report", "clean"):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target
        assert f"`make {target}`" in readme, target
    if shutil.which("make"):
        dry = subprocess.run(["make", "-n", "check", "eval", "report"], cwd=ROOT, capture_output=True, text=True)
        assert dry.returncode == 0, dry.stderr
