"""CLI commands for the site's anchors and their index: check, suggest-ids, validate."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

import knowledge_build as kb

from .common import DATABASE_OPTION, INDEX_OPTION, SECTIONS_OPTION, SITE_OPTION, fail_on_library_errors


def _report_diagnostics(diagnostics, fmt: str, strict: bool, summary: dict) -> None:
    """Print findings in the chosen format and exit 1 on errors (or warnings with --strict)."""
    from ..checks.lint import display_path, github_annotation

    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = sum(d.severity == "warning" for d in diagnostics)
    summary = {**summary, "errors": errors, "warnings": warnings}
    if fmt == "json":
        click.echo(json.dumps({"summary": summary, "diagnostics": [
            {**d.to_dict(), "path": display_path(d.path)} for d in diagnostics]}, ensure_ascii=False, indent=2))
    else:
        for d in diagnostics:
            if d.severity == "info":
                continue
            if fmt == "github":
                click.echo(github_annotation(d, display_path(d.path)))
            else:
                click.echo(d.format(display_path(d.path)))
        if fmt == "text":
            if summary.get("left_out"):
                click.echo("Left out: " + "; ".join(f"{n} {why}" for why, n in summary["left_out"].items()) + ".")
            click.echo(f"{errors} error(s), {warnings} warning(s).")
    if errors or (strict and warnings):
        sys.exit(1)


@click.command()
@SITE_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="github prints workflow annotations (::error file=…,line=…::…).")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@SECTIONS_OPTION
@fail_on_library_errors
def check(site, fmt, strict, sections):
    """Lint the site's anchors: boxes without ids (with a suggestion), bad ids, broken links, toc.

    Exit status: 0 clean, 1 on errors (and on warnings with --strict).
    """
    from ..checks.lint import check_site

    result = check_site(kb.load_config(site=site, sections=sections))
    left_out = result.extraction.summary.get("left_out") if result.extraction else None
    _report_diagnostics(result.diagnostics, fmt, strict, {"pages": result.pages,
                                                         **({"left_out": left_out} if left_out else {})})


@click.command("suggest-ids")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@SITE_OPTION
@click.option("--write", is_flag=True, help="Insert the suggested id attributes into the files (only those bytes change).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@fail_on_library_errors
def suggest_ids(paths, site, write, fmt):
    """Propose ids for knowledge boxes that have none, and optionally write them.

    PATHS are pages or directories inside the site (default: the whole site). Ids come
    from the glossary (解の公式 -> quadratic-formula) or the romanised title (たすき掛け ->
    tasukigake); the prefix from the box class and title words.
    """
    from ..checks.lint import display_path, plans_for, write_suggestions

    plans = plans_for(kb.load_config(site=site), paths)
    suggestions = [s for plan in plans for s in plan.suggestions]
    refused = [plan.refused for plan in plans if plan.refused is not None]
    written = files = 0
    if write:
        written, files = write_suggestions(plans)
    if fmt == "json":
        click.echo(json.dumps({"suggestions": [{**s.to_dict(), "path": display_path(str(s.path))} for s in suggestions],
                               "refused": [{**d.to_dict(), "path": display_path(d.path)} for d in refused],
                               "written": written, "files_changed": files}, ensure_ascii=False, indent=2))
    else:
        _print_suggestions(suggestions, write, written, files, bool(refused))
    for d in refused:
        click.echo(d.format(display_path(d.path)), err=True)
    if refused:
        sys.exit(1)


def _print_suggestions(suggestions, write: bool, written: int, files: int, refused: bool) -> None:
    from ..checks.lint import display_path
    from ..diagnostics import printable, printable_path

    for s in suggestions:
        note = f"  (has id '{printable(s.existing_id)}': rename by hand)" if s.existing_id else ""
        click.echo(f"{printable_path(display_path(str(s.path)))}:{s.line}:{s.col}: {s.box_class} 「{printable(s.title)}」 "
                   f"-> {s.id}  [{printable(s.reason)}]{note}")
    if write:
        click.echo(f"Wrote {written} id(s) into {files} file(s).")
    elif suggestions:
        click.echo(f"{len(suggestions)} suggestion(s). Run again with --write to insert them.")
    elif not refused:
        click.echo("Every knowledge box has an id.")


@click.command()
@SITE_OPTION
@INDEX_OPTION
@DATABASE_OPTION
@click.option("--database", "use_database", is_flag=True,
              help="Validate what is published in the configured database instead of the artifacts "
                   "(implied by --database-url).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings (a stale index) too.")
@click.option("--no-embedder-check", "embedder_check", is_flag=True, flag_value=False, default=True,
              help="Leave out the embedder-unavailable warning (whether this machine could embed queries "
                   "for the set): the pre-commit hook's environment has no model and needs none.")
@SECTIONS_OPTION
@fail_on_library_errors
def validate(site, index_dir, database_url, use_database, fmt, strict, embedder_check, sections):
    """Check that the index matches the HTML and that the artifact set is intact.

    Errors: an indexed anchor missing from the HTML (a broken link for the tutor), a damaged
    artifact set. Warnings: knowledge ids or changed boxes the index does not have yet.
    """
    from ..checks.validate import validate_site
    from ..config import require_database_url

    config = kb.load_config(site=site, index=index_dir, database_url=database_url, sections=sections)
    url = require_database_url(config) if use_database or database_url else None
    diagnostics = validate_site(config, None, url, embedder_check=embedder_check)
    _report_diagnostics(diagnostics, fmt, strict, {})
