"""CLI for what learners could not find (issue 42): `knowledge-build gaps` writes the report of the gap log
(serve/gaps_report.py) as HTML, or prints it as JSON; `--forget` deletes the log's every question. The log is the
SQLite file of serve, ask, slack and search (store/gaps.py) and, with a database URL, the search box's questions in
that database (store/gaps_pg.py); the report takes both."""

from __future__ import annotations

import functools
import json
from collections import Counter
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

    from ..serve.service import open_search

    config = kb.load_config(site=site, index=index_dir, gap_log_file=log_file, database_url=database_url)
    path = gap_log_path(config)
    rows, answered, dropped, places = [], Counter(), 0, []
    searcher = functools.cache(lambda: open_search(config, use_database=False))  # opened when first needed
    if path.is_file():
        with GapLog(path, config.gap_retention_days) as log:
            if forget:
                click.echo(f"forgot {log.forget()} questions ({path})")
            else:
                rows = log.rows()
                answered.update(log.answered())
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
                    answered.update(counted)
                    answered.update(row["channel"] for row in strong)
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

    report = gap_report(rows, dict(sorted(answered.items())), searcher(), config.gap_min_wording,
                        config.relevance_threshold)
    report["dropped"] = dropped
    if fmt == "json":
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    from ..checks.report import write_report

    write_report(report, out, "gaps.html.j2")
    click.echo(f"wrote {out}: {len(report['groups'])} groups of {report['questions']} questions")


def _judged_again(rows: list[dict], index, weak_below: float) -> tuple[list[dict], list[dict]]:
    """The search box's questions (judged by their words and the student's clicks) judged with the model: (weak,
    answered after all), by the best relevance of the set's first results against `weak_below`; each wording searched
    once however often it was asked."""
    best: dict[str, float] = {}
    for query in dict.fromkeys(row["query"] for row in rows):
        best[query] = max((r.relevance for r in index.search(query, k=5)), default=0.0)
    weak = [row for row in rows if best[row["query"]] < weak_below]
    strong = [row for row in rows if best[row["query"]] >= weak_below]
    return weak, strong
