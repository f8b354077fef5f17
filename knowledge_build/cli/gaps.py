"""CLI for what learners could not find (issue 42): `knowledge-build gaps` writes the report of the gap log
(serve/gaps_report.py) as HTML, or prints it as JSON; `--forget` deletes the log's every question."""

from __future__ import annotations

import json
from pathlib import Path

import click

import knowledge_build as kb

from .common import INDEX_OPTION, PATH_TYPE, SITE_OPTION, fail_on_library_errors


@click.command("gaps")
@INDEX_OPTION
@SITE_OPTION
@click.option("--log", "log_file", type=PATH_TYPE, help="The gap log's file. Default: setting gap_log_file "
              "(KB_GAP_LOG_FILE), else .knowledge-gaps.sqlite.")
@click.option("--out", type=PATH_TYPE, default=Path("reports/gaps.html"), show_default=True, help="HTML file to write.")
@click.option("--format", "fmt", type=click.Choice(["html", "json"]), default="html", show_default=True)
@click.option("--forget", is_flag=True, help="Delete every question the gap log holds, and its counts.")
@fail_on_library_errors
def gaps(index_dir, site, log_file, out, fmt, forget):
    """Report the questions the site answered weakly (kept when the setting gap_log is on), grouped by meaning."""
    from ..store.gaps import GapLog, gap_log_path

    config = kb.load_config(site=site, index=index_dir, gap_log_file=log_file)
    path = gap_log_path(config)
    if not path.is_file():
        if forget:
            click.echo(f"{path}: no gap log; nothing to forget")
            return
        raise click.ClickException(f"{path}: no gap log. Fix: turn the setting gap_log on (KB_GAP_LOG=true) for "
                                   "serve, ask, slack or search --database-url, or give --log FILE")
    with GapLog(path, config.gap_retention_days) as log:
        if forget:
            click.echo(f"forgot {log.forget()} questions ({path})")
            return
        rows, answered = log.rows(), log.answered()
    from ..serve.gaps_report import gap_report
    from ..serve.service import open_search

    searcher = open_search(config, use_database=False)
    report = gap_report(rows, answered, searcher, config.gap_min_wording, config.relevance_threshold)
    if fmt == "json":
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    from ..checks.report import write_report

    write_report(report, out, "gaps.html.j2")
    click.echo(f"wrote {out}: {len(report['groups'])} groups of {report['questions']} questions")
