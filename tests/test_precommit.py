"""The pre-commit hooks, run by the real `pre-commit` tool against this repository."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from knowledge_build import build, load_config

from .conftest import ROOT, SITE, LocalLookalike

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"


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
    """This checkout's files (tracked and untracked, not ignored) committed in a clean repository:
    `try-repo` then installs each hook's environment once for every run, instead of once per run
    from a new shadow commit of the working tree."""
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
    return copy


def _run_hook(hooks: Path, repo: Path, hook: str) -> subprocess.CompletedProcess:
    """`pre-commit run HOOK --all-files` in the site repository, whose .pre-commit-config.yaml names this
    checkout's hooks at a commit, as a site's repository does. Each hook's environment is installed once
    (PRE_COMMIT_HOME is shared by the module's runs)."""
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hooks, check=True, capture_output=True,
                         text=True).stdout.strip()
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n      - id: knowledge-build-check\n"
        "      - id: knowledge-build-validate\n", encoding="utf-8")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(repo.parent),
           "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"), "KB_CACHE_DIR": str(repo.parent / "cache"),
           **_pip_settings()}
    return subprocess.run([str(PRE_COMMIT), "run", hook, "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_check_hook_passes_a_site_whose_only_findings_are_warnings(hooks_repo, site_repo):
    result = _run_hook(hooks_repo, site_repo, "knowledge-build-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "knowledge-build check" in result.stdout and "Passed" in result.stdout


def test_validate_hook_fails_when_an_indexed_anchor_disappears(hooks_repo, site_repo):
    assert _run_hook(hooks_repo, site_repo, "knowledge-build-validate").returncode == 0
    page = site_repo / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace('id="rule-transposition"', 'id="rule-iko"'),
                    encoding="utf-8")
    result = _run_hook(hooks_repo, site_repo, "knowledge-build-validate")
    assert result.returncode == 1
    assert "Failed" in result.stdout and "[stale-anchor]" in result.stdout
