"""The search box on a synthetic site of N chunks (100,000 by default), in headless Chromium, beside Pagefind 1.6
on the same built pages in the same run (issue 41; figures in docs/benchmarks.md).

Steps: bench_scale.py's synthetic site (the reference corpus's pages copied and retitled until N chunks; the
corpus is only read), `knowledge-build install-search` and the box's include in its layouts, a real
`jekyll build`, Pagefind over the built pages (bench/browser/pagefind_run.py), then `knowledge-build build`
through the library with bench_scale's BigramEmbedder (the local model would take hours at this size; the box's
dense channel is distilled from that embedder as it would be from the model), the set put where the layouts'
box reads it, and the built site served on 127.0.0.1 by a server that counts the bytes it sends (no
compression).

Measured for the dev queries: each typed into the box (Chromium), and through Pagefind's JS API:
- answered: queries with at least one result; hit@5: a result links where a labelled chunk is, in any copy
  of its page (the copies' `_rNNNN` suffix is ignored, since every copy answers alike);
- bytes per query: the first query's (a fresh browser context, from the page's load to the drawn results);
  each query cold in its own context (median, mean); and each of queries 2 to 60 typed one after another on
  one page (median, mean: what a student who keeps searching fetches), for the box also the mean of 2 to 10.

    .venv/bin/python bench/browser/bench_box_scale.py [--size 100000] [--work DIR] [--reuse] [--format json]

`--reuse` keeps a site and set already in --work (same size) and measures again: the build is skipped when
the set's manifest is there, Pagefind when its results are.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))  # bench/: the shared harness and bench_scale
sys.path.insert(0, str(HERE.parent))
import bench_scale  # noqa: E402
import harness  # noqa: E402
from bench_search_box import TIMEOUT_MS, CHROMIUM, box_rankings, bytes_per_query, place, serve, warm_bytes  # noqa: E402

COPY = re.compile(r"_r\d{4}(?=\.html|/|#|$)")


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def original(url: str) -> str:
    """A result's place with its copy's suffix taken off: every copy of a page answers as the page does."""
    return COPY.sub("", place(url))


def prepare(work: Path, size: int, reuse: bool) -> tuple[Path, str]:
    """(the built site, its baseurl) of the synthetic site with the box in its layouts."""
    source = work / "src"
    if not (reuse and (source / "_site").is_dir()):
        shutil.rmtree(source, ignore_errors=True)
        log(f"generating a site of about {size:,} chunks")
        bench_scale.generate_site(harness.CORPUS, source, size)
        harness.run_process([*harness.cli_command(), "install-search", "--site", str(source)])
        for layout in sorted((source / "_layouts").glob("*.html")):
            text = layout.read_text(encoding="utf-8")
            layout.write_text(re.sub(r"(<body[^>]*>)", r"\1\n{% include knowledge_search.html %}", text, count=1),
                              encoding="utf-8")
        log(f"jekyll build of {sum(1 for _ in source.rglob('*.html')):,} files")
        built = subprocess.run(["jekyll", "build", "-q"], cwd=source, capture_output=True, text=True)
        if built.returncode != 0:
            sys.exit(f"jekyll build failed (exit {built.returncode}):\n{built.stderr}")
    config = (source / "_config.yml").read_text(encoding="utf-8")
    match = re.search(r'^baseurl:\s*"?([^"\n]*)"?', config, re.M)
    return source / "_site", (match.group(1) if match else "").rstrip("/")


def build_set(site_source: Path, output: Path, cache: Path, reuse: bool) -> dict:
    if reuse and (output / "manifest.json").exists():
        return {"reused": True}
    log("knowledge-build build (BigramEmbedder)")
    run = harness.run_process(harness.python_command(str(HERE.parents[1] / "bench_scale.py"), "_build", str(site_source),
                                                     str(output), str(cache), json.dumps({"KB_ARTIFACT_SCHEMA": "2"})),
                              capture_stderr=False, label="knowledge-build build", every=60.0)
    return json.loads(run.stdout.strip().splitlines()[-1])


def labelled_places(set_dir: Path, items: list[dict]) -> list[set[str]]:
    """Per query, the places (copy suffix off) of its labelled chunks."""
    wanted = {i for item in items for i in item["relevant"]}
    url_of = {}
    with (set_dir / "knowledge_chunks.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            chunk = json.loads(line)
            if chunk["id"] in wanted:
                url_of[chunk["id"]] = chunk["url"]
    return [{original(url_of[i]) for i in item["relevant"] if i in url_of} for item in items]


def figures(rankings: list[list[str]], wanted: list[set[str]]) -> dict:
    return {"answered": sum(1 for r in rankings if r), "queries": len(rankings),
            "hit@5": round(sum(any(original(u) in w for u in r[:5]) for r, w in zip(rankings, wanted)) / len(wanted), 3)}


def byte_figures(cold: list[int], session: list[int]) -> dict:
    """The first query's bytes; the median and mean of each query cold; the median and mean of queries 2 to n
    typed one after another on one page (what a student who keeps searching fetches per query)."""
    return {"first_query": cold[0], "cold_median": int(statistics.median(cold)), "cold_mean": round(sum(cold) / len(cold)),
            "median": int(statistics.median(session[1:])), "mean": round(sum(session[1:]) / len(session[1:]))}


def main() -> None:
    args = harness.parser(__doc__)
    args.add_argument("--size", type=int, default=100_000, help="chunks wanted (default 100000)")
    args.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kb-bench-box-scale")
    args.add_argument("--reuse", action="store_true", help="measure again on the site and set already in --work")
    args.add_argument("--no-pagefind", action="store_true", help="skip the Pagefind baseline")
    args.add_argument("--format", choices=("text", "json"), default="text")
    options = args.parse_args()
    from playwright.sync_api import sync_playwright

    from pagefind_run import pagefind_results

    work = options.work
    work.mkdir(parents=True, exist_ok=True)
    items = harness.read_jsonl(harness.DEV_QUERIES)
    queries = [it["query"] for it in items]
    site, baseurl = prepare(work, options.size, options.reuse)
    box_dir = site / "knowledge" / "v2"
    if box_dir.is_symlink():
        box_dir.unlink()  # Pagefind copies the site: the set is put in only after it
    report: dict = {"machine": harness.machine(), "load": harness.load_average(), "size": options.size}
    pagefind_file = work / "pagefind.json"
    if not options.no_pagefind:
        if not (options.reuse and pagefind_file.exists()):
            log("Pagefind over the built pages")
            pagefind_file.write_text(json.dumps(pagefind_results(site, baseurl, queries, work / "pagefind", k=5),
                                                ensure_ascii=False), encoding="utf-8")
        found = json.loads(pagefind_file.read_text(encoding="utf-8"))
    set_dir = work / "set"
    report["build"] = build_set(work / "src", set_dir, work / "cache", options.reuse)
    box_dir.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(box_dir, ignore_errors=True)
    box_dir.symlink_to(set_dir, target_is_directory=True)
    wanted = labelled_places(set_dir, items)
    if not options.no_pagefind:
        report["pagefind"] = {**figures([found["results"][q] for q in queries], wanted),
                              **byte_figures(found["bytes"]["per_query"], found["bytes"]["session_per_query"]), "version": found["version"],
                              "bundle_total": found["bytes"]["bundle_total"], "bundle_files": found["bytes"]["bundle_files"]}
    httpd, base, sent = serve(site, baseurl, work)
    with_box = next(p for p in sorted(site.rglob("*.html")) if 'class="knowledge-search"' in p.read_text(encoding="utf-8"))
    page_url = f"{base}{baseurl}/{with_box.relative_to(site).as_posix()}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=TIMEOUT_MS)
            log("the box: typed queries")
            ranked = box_rankings(browser, page_url, queries, 5)
            log("the box: bytes per query, each cold")
            counts = bytes_per_query(browser, page_url, queries, sent, "/knowledge/v2/")
            log("the box: bytes per query, typed one after another")
            warm = warm_bytes(browser, page_url, queries, sent, "/knowledge/v2/")
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    bundle = [p for p in set_dir.iterdir() if p.name.startswith("knowledge-search")]
    entry = json.loads((set_dir / "knowledge-search.json").read_text(encoding="utf-8"))
    report["box"] = {**figures(ranked, wanted), **byte_figures(counts, warm),
                     "next_nine_mean": round(sum(warm[1:10]) / 9),
                     "bundle_total": sum(p.stat().st_size for p in bundle), "bundle_files": len(bundle),
                     "dense": "dense" in entry, "rows": entry["rows"]}
    if options.format == "json":
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    print(f"machine: {report['machine']}; load {report['load']}; {report['box']['rows']:,} chunks")
    for system in ("box", "pagefind"):
        if system in report:
            print(system, json.dumps(report[system], ensure_ascii=False))


if __name__ == "__main__":
    main()
