"""CLI for what learners could not find (issue 42): `knowledge-build gaps` writes the report of the gap log
(serve/gaps_report.py) as HTML, or prints it as JSON; `--forget` deletes the log's every question. The log is the
SQLite file of serve, ask, slack and search (store/gaps.py) and, with a database URL, the search box's questions in
that database (store/gaps_pg.py); the report takes both."""

from __future__ import annotations

import json
from pathlib import Path

import click

import knowledge_build as kb

from .common import DATABASE_OPTION, INDEX_OPTION, PATH_TYPE, SITE_OPTION, fail_on_library_errors


@click.command("gaps")
@INDEX_OPTION
@SITE_OPTION
@DATABASE_OPTION
@click.option("--log", "log_file", type=PATH_TYPE, help="The gap log's file. Default: setting gap_log_file "
              "(KB_GAP_LOG_FILE), else .knowledge-gaps.sqlite.")
@click.option("--out", type=PATH_TYPE, default=Path("reports/gaps.html"), show_default=True, help="HTML file to write.")
@click.option("--format", "fmt", type=click.Choice(["html", "json"]), default="html", show_default=True)
@click.option("--forget", is_flag=True, help="Delete every question the gap log holds (the file and the database), "
              "and its counts.")
@fail_on_library_errors
def gaps(index_dir, site, database_url, log_file, out, fmt, forget):
    """Report the questions the site answered weakly (kept when the setting gap_log is on), grouped by meaning."""
    from ..store.gaps import GapLog, gap_log_path

    config = kb.load_config(site=site, index=index_dir, gap_log_file=log_file, database_url=database_url)
    path = gap_log_path(config)
    rows, answered, dropped, places = [], {}, 0, []
    opened = []

    def searcher():
        """The set's index (without the database), opened when first needed."""
        if not opened:
            from ..serve.service import open_search

            opened.append(open_search(config, use_database=False))
        return opened[0]

    if path.is_file():
        with GapLog(path, config.gap_retention_days) as log:
            if forget:
                click.echo(f"forgot {log.forget()} questions ({path})")
            else:
                rows, answered = log.rows(), log.answered()
        places.append(str(path))
    if config.database_url:
        from ..store import gaps_pg
        from ..store.postgres import connect

        with connect(config.database_url) as conn:
            if gaps_pg.has_log(conn):
                if forget:
                    click.echo(f"forgot {gaps_pg.forget(conn)} questions (the database's knowledge_gaps)")
                else:
                    more, counted, dropped = gaps_pg.read(conn)
                    weak, strong = _judged_again(more, searcher(), config.gap_weak_relevance)
                    gaps_pg.answered(conn, strong)
                    rows += [{k: v for k, v in r.items() if k != "ref"} for r in weak]
                    for row in strong:
                        counted[row["channel"]] = counted.get(row["channel"], 0) + 1
                    for channel, count in counted.items():
                        answered[channel] = answered.get(channel, 0) + count
                places.append("the database")
    if not places:
        if forget:
            click.echo(f"{path}: no gap log; nothing to forget")
            return
        raise click.ClickException(f"{path}: no gap log. Fix: turn the setting gap_log on (KB_GAP_LOG=true) for "
                                   "serve, ask, slack or search --database-url, or give --log FILE (the search box's "
                                   "questions: --database-url, after publish with gap_log on)")
    if forget:
        return
    from ..serve.gaps_report import gap_report

    report = gap_report(rows, answered, searcher(), config.gap_min_wording, config.relevance_threshold)
    report["dropped"] = dropped
    if fmt == "json":
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    from ..checks.report import write_report

    write_report(report, out, "gaps.html.j2")
    click.echo(f"wrote {out}: {len(report['groups'])} groups of {report['questions']} questions")



def _judged_again(rows: list[dict], index, weak_below: float) -> tuple[list[dict], list[dict]]:
    """The search box's questions (judged by their words and the student's clicks) judged with the model: (weak,
    answered after all), by the best relevance of the set's first results against `weak_below`."""
    weak, strong = [], []
    for row in rows:
        best = max((r.relevance for r in index.search(row["query"], k=5)), default=0.0)
        (strong if best >= weak_below else weak).append(row)
    return weak, strong
