"""The manual (issue 43): a README of at most 150 lines whose links reach every page, a documentation site that
`mkdocs build --strict` builds (a broken link or anchor fails it), reference pages generated from the code and
compared with it, and the README's first quick start run as written by a newcomer."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _mkdocs(config_dir: Path, site_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir",
                           str(site_dir)], cwd=config_dir, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_readme_is_a_landing_page_whose_links_reach_every_page_of_the_manual():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    pages = {p.resolve() for p in DOCS.rglob("*.md")}
    seen, todo = set(), [README.resolve()]
    while todo:
        page = todo.pop()
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            found = (page.parent / target).resolve()
            if found in pages and found not in seen:
                seen.add(found)
                todo.append(found)
    unreached = sorted(p.relative_to(ROOT).as_posix() for p in pages - seen - {(DOCS / "index.md").resolve()})
    assert unreached == []


def test_every_page_is_in_the_navigation():
    """mkdocs.yml's nav lists every page (validation.omitted_files fails the strict build otherwise too)."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)

    def listed(items):
        for item in items:
            if isinstance(item, dict):
                for value in item.values():
                    yield from (listed(value) if isinstance(value, list) else [value])
            else:
                yield item

    assert sorted(listed(config["nav"])) == sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def test_the_generated_reference_pages_are_what_the_code_says():
    """Changing a command's help, a setting, a schema or a public name without running tools/gen_reference.py
    fails here: the pages are regenerated and compared."""
    checked = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_reference.py"), "--check"],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr
    cli = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    from click.testing import CliRunner

    from knowledge_build.cli import main

    for command in main.commands:
        assert f"## knowledge-build {command}\n" in cli
    assert CliRunner().invoke(main, ["gaps", "--help"], prog_name="knowledge-build").output.splitlines()[0] in cli
    settings = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    from knowledge_build.config import Config

    for name in (f.name for f in __import__("dataclasses").fields(Config) if f.name != "sources"):
        assert f"| `{name}` | `KB_{name.upper()}` |" in settings


def test_a_stale_generated_page_is_named_with_the_fix(tmp_path, capsys):
    """The check's failure, on a stale page: one line naming it and the fix, exit 1, nothing written."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_reference
    finally:
        sys.path.remove(str(ROOT / "tools"))
    stale = tmp_path / "cli.md"
    stale.write_text("# CLI\n", encoding="utf-8")
    original = gen_reference.pages
    gen_reference.pages = lambda: {stale: gen_reference.cli_page()}
    try:
        assert gen_reference.main(["--check"]) == 1
    finally:
        gen_reference.pages = original
    assert stale.read_text(encoding="utf-8") == "# CLI\n"  # --check writes nothing
    said = capsys.readouterr().err
    assert said == f"{stale}: error: differs from the code. Fix: run 'python tools/gen_reference.py' and commit the pages\n"


def test_the_manual_builds_with_mkdocs_strict(tmp_path):
    built = _mkdocs(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    assert (tmp_path / "site" / "tutor" / "teachers-loop" / "index.html").is_file()


@pytest.mark.browser
def test_the_manuals_pages_search_with_the_projects_own_box(tmp_path, browser):
    """The manual built as `make docs` builds it (the fake embedder here: the box's lexical channel), served on
    127.0.0.1, searched from a page two folders deep: the box is there instead of Material's search, and its results
    link to the page that answers."""
    import knowledge_build as kb

    from .conftest import FakeEmbedder
    from .served import serving

    site = tmp_path / "site"
    built = _mkdocs(ROOT, site)
    assert built.returncode == 0, built.stdout + built.stderr
    kb.build(kb.load_config(site=site, cache_dir=tmp_path / "cache", env={}), embedder=FakeEmbedder())
    assert not (site / "search" / "search_index.json").exists()  # Material's search is off
    with serving(site) as origin:
        tab = browser.new_page()
        tab.set_default_timeout(float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000)
        tab.goto(origin + "/guide/install/", wait_until="load")
        assert tab.locator("input[role=combobox]").get_attribute("placeholder") == "Search this site"  # lang="en"
        tab.locator("input[role=combobox]").click()
        tab.keyboard.type("Cloud Run")
        tab.wait_for_function("() => document.querySelector('[role=listbox]').dataset.query === 'Cloud Run'")
        first = tab.eval_on_selector("[role=option] a", "a => new URL(a.href).pathname")
        tab.close()
    assert first == "/tutor/cloud-run/"


@pytest.mark.parametrize("link", ["[x](guide/no-such-page.md)", "[x](guide/install.md#no-such-anchor)"])
def test_a_broken_link_or_anchor_fails_the_build(tmp_path, link):
    copy = tmp_path / "copy"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copytree(ROOT / "docs-theme", copy / "docs-theme")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + f"\n{link}\n", encoding="utf-8")
    built = _mkdocs(copy, tmp_path / "site")
    assert built.returncode != 0
    assert "index.md" in built.stdout + built.stderr


@pytest.mark.model
def test_the_readmes_quick_starts_run_as_written_in_a_fresh_directory(tmp_path, run_cache):
    """The first quick start copied as written from the README into an empty directory builds and searches a small
    site; the second's commands put the box on it; the third's servers start (stdio) and answer /health (HTTP). Run
    by bash with this checkout's commands first on the PATH (what `pip install` gives a newcomer); the embedding cache
    of the run is shared (KB_CACHE_DIR)."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Quick start: build and search your site\n\n```sh\n(.*?)```", text, re.S).group(1)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "KB_CACHE_DIR": str(run_cache)}
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, capture_output=True, text=True,
                         timeout=900, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    first = next(line for line in ran.stdout.splitlines() if line.startswith(" 1. "))
    assert "解の公式" in first and "[rule]" in first, ran.stdout
    assert (tmp_path / "mysite" / "knowledge" / "v2" / "manifest.json").is_file()
    # The second quick start on the same folder, its commands as written but the last (a server that runs until
    # stopped): the snippet to paste is printed and the build writes the box's bundle.
    second = re.search(r"## Quick start: put the search box on your site\n\n```sh\n(.*?)```", text, re.S).group(1)
    commands = [line for line in second.splitlines() if line.startswith("knowledge-build ")]
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(commands)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=900, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert '<div class="knowledge-search" data-bundle="/knowledge/v2/"></div>' in ran.stdout
    assert (tmp_path / "mysite" / "knowledge" / "v2" / "knowledge-search-ui.js").is_file()
    # The third: the MCP server on stdio (it ends when its input does) and over HTTP (its port changed to a free one,
    # asked for its health, then stopped).
    third = re.search(r"## Quick start: give an AI tutor the MCP server\n\n```sh\n(.*?)```", text, re.S).group(1)
    stdio, http = [line.split("#", 1)[0].strip() for line in third.splitlines() if line.startswith("knowledge-build ")]
    ran = subprocess.run(["bash", "-c", stdio], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=900, env=env)
    assert ran.returncode == 0, ran.stderr
    _health_of_the_http_server(http, tmp_path, env)


