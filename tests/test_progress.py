"""Progress of long work: a line per tenth of each stage where stderr is not a terminal (CI logs),
tqdm's bar where it is, nothing with --no-progress, --format json, or a build with nothing to do."""

from __future__ import annotations

import io
import json
import re

from click.testing import CliRunner

import knowledge_build
from knowledge_build.cli import main
from knowledge_build.progress import Progress

from .conftest import FakeEmbedder

LINE = re.compile(r"^(reading pages|embedding|indexing words|search box pieces|search box texts): ([\d,]+)/([\d,]+) "
                  r"(pages|chunks|texts) \((\d+) %\)$")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_one_line_at_each_tenth_of_the_work():
    log = io.StringIO()
    with Progress("embedding", 25, "chunk", stream=log) as bar:
        for _ in range(25):
            bar.update()
    assert log.getvalue().splitlines() == [
        f"embedding: {done}/25 chunks ({done * 100 // 25} %)" for done in (3, 5, 8, 10, 13, 15, 18, 20, 23, 25)]


def test_a_step_over_several_tenths_is_one_line_and_large_counts_are_grouped():
    log = io.StringIO()
    with Progress("publishing", 100_000, "row", stream=log) as bar:
        bar.update(35_000)
        bar.update(65_000)
    assert log.getvalue().splitlines() == ["publishing: 35,000/100,000 rows (35 %)",
                                           "publishing: 100,000/100,000 rows (100 %)"]


def test_disabled_or_empty_work_prints_nothing():
    log = io.StringIO()
    for bar in (Progress("embedding", 10, "chunk", enabled=False, stream=log), Progress("embedding", 0, "chunk", stream=log)):
        bar.update(5)
        bar.close()
    assert log.getvalue() == ""


def test_a_terminal_gets_a_bar_instead_of_lines():
    screen = Terminal()
    with Progress("embedding", 10, "chunk", stream=screen) as bar:
        bar.update(10)
    assert "\r" in screen.getvalue() and "embedding" in screen.getvalue()
    assert "embedding: 10/10 chunks (100 %)\n" not in screen.getvalue()


BUILD = knowledge_build.build


def _build(monkeypatch, site_dir, *args):
    monkeypatch.setattr(knowledge_build, "build",
                        lambda config, progress=False, strict=False:
                        BUILD(config, embedder=FakeEmbedder(), progress=progress, strict=strict))
    return CliRunner().invoke(main, ["build", "--site", str(site_dir), *args])


def _stages(stderr: str) -> dict[str, list[tuple[int, int]]]:
    stages: dict[str, list[tuple[int, int]]] = {}
    for line in stderr.splitlines():
        if match := LINE.match(line):
            stages.setdefault(match[1], []).append((int(match[2].replace(",", "")), int(match[3].replace(",", ""))))
    return stages


def test_build_into_a_log_reports_each_stage_and_ends_each_at_its_total(site_dir, monkeypatch):
    result = _build(monkeypatch, site_dir)
    assert result.exit_code == 0, result.output
    stages = _stages(result.stderr)
    pages = sum(not any(part.startswith("_") for part in path.relative_to(site_dir).parts)
                for path in site_dir.rglob("*.html"))
    # the search box's dense channel embeds its pieces and the site's short texts (browser/dense.py)
    assert list(stages) == ["reading pages", "embedding", "indexing words", "search box pieces", "search box texts"]
    assert stages["reading pages"][-1] == (pages, pages)
    assert stages["embedding"][-1] == (171, 171) and stages["indexing words"][-1] == (171, 171)
    for lines in stages.values():
        assert len(lines) <= 10 and [done for done, _ in lines] == sorted({done for done, _ in lines})
    assert "\r" not in result.stderr
    assert "Embedded 171 new or changed chunks" in result.stdout


def test_no_progress_json_and_a_no_change_rebuild_print_no_progress(site_dir, monkeypatch):
    quiet = _build(monkeypatch, site_dir, "--no-progress", "--output", str(site_dir / "quiet"))
    machine = _build(monkeypatch, site_dir, "--format", "json", "--output", str(site_dir / "machine"))
    again = _build(monkeypatch, site_dir, "--output", str(site_dir / "machine"))
    for result in (quiet, machine, again):
        assert result.exit_code == 0, result.output
        assert _stages(result.stderr) == {}
    assert "Embedded 0 new or changed chunks; 171 came from the cache." in again.stdout


def test_build_on_a_terminal_draws_tqdm_s_bar_and_prints_no_lines(site_dir, monkeypatch):
    """main() itself (CliRunner would replace stderr with a stream that is no terminal)."""
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    monkeypatch.setattr(knowledge_build, "build",
                        lambda config, progress=False, strict=False:
                        BUILD(config, embedder=FakeEmbedder(), progress=progress, strict=strict))
    main.main(["build", "--site", str(site_dir)], standalone_mode=False)
    assert "\r" in screen.getvalue() and "embedding" in screen.getvalue() and "reading pages" in screen.getvalue()
    assert _stages(screen.getvalue()) == {}


def test_json_with_progress_keeps_stdout_parseable(site_dir, monkeypatch):
    result = _build(monkeypatch, site_dir, "--format", "json", "--progress")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["embedded"] == 171
    assert _stages(result.stderr)["embedding"][-1] == (171, 171)
