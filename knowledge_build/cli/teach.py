"""CLI for what a tutor plans with (issue 42, items 3 and 4): `knowledge-build outline [--material M]`, `chunk ID` and
`knowledge-build learning-path PAGE_OR_ID_OR_QUERY` (teaching.py; the same as the MCP tools outline and
learning_path)."""

from __future__ import annotations

import json

import click

import knowledge_build as kb

from .common import INDEX_OPTION, SITE_OPTION, fail_on_library_errors

FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)


def _reading(command):
    """The options of a command that reads a set: --index, --site, --format; library errors as one line."""
    return INDEX_OPTION(SITE_OPTION(FORMAT_OPTION(fail_on_library_errors(command))))


def _service(site, index_dir):
    """The set's SearchService: the artifacts hold the pages' order; a --query search asks the database first when
    one is configured, as `search` does."""
    from ..serve.service import SearchService, open_search

    config = kb.load_config(site=site, index=index_dir)
    found = open_search(config)
    return found if isinstance(found, SearchService) else SearchService(found)


@click.command("outline")
@click.option("--material", help="Only this page: its file name without .html.")
@_reading
def outline(material, index_dir, site, fmt):
    """The site's pages, or one page, with their sections, boxes and tables in page order."""
    pages = _service(site, index_dir).outline(material)
    if fmt == "json":
        click.echo(json.dumps({"pages": pages}, ensure_ascii=False, indent=2))
        return
    for page in pages:
        click.echo(f"{page['title']} ({page['material']})  {page['url']}")
        _items(page["items"], 1)


def _items(items, depth: int) -> None:
    for item in items:
        level = f" [{item['level']}]" if item["level"] else ""
        click.echo(f"{'  ' * depth}{item['type']}: {item['title']}{level}  {item['id']}")
        _items(item.get("items", []), depth + 1)


@click.command("learning-path")
@click.argument("target")
@click.option("--query", "as_query", is_flag=True,
              help="Read TARGET as a question: the path of the page of the search's first result.")
@_reading
def learning_path(target, as_query, index_dir, site, fmt):
    """What to know before a page (TARGET: its name or a box id) and what builds on it, in an order a student can follow."""
    if not target.strip():
        raise click.UsageError("give a page, a box id, or a question with --query")
    path = _service(site, index_dir).learning_path(None if as_query else target.strip(), target if as_query else None)
    if fmt == "json":
        click.echo(json.dumps(path, ensure_ascii=False, indent=2))
        return
    if "found_by" in path:
        click.echo(f"「{target}」 → {path['found_by']['id']}")
    for heading, pages in (("Before", path["before"]), ("This page", [path["page"]]), ("After", path["after"])):
        click.echo(f"{heading}:" + ("" if pages else " (none)"))
        for page in pages:
            click.echo(f"  {page['title']} ({page['material']})  {page['url']}")
    for missing in path["missing"]:
        click.echo(f"missing: {missing['page']} lists {missing['prerequisite']}, which is no page of the set")
    for cycle in path["cycles"]:
        click.echo("cycle: " + " → ".join([*cycle, cycle[0]]))


@click.command("chunk")
@click.argument("chunk_id")
@click.option("--part", type=click.Choice(["problem", "solution"]),
              help="Only this part of a box whose answer the page marks: the problem without its answer, or the answer.")
@_reading
def chunk(chunk_id, part, index_dir, site, fmt):
    """One chunk whole, by its id (an old id that moved gives the chunk it moved to, and says so)."""
    found = _service(site, index_dir).get(chunk_id.strip(), part)
    if fmt == "json":
        click.echo(json.dumps(found, ensure_ascii=False, indent=2))
        return
    if found.get("moved_from"):
        click.echo(f"{found['moved_from']} moved to {found['id']}")
    click.echo(f"{found['title']} ({found['type']}{', ' + found['level'] if found.get('level') else ''})  {found['url']}")
    for learn in found.get("learns") or []:
        click.echo(f"  - {learn}")
    click.echo(found["content"])
