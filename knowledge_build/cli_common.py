"""Helpers shared by the CLI modules: path type and the library-error adapter."""

from __future__ import annotations

import functools
from pathlib import Path

import click

import knowledge_build as kb

_PATH = click.Path(path_type=Path)


def _fail_on_library_errors(func):
    """Turn library errors into click errors: message and fix, exit status 1."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except kb.BuildFailed as exc:
            _print_diagnostics(exc.diagnostics, verbose=False)
            raise click.ClickException(str(exc).splitlines()[0]) from exc
        except kb.KnowledgeBuildError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def _print_diagnostics(diagnostics, verbose: bool) -> None:
    for d in diagnostics:
        if d.severity != "info" or verbose:
            click.echo(d.format(), err=True)
