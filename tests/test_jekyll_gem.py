"""The Jekyll plugin as a gem (README, "Jekyll plugin"): `gem build` of jekyll/, `gem install --local` into a
private GEM_HOME, and a real `jekyll build` of a separate site that has no _plugins/ and lists the gem
under `plugins:` in its _config.yml."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile

import pytest

import knowledge_build

from .conftest import ROOT, SITE, manual_text

GEM_DIR = ROOT / "jekyll"
PLUGIN = GEM_DIR / "lib" / "jekyll-knowledge-build.rb"
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", "600"))
README = manual_text()
# The README's commands, for this version of the package
INSTALL = ("cd jekyll && gem build jekyll-knowledge-build.gemspec\n"
           f"gem install --local jekyll-knowledge-build-{knowledge_build.__version__}.gem")

RECORDER = """import json, pathlib, sys
args = sys.argv[1:]
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps(args) + "\\n")
out = pathlib.Path(args[args.index("--output") + 1])
out.mkdir(parents=True, exist_ok=True)
"""


def _run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, **kwargs)


@pytest.fixture(scope="module")
def gem(tmp_path_factory):
    """The gem, built and installed by the README's two commands (in a copy of jekyll/, so nothing is
    written into the repository) into a private GEM_HOME. Returns the .gem file and the environment under
    which Jekyll finds it."""
    for tool in ("gem", "jekyll"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed; `make test` installs Debian's jekyll package (ruby, gem)")
    base = tmp_path_factory.mktemp("gem")
    folder = base / "jekyll"
    shutil.copytree(GEM_DIR, folder, ignore=shutil.ignore_patterns("*.gem"))
    plain = {k: v for k, v in os.environ.items() if k not in ("GEM_HOME", "GEM_PATH", "KNOWLEDGE_BUILD_COMMAND")}
    system_paths = _run(["gem", "env", "gempath"], env=plain, check=True).stdout.strip()
    home = base / "gem-home"
    env = {**plain, "GEM_HOME": str(home), "GEM_PATH": f"{home}:{system_paths}"}
    block = README[README.index("## Jekyll plugin"):]
    fenced = block[block.index("```sh\n") + 6:block.index("```", block.index("```sh\n") + 6)]
    commands = "\n".join(line.strip() for line in fenced.strip().splitlines())
    assert commands == INSTALL, commands
    for command in INSTALL.splitlines():
        done = _run(shlex.split(command.removeprefix("cd jekyll && ")), cwd=folder, env=env)
        assert done.returncode == 0, command + "\n" + done.stdout + done.stderr
    assert (home / "gems" / f"jekyll-knowledge-build-{knowledge_build.__version__}").is_dir()
    return {"package": folder / f"jekyll-knowledge-build-{knowledge_build.__version__}.gem", "env": env}


def _site(root, plugins=("jekyll-knowledge-build",)):
    """A separate copy of site/ without _plugins/, listing `plugins` (if any) in its _config.yml."""
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache", "_plugins"))
    if plugins:
        config = root / "_config.yml"
        listed = "".join(f"  - {name}\n" for name in plugins)
        config.write_text(config.read_text(encoding="utf-8") + f"plugins:\n{listed}", encoding="utf-8")
    assert not (root / "_plugins").exists()
    return root


def _jekyll(root, env, **extra):
    return _run(["jekyll", "build"], cwd=root, env={**env, **extra})


def _recorder(tmp_path):
    log = tmp_path / "runs.jsonl"
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER.format(log=str(log)), encoding="utf-8")
    return f"{sys.executable} {script}", log


def _runs(log):
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


# --- the package --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_gem_holds_the_one_plugin_file_its_readme_and_the_license(gem):
    with tarfile.open(gem["package"]) as outer:
        with tarfile.open(fileobj=outer.extractfile("data.tar.gz"), mode="r:gz") as data:
            files = {member.name: data.extractfile(member).read() for member in data.getmembers() if member.isfile()}
    assert set(files) == {"lib/jekyll-knowledge-build.rb", "README.md", "LICENSE"}
    assert files["lib/jekyll-knowledge-build.rb"] == PLUGIN.read_bytes()
    assert files["LICENSE"] == (ROOT / "LICENSE").read_bytes(), "jekyll/LICENSE differs from the repository's"


@pytest.mark.slow
def test_the_gem_version_is_the_packages_and_it_declares_no_runtime_dependency(gem):
    spec = _run(["gem", "spec", str(gem["package"]), "--ruby"], check=True).stdout
    assert f'"{knowledge_build.__version__}"' in spec and 's.version = "' in spec
    assert "add_runtime_dependency" not in spec and "add_dependency" not in spec


def test_the_copy_in_plugins_is_the_gems_file():
    copy = ROOT / "_plugins" / "knowledge_index.rb"
    assert copy.resolve() == PLUGIN.resolve()
    assert (SITE / "_plugins" / "knowledge_index.rb").resolve() == PLUGIN.resolve()


def test_the_plugin_runs_the_command_not_the_library():
    code = PLUGIN.read_text(encoding="utf-8")
    assert "knowledge_build." not in re.sub(r'"knowledge_build"|knowledge_build\.command', "", code)


# --- a separate site that lists the gem under plugins: ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.model
def test_a_site_listing_the_gem_publishes_the_index_with_the_real_tool(gem, tmp_path, real_index_dir, run_cache):
    root = _site(tmp_path / "site")
    # The index of site/ built for the run left its vectors in the run's cache: the plugin's build reuses them.
    cache = run_cache
    config = root / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "command: ../.venv/bin/knowledge-build", f"command: {sys.executable} -m knowledge_build.cli"), encoding="utf-8")
    result = _jekyll(root, gem["env"], KB_CACHE_DIR=str(cache))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"knowledge-build: indexing {root} into {root / '_site' / 'knowledge' / 'v2'}" in result.stdout
    knowledge = root / "_site" / "knowledge"
    manifest = json.loads((knowledge / "v2" / "manifest.json").read_text(encoding="utf-8"))
    latest = json.loads((knowledge / "latest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["chunks"] == 171 and latest["build_id"] == manifest["build_id"]
    assert (root / "_site" / "junior" / "二次方程式.html").is_file()


@pytest.mark.slow
def test_a_failing_index_fails_the_build_with_the_tools_message_first(gem, tmp_path):
    root = _site(tmp_path / "site")
    page = root / "junior" / "移項.html"
    page.write_text("---\ntitle: 壊れた\n---\n<div class=\"rule-box\" id=\"rule-a\"><b>A</b>x</div>"
                    "<div class=\"rule-box\" id=\"rule-a\"><b>B</b>y</div>", encoding="utf-8")
    failed = _jekyll(root, gem["env"], KNOWLEDGE_BUILD_COMMAND=f"{sys.executable} -m knowledge_build.cli",
                     KB_CACHE_DIR=str(tmp_path / "cache"))
    assert failed.returncode != 0
    output = failed.stdout + failed.stderr
    message = output.index("knowledge-build failed:")
    assert f"{page}:4:1: error: [duplicate-id] id 'rule-a' is used twice" in output[message:]
    # Jekyll 4.3 prints Ruby's backtrace of its own exit after every failed build; the message comes first.
    assert "\tfrom " not in output[:message] and "YOUR SITE COULD NOT BE BUILT" in output[:message]


@pytest.mark.slow
def test_a_missing_command_fails_the_build_saying_how_to_install_it(gem, tmp_path):
    root = _site(tmp_path / "site")
    failed = _jekyll(root, gem["env"], KNOWLEDGE_BUILD_COMMAND=str(tmp_path / "no-such-tool"))
    assert failed.returncode != 0
    assert (f"knowledge-build failed: {tmp_path / 'no-such-tool'} could not be run (No such file or directory"
            in failed.stdout + failed.stderr)
    assert "Install knowledge-build (pip install 'knowledge-build[local]'" in failed.stdout + failed.stderr


@pytest.mark.slow
def test_without_the_gem_jekyll_names_the_missing_plugin(gem, tmp_path):
    root = _site(tmp_path / "site")
    plain = {k: v for k, v in gem["env"].items() if k not in ("GEM_HOME", "GEM_PATH")}
    failed = _jekyll(root, plain, KNOWLEDGE_BUILD_COMMAND="true")
    assert failed.returncode != 0
    assert "you don't have jekyll-knowledge-build or one of its dependencies installed" in failed.stdout + failed.stderr


@pytest.mark.slow
def test_the_gem_and_a_copy_in_plugins_index_once(gem, tmp_path):
    root = _site(tmp_path / "site")
    (root / "_plugins").mkdir()
    shutil.copy(PLUGIN, root / "_plugins" / "jekyll-knowledge-build.rb")
    command, log = _recorder(tmp_path)
    result = _jekyll(root, gem["env"], KNOWLEDGE_BUILD_COMMAND=command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(_runs(log)) == 1


@pytest.mark.slow
def test_the_config_keys_reach_the_command(gem, tmp_path):
    root = _site(tmp_path / "site")
    command, log = _recorder(tmp_path)
    config = root / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "command: ../.venv/bin/knowledge-build", f"command: {command}").replace(
        "output_dir: knowledge/v2", "output_dir: search/v2\n  embedder: openai-compatible\n"
        "  args: [--base-url, \"http://127.0.0.1:8000/v1\", --sections, \"off\"]"), encoding="utf-8")
    result = _jekyll(root, gem["env"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert _runs(log) == [["build", "--no-progress", "--site", str(root), "--output", str(root / "_site" / "search" / "v2"),
                           "--embedder", "openai-compatible", "--base-url", "http://127.0.0.1:8000/v1", "--sections", "off"]]


@pytest.mark.slow
@pytest.mark.parametrize("setting, message", [
    ("knowledge_build: true", "knowledge_build in _config.yml must be a mapping"),
    ("knowledge_build:\n  args: 5", "args under knowledge_build in _config.yml must be a list of arguments, not 5."),
    ("knowledge_build:\n  command: \"\"", "knowledge_build.command in _config.yml is empty."),
])
def test_a_malformed_setting_fails_the_build_with_one_line_and_a_fix(gem, tmp_path, setting, message):
    root = _site(tmp_path / "site")
    config = root / "_config.yml"
    text = config.read_text(encoding="utf-8")
    text = text[:text.index("knowledge_build:")] + setting + "\n" + text[text.index("plugins:"):]
    config.write_text(text, encoding="utf-8")
    failed = _jekyll(root, gem["env"])
    assert failed.returncode != 0
    line = next(line for line in (failed.stdout + failed.stderr).splitlines() if message in line)
    assert "Fix: " in line


@pytest.mark.slow
@pytest.mark.parametrize("line, installed", [
    ('gem "jekyll-knowledge-build"', True),
    (f'gem "jekyll-knowledge-build", path: "{GEM_DIR}"', False),
])
def test_a_gemfile_group_jekyll_plugins_loads_the_gem(gem, tmp_path, line, installed):
    root = _site(tmp_path / "site", plugins=())
    (root / "Gemfile").write_text(f'source "https://rubygems.org"\n\ngroup :jekyll_plugins do\n  {line}\nend\n',
                                  encoding="utf-8")
    command, log = _recorder(tmp_path)
    env = gem["env"] if installed else {k: v for k, v in gem["env"].items() if k not in ("GEM_HOME", "GEM_PATH")}
    result = _jekyll(root, env, KNOWLEDGE_BUILD_COMMAND=command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [run[-1] for run in _runs(log)] == [str(root / "_site" / "knowledge" / "v2")]


@pytest.mark.slow
def test_the_default_command_is_knowledge_build_on_the_path(gem, tmp_path):
    root = _site(tmp_path / "site")
    config = root / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("  command: ../.venv/bin/knowledge-build", ""),
                      encoding="utf-8")
    command, log = _recorder(tmp_path)
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "knowledge-build").write_text(f"#!/bin/sh\nexec {command} \"$@\"\n", encoding="utf-8")
    (tools / "knowledge-build").chmod(0o755)
    env = {**gem["env"], "PATH": f"{tools}:{gem['env']['PATH']}"}
    result = _jekyll(root, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(_runs(log)) == 1


@pytest.mark.slow
def test_fail_on_error_false_turns_a_failed_index_into_a_warning(gem, tmp_path):
    root = _site(tmp_path / "site")
    config = root / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("fail_on_error: true", "fail_on_error: false"),
                      encoding="utf-8")
    failing = tmp_path / "failing.py"
    failing.write_text("import sys\nsys.exit('error: the index could not be built. Fix: see above')\n", encoding="utf-8")
    result = _jekyll(root, gem["env"], KNOWLEDGE_BUILD_COMMAND=f"{sys.executable} {failing}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "knowledge-build failed:" in result.stderr and "error: the index could not be built." in result.stderr
    assert (root / "_site" / "junior" / "二次方程式.html").is_file()
