"""Helpers shared by the CLI modules: path type and the library-error adapter."""

from __future__ import annotations

import functools
from pathlib import Path

import click

import knowledge_build as kb

from ..config import SECTION_MODES

PATH_TYPE = click.Path(path_type=Path)


def fail_on_library_errors(func):
    """Turn library errors into click errors: message and fix, exit status 1."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except kb.BuildFailed as exc:
            print_diagnostics(exc.diagnostics, verbose=False)
            raise click.ClickException(str(exc).splitlines()[0]) from exc
        except kb.KnowledgeBuildError as exc:
            raise click.ClickException(exc.for_options(command_options())) from exc

    return wrapper


def command_options() -> set[str] | None:
    """The options (--name) of the running command, or None outside click."""
    context = click.get_current_context(silent=True)
    if context is None:
        return None
    return {name for param in context.command.params for name in (*param.opts, *param.secondary_opts)}


def print_diagnostics(diagnostics, verbose: bool) -> None:
    for d in diagnostics:
        if d.severity != "info" or verbose:
            click.echo(d.format(), err=True)


# Options of every command that reads an artifact set or a database; values resolve through one
# Config (knowledge.yml < KB_* environment < these flags).
SITE_OPTION = click.option("--site", type=PATH_TYPE,
                           help="The site: a Jekyll source directory (with _config.yml), a Hugo, MkDocs or Sphinx project, or built HTML (_site, public, site, _build/html, a plain folder).")
INDEX_OPTION = click.option("--index", "index_dir", type=PATH_TYPE,
                            help="Artifact directory (…/knowledge/v2, or knowledge/ to follow latest.json). "
                                 "Default: setting index (KB_INDEX), else <site output>/knowledge/v2.")
DATABASE_OPTION = click.option("--database-url",
                               help="PostgreSQL/pgvector URL (Supabase: the connection string). "
                                    "Default: setting database_url (KB_DATABASE_URL).")
# Long work (build, publish): a bar on a terminal, a line per tenth of each stage elsewhere (progress.py).
PROGRESS_OPTION = click.option("--progress/--no-progress", default=None,
                               help="Progress on stderr: a bar on a terminal, else a line at each tenth of "
                                    "each stage. Default: on with --format text, off with json.")


def show_progress(progress: bool | None, fmt: str) -> bool:
    return fmt == "text" if progress is None else progress


# Commands that extract chunks from the site (build, check, report, validate).
SECTIONS_OPTION = click.option("--sections", type=click.Choice(SECTION_MODES),
                               help="Which content outside anchored boxes becomes section/table chunks: all (every "
                                    "section's text outside its boxes), unanchored (only sections that hold no "
                                    "anchored box) or off. Default: setting sections (KB_SECTIONS), else all.")
