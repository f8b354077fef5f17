"""A real `jekyll build` of site/: the built _site indexes to the same chunks as the source."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_build import extract, load_config

# The plugin runs the real build, which embeds with the local model.
pytestmark = [pytest.mark.model, pytest.mark.slow]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory, run_cache, real_index_dir):
    """site/ built by `jekyll build`, whose plugin indexes it with the real model from the run's cache
    (`real_index_dir` put site/'s vectors there first, so no two workers embed them at once)."""
    if shutil.which("jekyll") is None:
        pytest.fail("jekyll is not installed; `make test` installs Debian's jekyll package")
    from .conftest import SITE

    root = tmp_path_factory.mktemp("jekyll") / "site"
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    _jekyll(root, run_cache)
    return root


def _jekyll(root, cache, check=True):
    """A real `jekyll build`; the plugin runs this checkout's knowledge-build."""
    env = {**os.environ, "KNOWLEDGE_BUILD_COMMAND": f"{sys.executable} -m knowledge_build.cli",
           "KB_CACHE_DIR": str(cache)}
    return subprocess.run(["jekyll", "build"], cwd=root, check=check, capture_output=True, text=True, timeout=600,
                          env=env)


def _comparable(chunks):
    return [{k: v for k, v in c.to_dict().items() if k not in ("line",)} for c in chunks]


def test_built_site_yields_the_same_chunks_as_the_source(built_site):
    from_source = extract(load_config(site=built_site, env={}))
    from_built = extract(load_config(site=built_site / "_site", env={}))
    assert from_built.site.kind == "built" and from_built.site.baseurl == "/math-note"
    # A page written with Liquid (the index's {% for %} list) has sections only once rendered.
    rendered_only = {Path(d.path).stem for d in from_source.diagnostics if d.rule == "sections-need-render"}
    assert rendered_only == {"index"} and any(c.material == "index" for c in from_built.chunks)
    assert _comparable(c for c in from_built.chunks if c.material not in rendered_only) == _comparable(from_source.chunks)
    assert not [d for d in from_built.diagnostics if d.severity == "error"]


def test_jekyll_build_runs_the_plugin_and_publishes_versioned_artifacts(built_site):
    knowledge = built_site / "_site" / "knowledge"
    manifest = json.loads((knowledge / "v2" / "manifest.json").read_text(encoding="utf-8"))
    latest = json.loads((knowledge / "latest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["chunks"] == 171 and manifest["embedder"]["provider"] == "local"
    assert latest["build_id"] == manifest["build_id"] and latest["schema_version"] == 2


def test_a_failing_index_fails_jekyll_with_the_tools_message_or_warns(built_site, tmp_path):
    root = tmp_path / "broken"
    shutil.copytree(built_site, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    page = root / "junior" / "移項.html"
    page.write_text("---\ntitle: 壊れた\n---\n<div class=\"rule-box\" id=\"rule-a\"><b>A</b>x</div>"
                    "<div class=\"rule-box\" id=\"rule-a\"><b>B</b>y</div>", encoding="utf-8")
    failed = _jekyll(root, tmp_path / "cache", check=False)
    assert failed.returncode != 0
    assert "knowledge-build failed" in failed.stderr + failed.stdout
    assert "[duplicate-id] id 'rule-a' is used twice" in failed.stderr + failed.stdout
    config = root / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("fail_on_error: true", "fail_on_error: false"),
                      encoding="utf-8")
    warned = _jekyll(root, tmp_path / "cache", check=False)
    assert warned.returncode == 0 and "knowledge-build failed" in warned.stderr + warned.stdout
    assert (root / "_site" / "junior" / "二次方程式.html").is_file()
