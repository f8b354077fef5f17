"""A release: `python -m build` makes the sdist and the wheel with no packaging warning, the version is
written once, and the wheel installed in a fresh virtualenv (no checkout on sys.path) runs `build`,
`search`, `check` and `serve --help` on a copy of the sample site."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

import knowledge_build

from .conftest import manual_text

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "knowledge_build"
DATA = ("*.py", "*.yml", "*.json", "*.sql", "*.j2", "*.js", "*.css", "*.html")
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", 600))
# What a copy of the checkout leaves out: environments, caches and earlier builds.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache",
                                    ".hypothesis", "_site", ".jekyll-cache")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that points into this checkout or its virtualenv.
    PYTHONDONTWRITEBYTECODE is dropped too: with it setuptools warns that byte-compiling is off."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict:
    """`python -m build` in a copy of the checkout, as the release workflow runs it."""
    source = tmp_path_factory.mktemp("release") / "knowledge-build"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(source / "dist"), str(source)],
                           cwd=source, env=_clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert built.returncode == 0, built.stdout + built.stderr
    (sdist,) = (source / "dist").glob("knowledge_build-*.tar.gz")
    (wheel,) = (source / "dist").glob("knowledge_build-*.whl")
    return {"sdist": sdist, "wheel": wheel, "output": built.stdout + built.stderr}


@pytest.fixture(scope="module")
def wheel(release) -> Path:
    return release["wheel"]


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode("utf-8")


@pytest.mark.slow
def test_the_build_prints_no_warning(release):
    assert "warning" not in release["output"].lower(), release["output"]
    assert release["sdist"].name == f"knowledge_build-{knowledge_build.__version__}.tar.gz"
    assert release["wheel"].name == f"knowledge_build-{knowledge_build.__version__}-py3-none-any.whl"


def test_the_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "knowledge_build.__version__"}
    assert importlib.metadata.version("knowledge-build") == knowledge_build.__version__


@pytest.mark.slow
def test_the_wheel_carries_the_license_and_the_project_metadata(release):
    metadata = _metadata(release["wheel"])
    for line in (f"Version: {knowledge_build.__version__}", "License-Expression: MIT", "License-File: LICENSE",
                 "Author: knowledge-build contributors", "Classifier: Programming Language :: Python :: 3.11",
                 "Project-URL: Homepage, https://github.com/OWNER/knowledge-build",
                 "Project-URL: Documentation, https://github.com/OWNER/knowledge-build#readme",
                 "Project-URL: Issues, https://github.com/OWNER/knowledge-build/issues",
                 "Project-URL: Source, https://github.com/OWNER/knowledge-build", "Keywords: "):
        assert f"\n{line}" in metadata, line
    names = zipfile.ZipFile(release["wheel"]).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    with tarfile.open(release["sdist"]) as sdist:
        assert f"knowledge_build-{knowledge_build.__version__}/LICENSE" in sdist.getnames()
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License") and "Copyright (c) 2026 knowledge-build contributors" in license_text


def test_the_readme_tells_how_to_install_and_release():
    readme = manual_text()
    part = readme.split("# Install from PyPI and release\n", 1)[1].split("\n## ", 1)[0]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extra in extras:
        assert f"`{extra}`" in part, extra
    for fact in ("pip install 'knowledge-build[local]'", "MIT licensed (`LICENSE`)",
                 "`__version__` in `knowledge_build/__init__.py`", "`[tool.setuptools.dynamic]`",
                 "`knowledge-build --version`", "the tag `v<version>`",
                 "`.github/workflows/release.yml`", "`python -m build`", "trusted publishing", "environment\n`pypi`",
                 "fresh virtualenv"):
        assert fact in part, fact


def test_the_release_workflow_publishes_a_version_tag_with_trusted_publishing():
    path = ROOT / ".github" / "workflows" / "release.yml"
    linted = subprocess.run([str(Path(sys.executable).parent / "actionlint"), str(path)], capture_output=True,
                            text=True, cwd=ROOT, timeout=TIMEOUT)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert workflow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as true
    build_steps = "\n".join(step.get("run", "") for step in workflow["jobs"]["build"]["steps"])
    assert "python -m build" in build_steps and '"dist/knowledge_build-${version}.tar.gz"' in build_steps
    publish = workflow["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    (step,) = [s for s in publish["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert "with" not in step or not {"password", "user"} & set(step["with"])  # no token: trusted publishing


@pytest.mark.slow
def test_the_release_workflow_refuses_a_tag_that_names_another_version(release, tmp_path):
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    (script,) = [step["run"] for step in workflow["jobs"]["build"]["steps"]
                 if step.get("name") == "The tag names the package's version"]
    (tmp_path / "dist").mkdir()
    for built in (release["sdist"], release["wheel"]):
        shutil.copy(built, tmp_path / "dist")

    def step(tag: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "GITHUB_REF_NAME": tag}, timeout=TIMEOUT)

    assert step(f"v{knowledge_build.__version__}").returncode == 0
    refused = step("v999.0.0")
    assert refused.returncode == 1
    assert refused.stdout.startswith("error: tag v999.0.0 does not match the built version")
    assert "Fix:" in refused.stdout


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_data_file_of_the_package(wheel):
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("knowledge_build/")}
    here = {p.relative_to(ROOT).as_posix() for pattern in DATA for p in PACKAGE.rglob(pattern)
            if "__pycache__" not in p.parts}
    assert here - shipped == set()
    assert {"knowledge_build/data/glossary.yml", "knowledge_build/store/migrations/001_extension_and_meta.sql",
            "knowledge_build/templates/report.html.j2"} <= shipped


@pytest.mark.slow
@pytest.mark.model
def test_the_wheel_installed_in_a_fresh_virtualenv_builds_searches_checks_and_serves(wheel, real_index_dir, run_cache,
                                                                                      tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    python, cli = env_dir / "bin" / "python", env_dir / "bin" / "knowledge-build"
    work = tmp_path / "work"  # the cwd of every command: no checkout in it or above it
    work.mkdir()
    env = _clean_env()

    def run(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([str(a) for a in args], cwd=work, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        assert not check or done.returncode == 0, done.stdout + done.stderr
        return done

    run(python, "-m", "pip", "install", "--quiet", f"{wheel}[local]")
    where = run(python, "-c", "import json, knowledge_build; print(json.dumps(knowledge_build.__file__))").stdout
    assert Path(json.loads(where)).is_relative_to(env_dir)
    installed = run(python, "-c", "import importlib.metadata as m; print(m.version('knowledge-build'))").stdout.strip()
    assert installed == knowledge_build.__version__
    assert run(cli, "--version").stdout.strip() == f"knowledge-build, version {installed}"

    site = work / "site"
    shutil.copytree(real_index_dir.parents[2], site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    # The run's cache holds the real_index_dir build's vectors: nothing to embed.
    summary = json.loads(run(cli, "build", "--site", site, "--cache-dir", run_cache, "--format", "json").stdout)
    assert summary["embedded"] == 0 and summary["chunks"] > 0
    output = Path(summary["output"])
    assert {p.name: p.read_bytes() for p in output.iterdir()} == {p.name: p.read_bytes()
                                                                  for p in real_index_dir.iterdir()}
    found = json.loads(run(cli, "search", "二次方程式を公式で解きたい", "--index", output, "--format", "json").stdout)
    assert found["results"][0]["id"].startswith("二次方程式#")
    checked = run(cli, "check", "--site", site)
    assert "0 error(s)" in checked.stdout
    served = run(cli, "serve", "--help")
    assert "MCP server" in served.stdout
