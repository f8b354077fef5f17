"""A command whose optional extra is not installed stops with one line naming the extra (README,
"Extras"), never a traceback: each extra is made absent in a real `knowledge-build` process by a
meta path finder that refuses its modules, as Python does for a package that is not installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict

import pytest

from knowledge_build import build, load_config
from knowledge_build.errors import OPTIONAL_MODULES

from .conftest import LocalLookalike, ROOT, SITE, manual_text

TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "120"))
MODULES_OF = defaultdict(set)
for _module, (_extra, _package) in OPTIONAL_MODULES.items():
    MODULES_OF[_extra].add(_module)

# argv[1]: the modules to refuse (comma-separated); the rest: the command's arguments. Absent modules
# are also absent to importlib.util.find_spec, as they are without the package.
SHIM = """
import importlib.abc, importlib.util, sys
absent = set(sys.argv[1].split(","))
def refused(name):
    return name.partition(".")[0] in absent
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if refused(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if refused(name) else find_spec(name, package)
sys.argv = ["knowledge-build", *sys.argv[2:]]
from knowledge_build.cli import main
main()
"""

NO_DB = "postgresql://nobody@127.0.0.1:1/none"
# (extra, command); {site}, {index}, {tmp} are filled in. Every command of the README's table.
CASES = [
    ("local", "build --site {site} --output {tmp}/out --cache-dir {tmp}/cache"),
    ("local", "search 二次方程式 --index {index}"),
    ("ids", "check --site {site}"),
    ("ids", "suggest-ids --site {site}"),
    ("ids", "build --site {site} --output {tmp}/out --cache-dir {tmp}/cache"),
    ("web", "sources crawl http://127.0.0.1:9/ --store {tmp}/store.sqlite"),
    ("web", "sources add http://127.0.0.1:9/page --store {tmp}/store.sqlite"),
    ("db", "publish --index {index} --database-url " + NO_DB),
    ("db", "db start --data-dir {tmp}/pg"),
    ("db", "db migrate --dim 384 --database-url " + NO_DB),
    ("db", "search 二次方程式 --index {index} --database-url " + NO_DB),
    ("db", "validate --site {site} --index {index} --database-url " + NO_DB),
    ("openai", "build --site {site} --output {tmp}/out --embedder openai"),
    ("openai", "ask 二次方程式の解き方 --index {index}"),
    ("openai", "learns generate --site {site}"),
    ("mcp", "serve --index {index}"),
    ("slack", "slack --index {index}"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A copy of the sample site and its artifact set, embedded with local-model lookalike vectors."""
    import shutil

    base = tmp_path_factory.mktemp("extras")
    site = base / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    index = build(load_config(site=site, cache_dir=base / "cache", env={}), embedder=LocalLookalike()).output
    return site, index, base / "cache"


def _run_without(modules, args, cache, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "OPENAI_", "SLACK_"))}
    env.update(KB_CACHE_DIR=str(cache), OPENAI_API_KEY="sk-test", SLACK_BOT_TOKEN="xoxb-test",
               SLACK_APP_TOKEN="xapp-test", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", SHIM, ",".join(sorted(modules)), *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)


@pytest.mark.parametrize("extra, command", CASES, ids=[f"{e}:{c.split(' {')[0]}" for e, c in CASES])
def test_a_command_without_its_extra_names_the_extra_in_one_line(extra, command, built, tmp_path):
    site, index, cache = built
    args = command.format(site=site, index=index, tmp=tmp_path).split()
    result = _run_without(MODULES_OF[extra], args, cache, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
    assert f"Fix: pip install 'knowledge-build[{extra}]'" in errors[0], errors[0]
    assert "not installed" in errors[0]


def test_help_needs_no_extra(tmp_path):
    result = _run_without(set(OPTIONAL_MODULES), ["--help"], tmp_path / "cache", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "sources" in result.stdout and "serve" in result.stdout


def _requirements():
    """{extra: names of its requirements}, a reference to another extra ("knowledge-build[ids]") by its
    extra's name."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    return {extra: {(m.group(2) if m.group(1).lower() == "knowledge-build" else m.group(1).lower())
                    for m in (re.match(r"([A-Za-z0-9_.-]+)(?:\[(\w+)\])?", req) for req in reqs)}
            for extra, reqs in extras.items() if extra != "test"}


def test_every_optional_module_names_a_package_of_its_extra():
    requirements = _requirements()
    wrong = {module: (extra, package) for module, (extra, package) in OPTIONAL_MODULES.items()
             if package not in requirements.get(extra, ())}
    assert not wrong, wrong
    assert set(MODULES_OF) == set(requirements)


def test_the_readme_lists_every_extra_with_packages_it_installs():
    readme = manual_text()
    section = readme.split("\n## Extras\n", 1)[1].split("\n#", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    listed = {row[0].strip("| `"): set(re.findall(r"`([^`]+)`", row[1])) for row in rows}
    requirements = _requirements()
    assert set(listed) == set(requirements)
    for extra, names in listed.items():
        assert names - {"pysqlite3-binary"} <= requirements[extra], (extra, names - requirements[extra])
        assert {name for name in requirements[extra] if name != "pysqlite3-binary"} <= names, extra
