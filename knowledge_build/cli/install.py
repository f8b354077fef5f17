"""CLI command that puts the browser search box on a site: install-search."""

from __future__ import annotations

import json

import click

import knowledge_build as kb

from .common import PATH_TYPE, SITE_OPTION, fail_on_library_errors


@click.command("install-search")
@SITE_OPTION
@click.option("--baseurl", help="URL path the site is served under, for the snippet. Default: the site's "
              "configuration (Jekyll baseurl, Hugo baseURL, MkDocs site_url).")
@click.option("--output", type=PATH_TYPE, help="The artifact set directory, when `build` writes it elsewhere "
              "inside the site's output. Default: <site output>/knowledge/v2.")
@click.option("--snippet", "snippet_only", is_flag=True,
              help="Print the plain HTML snippet instead of writing the Jekyll include.")
@click.option("--force", is_flag=True, help="Replace an existing _includes/knowledge_search.html that differs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@fail_on_library_errors
def install_search(site, baseurl, output, snippet_only, force, fmt):
    """Put the search box on the site: write the Jekyll include _includes/knowledge_search.html, or print
    the HTML snippet to paste into another generator's template.

    The box searches the bundle `knowledge-build build` writes into <site output>/knowledge/v2/,
    in the browser, with no server. Without JavaScript the page shows no box."""
    from ..browser.install import INCLUDE_TAG, install_search as install

    done = install(kb.load_config(site=site, baseurl=baseurl, output=output), snippet_only, force)
    if fmt == "json":
        click.echo(json.dumps(done.to_dict(), ensure_ascii=False, indent=2))
        return
    if done.include is None:
        click.echo(f"{done.generator} site: paste this HTML where the search box should appear (it loads "
                   f"{done.bundle_url}; pass --baseurl if the site is served under another path):", err=True)
        click.echo(done.snippet, nl=False)
        return
    if done.status == "unchanged":
        click.echo(f"{done.include} is already the search box include; nothing was written.")
    else:
        click.echo(f"{'Replaced' if done.status == 'replaced' else 'Wrote'} {done.include}.")
    click.echo("Add this line to a layout (e.g. _layouts/default.html) where the box should appear:")
    click.echo(f"  {INCLUDE_TAG}")
    click.echo("The box searches the bundle `knowledge-build build` writes into the site "
               "(<output_dir>/, default knowledge/v2/).")
