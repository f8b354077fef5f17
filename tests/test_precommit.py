"""The pre-commit hooks, run by the real `pre-commit` tool from a tag of this repository, as a site's
repository names them in its .pre-commit-config.yaml."""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import knowledge_build
from knowledge_build import build, load_config

from .conftest import LocalLookalike, ROOT, SITE, manual_text

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
TAG = "v0.0.0-test"  # a release-shaped tag, made in the temporary copy only
# Installing a hook's environment (pip, from the copy) can take minutes on a slow machine.
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", 1800))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def site_repo(tmp_path_factory):
    """A git repository whose root is a Jekyll site with a built index."""
    repo = tmp_path_factory.mktemp("precommit") / "repo"
    shutil.copytree(SITE, repo, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    build(load_config(site=repo, cache_dir=repo.parent / "cache", env={}), embedder=LocalLookalike())
    return repo


def _pip_settings() -> dict:
    """The developer's pip settings (package index, mirrors, wheel cache): HOME is replaced for isolation,
    and pre-commit's pip would otherwise download every package again from the public index."""
    settings = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    home = Path.home()
    user_config = home / ".config" / "pip" / "pip.conf"
    if user_config.is_file() and "PIP_CONFIG_FILE" not in settings:
        settings["PIP_CONFIG_FILE"] = str(user_config)
    settings.setdefault("PIP_CACHE_DIR", str(home / ".cache" / "pip"))
    return settings


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory) -> Path:
    """This checkout's files (tracked and untracked, not ignored) committed in a clean repository and
    tagged TAG, as a release is: the site repositories below name it by `rev: TAG`, and pre-commit
    clones it and installs each hook's environment once for the whole module (shared PRE_COMMIT_HOME)."""
    copy = tmp_path_factory.mktemp("hooks") / "knowledge-build"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hooks under test")
    _git(copy, "tag", TAG)
    return copy


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _run_hooks(hooks: Path, repo: Path, home: Path, *hook: str) -> subprocess.CompletedProcess:
    """`pre-commit run [HOOK] --all-files` in the site repository, whose .pre-commit-config.yaml names
    this checkout's hooks by the tag, as the README's snippet does. The PATH holds only this venv's
    `pre-commit` and the system: the hooks run from the environments pre-commit installs."""
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {TAG}\n    hooks:\n      - id: knowledge-build-check\n"
        "      - id: knowledge-build-validate\n", encoding="utf-8")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(repo.parent),
           "PRE_COMMIT_HOME": str(home), "KB_CACHE_DIR": str(repo.parent / "cache"), **_pip_settings()}
    return subprocess.run([str(PRE_COMMIT), "run", *hook, "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def _run_hook(hooks: Path, repo: Path, hook: str, home: Path) -> subprocess.CompletedProcess:
    return _run_hooks(hooks, repo, home, hook)


@pytest.mark.slow
def test_check_hook_passes_a_site_whose_only_findings_are_warnings(hooks_repo, site_repo, pre_commit_home):
    result = _run_hook(hooks_repo, site_repo, "knowledge-build-check", pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "knowledge-build check" in result.stdout and "Passed" in result.stdout


@pytest.mark.slow
def test_validate_hook_fails_when_an_indexed_anchor_disappears(hooks_repo, site_repo, pre_commit_home):
    assert _run_hook(hooks_repo, site_repo, "knowledge-build-validate", pre_commit_home).returncode == 0
    page = site_repo / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace('id="rule-transposition"', 'id="rule-iko"'),
                    encoding="utf-8")
    result = _run_hook(hooks_repo, site_repo, "knowledge-build-validate", pre_commit_home)
    assert result.returncode == 1
    assert "Failed" in result.stdout and "[stale-anchor]" in result.stdout
    # The hook's environment has no model and needs none: no advice to install one in it.
    assert "embedder-unavailable" not in result.stdout and "pip install" not in result.stdout


TINY_PAGE = """---
title: 比と比例式
---
<section id="section1">
  <h2>比の性質</h2>
  <div class="rule-box" id="rule-ratio-product">
    <strong>比例式の性質</strong>
    <p>a:b = c:d ならば ad = bc が成り立つ。</p>
  </div>
  <div class="tip-box">
    <strong>比を簡単にするコツ</strong>
    <p>両方の項に同じ数をかけても、同じ数でわっても比は変わらない。</p>
  </div>
</section>
"""


@pytest.fixture
def tiny_site_repo(tmp_path) -> Path:
    """A separate site repository: a small Jekyll source whose knowledge.yml makes a box without id an
    error (`missing_id: error`), with a page with one such box, and its index built."""
    repo = tmp_path / "tiny-site"
    (repo / "lessons").mkdir(parents=True)
    (repo / "_config.yml").write_text("title: Tiny\nbaseurl: \"\"\n", encoding="utf-8")
    (repo / "knowledge.yml").write_text("missing_id: error\n", encoding="utf-8")
    (repo / "lessons" / "ratio.html").write_text(TINY_PAGE, encoding="utf-8")
    (repo / ".gitignore").write_text("_site/\n", encoding="utf-8")
    build(load_config(site=repo, cache_dir=tmp_path / "cache", env={}), embedder=LocalLookalike())
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    return repo


@pytest.mark.slow
def test_pre_commit_from_a_tag_fails_a_box_without_id_with_its_file_and_line(
        hooks_repo, tiny_site_repo, pre_commit_home):
    result = _run_hooks(hooks_repo, tiny_site_repo, pre_commit_home)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    line = TINY_PAGE.splitlines().index('  <div class="tip-box">') + 1
    assert f"lessons/ratio.html:{line}:" in result.stdout and "[missing-id]" in result.stdout, output
    assert "knowledge-build check" in result.stdout and "Failed" in result.stdout
    # validate ran from the same tag and found the index consistent with the HTML.
    assert any(row.startswith("knowledge-build validate") and row.endswith("Passed")
               for row in result.stdout.splitlines()), output


def _hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}


def _extra(name: str) -> list[str]:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return extras[name]


def test_each_hook_installs_the_ids_extra_and_validate_adds_only_faiss():
    """The hooks import the ids extra (section names, suggested ids) and validate reads the vectors with
    faiss: exactly those packages, with pyproject's bounds (the runs above prove they are enough)."""
    hooks = _hooks()
    ids = _extra("ids")
    faiss = [req for req in _extra("local") if req.startswith("faiss-cpu")]
    assert sorted(hooks["knowledge-build-check"]["additional_dependencies"]) == sorted(ids)
    assert sorted(hooks["knowledge-build-validate"]["additional_dependencies"]) == sorted(ids + faiss)
    assert hooks["knowledge-build-validate"]["entry"] == "knowledge-build validate --no-embedder-check"


def test_readme_pins_the_hooks_by_a_release_tag():
    """The README's snippet pins `rev:` to a tag of the form a release has (`v` + the version)."""
    readme = manual_text()
    section = readme.split("## Pre-commit hooks", 1)[1].split("\n## ", 1)[0]
    snippet = yaml.safe_load(section.split("```yaml", 1)[1].split("```", 1)[0])
    repo = snippet["repos"][0]
    assert repo["rev"] == f"v{knowledge_build.__version__}"
    assert {hook["id"] for hook in repo["hooks"]} == set(_hooks())
    assert "release tag" in section
