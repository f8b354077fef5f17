"""The Jekyll plugin's settings under a real `jekyll build` (README, "Jekyll plugin").

A recording command stands in for knowledge-build, so these run without the model: each run
appends its arguments to a log and writes a marker into the output directory it was given.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

RECORDER = """import json, pathlib, sys
args = sys.argv[1:]
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps({{"tool": {name!r}, "args": args}}) + "\\n")
out = pathlib.Path(args[args.index("--output") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "marker.txt").write_text("written by the plugin's command", encoding="utf-8")
"""


@pytest.fixture()
def site(tmp_path):
    if shutil.which("jekyll") is None:
        pytest.fail("jekyll is not installed; `make test` installs Debian's jekyll package")
    from .conftest import SITE

    root = tmp_path / "site"
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    return root


def _recorder(path, log, name):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORDER.format(log=str(log), name=name), encoding="utf-8")
    return path


def _set_plugin(root, **values):
    """Rewrite keys of the knowledge_build block of _config.yml."""
    config = root / "_config.yml"
    lines = config.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        key = line.strip().split(":", 1)[0]
        if line.startswith("  ") and key in values:
            lines[i] = f"  {key}: {values[key]}"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _jekyll(root, env_command=None):
    env = {k: v for k, v in os.environ.items() if k != "KNOWLEDGE_BUILD_COMMAND"}
    if env_command:
        env["KNOWLEDGE_BUILD_COMMAND"] = env_command
    return subprocess.run(["jekyll", "build"], cwd=root, check=True, capture_output=True, text=True,
                          timeout=600, env=env)


def _runs(log):
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


@pytest.mark.slow
def test_the_environment_command_overrides_the_configured_one(site, tmp_path):
    log = tmp_path / "runs.jsonl"
    configured = _recorder(site / "tools" / "configured.py", log, "configured")
    override = _recorder(tmp_path / "override.py", log, "override")
    _set_plugin(site, command=f"{sys.executable} {configured}")
    _jekyll(site, env_command=f"{sys.executable} {override}")
    runs = _runs(log)
    assert [r["tool"] for r in runs] == ["override"]
    assert runs[0]["args"] == ["build", "--no-progress", "--site", str(site), "--output", str(site / "_site" / "knowledge" / "v2")]


@pytest.mark.slow
def test_a_relative_command_starts_at_the_site_source(site, tmp_path):
    log = tmp_path / "runs.jsonl"
    tool = site / "bin" / "kb"
    _recorder(site / "bin" / "recorder.py", log, "relative")
    tool.write_text(f"#!/bin/sh\nexec {sys.executable} \"$(dirname \"$0\")/recorder.py\" \"$@\"\n", encoding="utf-8")
    tool.chmod(0o755)
    _set_plugin(site, command="bin/kb", output_dir="search/index")
    _jekyll(site)
    runs = _runs(log)
    assert [r["tool"] for r in runs] == ["relative"]
    assert runs[0]["args"][-1] == str(site / "_site" / "search" / "index")


@pytest.mark.slow
def test_enabled_false_skips_indexing_and_keep_files_keeps_the_published_index(site, tmp_path):
    log = tmp_path / "runs.jsonl"
    command = f"{sys.executable} {_recorder(tmp_path / 'rec.py', log, 'rec')}"
    _jekyll(site, env_command=command)
    marker = site / "_site" / "knowledge" / "v2" / "marker.txt"
    assert marker.is_file() and len(_runs(log)) == 1

    _set_plugin(site, enabled="false")
    _jekyll(site, env_command=command)
    assert len(_runs(log)) == 1, "enabled: false still ran the command"
    # Jekyll cleans its destination on every build; `keep_files: [knowledge]` keeps the index.
    assert marker.is_file()
    assert (site / "_site" / "index.html").is_file()
