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


def _try_repo(repo: Path, hook: str) -> subprocess.CompletedProcess:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(repo.parent),
           "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"), "KB_CACHE_DIR": str(repo.parent / "cache"),
           **_pip_settings()}
    return subprocess.run([str(PRE_COMMIT), "try-repo", str(ROOT), hook, "--all-files"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_check_hook_passes_a_site_whose_only_findings_are_warnings(site_repo):
    result = _try_repo(site_repo, "knowledge-build-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "knowledge-build check" in result.stdout and "Passed" in result.stdout


def test_validate_hook_fails_when_an_indexed_anchor_disappears(site_repo):
    assert _try_repo(site_repo, "knowledge-build-validate").returncode == 0
    page = site_repo / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8").replace('id="rule-transposition"', 'id="rule-iko"'),
                    encoding="utf-8")
    result = _try_repo(site_repo, "knowledge-build-validate")
    assert result.returncode == 1
    assert "Failed" in result.stdout and "[stale-anchor]" in result.stdout
