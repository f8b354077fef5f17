"""CLI commands for the database and the MCP server: publish, db start/stop/migrate/sql, serve."""

from __future__ import annotations

import json
from pathlib import Path

import click

import knowledge_build as kb

from .common import (
    DATABASE_OPTION,
    INDEX_OPTION,
    PATH_TYPE,
    PROGRESS_OPTION,
    SITE_OPTION,
    command_options,
    fail_on_library_errors,
    show_progress,
)


@click.command()
@INDEX_OPTION
@SITE_OPTION
@DATABASE_OPTION
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.option("--replace", is_flag=True,
              help="Replace the chunks of another site the database holds (refused without it).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@PROGRESS_OPTION
@fail_on_library_errors
def publish(index_dir, site, database_url, dry_run, replace, fmt, progress):
    """Publish an artifact set to Postgres/pgvector in one transaction (diff by content).

    Applies pending migrations, upserts new and changed chunks, deletes chunks whose
    anchors are gone and records the build id, all at once: readers see the old set or
    the new one. Publishing the same build twice changes nothing. A database holding
    another site's chunks is refused unless --replace.
    """
    from ..config import index_dir as resolve_index
    from ..config import require_database_url
    from ..store.postgres import connect
    from ..store.postgres import publish as publish_set
    from ..store.published_site import AnotherSite

    config = kb.load_config(site=site, index=index_dir, database_url=database_url)
    target = resolve_index(config)
    try:
        with connect(require_database_url(config)) as conn:
            plan = publish_set(conn, target, dry_run=dry_run, progress=show_progress(progress, fmt),
                               thesaurus=config.thesaurus, replace=replace, gap_settings=config)
    except AnotherSite as exc:
        if fmt == "json":
            _print_plan(exc.plan, dry_run, fmt)
        raise
    _print_plan(plan, dry_run, fmt)
    if plan.refusal:
        raise plan.refusal


def _print_plan(plan, dry_run: bool, fmt: str) -> None:
    if fmt == "json":
        refused = plan.refusal.for_options(command_options()) if plan.refusal else None
        click.echo(json.dumps({**plan.to_dict(), "dry_run": dry_run, "refused": refused}, ensure_ascii=False,
                              indent=2))
        return
    verb = "Would publish" if dry_run else "Published"
    click.echo(f"{verb} build {plan.build_id} (was {plan.previous_build or 'empty'}): {len(plan.insert)} new, "
               f"{len(plan.update)} changed, {len(plan.delete)} deleted, {plan.unchanged} unchanged.")
    if dry_run:
        for label, ids in (("+", plan.insert), ("~", plan.update), ("-", plan.delete)):
            for chunk_id in ids:
                click.echo(f"  {label} {chunk_id}")


@click.group()
def db():
    """Local PostgreSQL + pgvector for development, and the schema's SQL."""


@db.command("start")
@click.option("--data-dir", type=PATH_TYPE, default=Path(".knowledge-db"), show_default=True, help="Where the database lives.")
@fail_on_library_errors
def db_start(data_dir):
    """Start a local PostgreSQL 18 + pgvector (no root, no Docker) and print its URL (for KB_DATABASE_URL)."""
    from ..store import server

    url = server.start(data_dir)
    click.echo(url)
    click.echo(f"Running until 'knowledge-build db stop --data-dir {data_dir}'. Use it with: export KB_DATABASE_URL='{url}'",
               err=True)


@db.command("stop")
@click.option("--data-dir", type=PATH_TYPE, default=Path(".knowledge-db"), show_default=True, help="Where the database lives.")
def db_stop(data_dir):
    """Stop the local database started by 'db start'."""
    from ..store import server

    click.echo("Stopped." if server.stop(data_dir) else f"No database is running in {data_dir}.")


@db.command("migrate")
@DATABASE_OPTION
@click.option("--dim", type=click.IntRange(1), required=True, help="Vector dimension (384 local model, 1536 OpenAI).")
@fail_on_library_errors
def db_migrate(database_url, dim):
    """Apply the schema migrations that the database has not recorded yet, and the functions whose text changed."""
    from ..config import require_database_url
    from ..store.gaps_pg import configure
    from ..store.postgres import connect, migrate

    config = kb.load_config(database_url=database_url)
    with connect(require_database_url(config)) as conn:
        applied = migrate(conn, dim)
        with conn.transaction():
            configure(conn, config)  # the search box's gap log follows the setting gap_log (store/gaps_pg.py)
    click.echo(f"Applied {', '.join(applied)}." if applied else "Nothing to apply: the schema and its functions are up "
                                                                "to date.")


@db.command("sql")
@click.option("--dim", type=click.IntRange(1), required=True, help="Vector dimension (384 local model, 1536 OpenAI).")
def db_sql(dim):
    """Print the whole schema as SQL (the migrations, then the functions), e.g. to paste into Supabase's SQL editor."""
    from ..store.db_functions import function_files
    from ..store.postgres import migration_sql

    for version, sql in migration_sql(dim):
        click.echo(f"-- {version}\n{sql.strip()}\ninsert into knowledge_migrations (version) values ('{version}')"
                   " on conflict do nothing;\n")
    for file in function_files(dim):
        click.echo(f"-- functions/{file.name}\n{file.apply_sql().strip()}\ninsert into knowledge_functions (name, sha256)"
                   f" values ('{file.name}', '{file.sha256}') on conflict (name) do update set sha256 = excluded.sha256,"
                   " applied_at = now();\n")


@click.command()
@INDEX_OPTION
@SITE_OPTION
@click.option("--database-url", help="Search this database first (artifacts as fallback) and keep notes in it. "
                                     "Default: setting database_url (KB_DATABASE_URL).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="HTTP port.")
@click.option("--token", envvar="KB_MCP_TOKEN", show_envvar=True,
              help="HTTP: require 'Authorization: Bearer TOKEN' on every request but GET /health. "
                   "Required when --host is not a loopback address.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, envvar="KB_ALLOWED_HOSTS", show_envvar=True,
              callback=lambda ctx, param, values: tuple(h for v in values for h in v.replace(",", " ").split()),
              help="HTTP: accept only this Host header (and its http/https Origin), e.g. 'kb.example.org' or "
                   "'localhost:*'; repeatable (KB_ALLOWED_HOSTS: names separated by commas). Default: the "
                   "loopback names when bound to loopback, else no check.")
@click.option("--max-streams", type=click.IntRange(1), default=100, show_default=True, envvar="KB_MCP_MAX_STREAMS",
              show_envvar=True, help="HTTP: GET /mcp event streams open at once; one more gets 503 (the server "
                                     "sends nothing on them, so clients need none).")
@click.option("--stream-idle-timeout", "stream_idle_seconds", type=click.FloatRange(0, min_open=True), default=60.0,
              show_default=True, envvar="KB_MCP_STREAM_IDLE_TIMEOUT", show_envvar=True,
              help="HTTP: seconds a GET /mcp event stream stays open without an event.")
@click.option("--store", help="Where notes, imported documents and web sources are kept: a SQLite file or a "
                              "postgresql:// URL (setting store, KB_STORE). Default: the database when one is "
                              "given, else .knowledge-notes.sqlite.")
@click.option("--notes", "notes_path", type=PATH_TYPE,
              help="SQLite file for notes when no database and no --store is given (setting notes, KB_NOTES; "
                   "the older name of --store).")
@fail_on_library_errors
def serve(index_dir, site, database_url, transport, host, port, token, allowed_hosts, max_streams, stream_idle_seconds,
          store, notes_path):
    """Run the MCP server for AI tutors (stdio, or streamable HTTP at /mcp with GET /health)."""
    from ..serve.mcp_server import serve as run
    from ..serve.mcp_transport import is_loopback

    if transport == "http" and not token and not is_loopback(host):
        raise click.ClickException(
            f"refusing to serve on {host} without a token: anyone who can reach it could read and write the "
            "notes. Set KB_MCP_TOKEN (or pass --token) to a long random secret, or bind to 127.0.0.1.")
    config = kb.load_config(site=site, index=index_dir, database_url=database_url, notes=notes_path, store=store)
    run(config, transport, host, port, token or None, tuple(allowed_hosts), max_streams=max_streams,
        stream_idle_seconds=stream_idle_seconds)