def _health_of_the_http_server(command: str, cwd: Path, env: dict) -> None:
    import json
    import socket
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(["bash", "-c", f"exec {re.sub(r'--port [0-9]+', f'--port {port}', command)}"], cwd=cwd,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + float(os.environ.get("KB_TEST_TIMEOUT", "120"))
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                    health = json.loads(answer.read())
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "the MCP server did not answer /health"
                time.sleep(0.2)
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert health["status"] == "healthy" and health["backend"] == "artifacts"


def _shell_blocks(text: str):
    """The fenced blocks of a Markdown text that hold shell lines: no language, or sh, bash, shell, console."""
    block, language = None, None
    for line in text.splitlines():
        fence = re.match(r"^\s*```\s*([\w-]*)", line)
        if fence and block is None:
            block, language = [], fence.group(1)
        elif fence:
            if language in ("", "sh", "bash", "shell", "console"):
                yield "\n".join(block)
            block = None
        elif block is not None:
            block.append(line)


def _shown_commands():
    """(page, line) of every `knowledge-build …` command line in a shell block of the README and the docs (a line
    continued with a backslash read whole)."""
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        if page.parent == DOCS / "reference" and page.name == "cli.md":
            continue  # the generated help: usage lines, checked by being generated
        for block in _shell_blocks(page.read_text(encoding="utf-8")):
            for line in re.sub(r"\\\n\s*", " ", re.sub(r"\$\([^)]*\)", "VALUE", block)).splitlines():
                found = re.match(r"^\s*(?:[A-Z_]+=\S*\s+)*(?:\.venv/bin/)?knowledge-build\s+(.*)$", line)
                if found:
                    yield page.relative_to(ROOT).as_posix(), found.group(1)


def test_every_command_the_manual_shows_names_a_real_command_and_its_real_options():
    """Each command line shown (a synopsis with [optional] parts too): its subcommands exist and every --option it
    names is one of that command's. Running them all would need a database, a chat server and Slack; the README's
    quick starts are run (above)."""
    import click

    from knowledge_build.cli import main

    wrong, seen = [], 0
    for page, rest in _shown_commands():
        words = rest.split("#", 1)[0].split()
        command, ctx = main, click.Context(main, info_name="knowledge-build")
        while isinstance(command, click.Group) and words and not words[0].startswith("-"):
            sub = command.get_command(ctx, words[0])
            if sub is None:
                wrong.append(f"{page}: knowledge-build {rest}: no command {words[0]!r}")
                break
            command, ctx, words = sub, click.Context(sub, info_name=words[0], parent=ctx), words[1:]
        else:
            seen += 1
            known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
            for word in words:
                option = re.match(r"^[\[(|]*(--?[a-z][\w-]*)", word)
                if option and option.group(1) not in known:
                    wrong.append(f"{page}: knowledge-build {rest}: {command.name} has no {option.group(1)}")
    assert wrong == [] and seen >= 40, (seen, wrong)


def test_each_current_figure_is_stated_on_the_page_it_names():
    """docs/reference/figures.md lifts the current figures out of the notebooks; each must be what its page says."""
    page = DOCS / "reference" / "figures.md"
    rows = [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("| ") and "](" in line]
    assert len(rows) >= 8
    for row in rows:
        _, figure, where = (cell.strip() for cell in row.strip().strip("|").split(" | "))
        target = (page.parent / re.search(r"\]\(([^)#]+)", where).group(1)).resolve()
        text = " ".join(target.read_text(encoding="utf-8").split())
        for part in figure.split(", "):
            forms = (part, part.replace(" / ", "/"), part.replace(" / ", " | "))  # prose, or a table's two cells
            assert any(form in text for form in forms), (figure, target.name)
