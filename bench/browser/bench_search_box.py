"""The search box on the reference corpus, in headless Chromium, against `search --mode lexical` and
Pagefind 1.6 in the same run (issue 27; figures in docs/benchmarks.md).

Steps: copy the corpus, `knowledge-build install-search`, put `{% include knowledge_search.html %}` after
<body> in each of its layouts, a real `jekyll build`, `knowledge-build build` (the local model; vectors
from --cache-dir, so a second run embeds nothing), then serve the built site on 127.0.0.1 under its
baseurl. In Debian's Chromium each query is typed into the box and the rendered result links are read
once the list says it answers that query. The same queries go through the library's lexical search on
the same set, and through Pagefind (bench/browser/pagefind_run.py: box ids on headings, extended
binary, the box-level ranking its default UI shows). Hits are counted by place (the page and fragment a
result links to): a result is a hit when it links where a labelled chunk does.

Bytes: each query in a fresh browser context (an empty cache) from the page's load until the results
are drawn, every response under the set's folder (the modules, the stylesheet, the entry point, the
shards and records the query needed); the server does not compress. `first_query` is the first dev
query's; `per_query_mean` the mean over the dev queries, each cold; `next_nine_mean` the mean of dev queries 2 to 10
typed one after another on one page. The box is also ranked by its module with the dense channel removed
(`box_words_only`, what `search_box_dense: false` gives), and the CLI's hybrid search beside `search --mode
lexical`. `box_ms_after_first`: each search's time in the page, the first of each set left out.

    .venv/bin/python bench/browser/bench_search_box.py [--sets dev,variant] [--work DIR] [--format json]
"""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness
import harness  # noqa: E402

SETS = {"dev": harness.DEV_QUERIES, "variant": harness.EVAL_DATA / "variant_queries.jsonl",
        "own": harness.EVAL_DATA / "corpus_queries.jsonl", "paraphrase": harness.EVAL_DATA / "paraphrase_queries.jsonl"}
CHROMIUM = os.environ.get("KB_CHROMIUM", "/usr/bin/chromium")
TIMEOUT_MS = float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 1000


def place(url: str) -> str:
    """A link as the site serves it: path and fragment, percent-decoded."""
    parts = urlsplit(url)
    return unquote(parts.path) + ("#" + unquote(parts.fragment) if parts.fragment else "")


def prepare(work: Path, cache_dir: Path) -> tuple[Path, str, Path]:
    """(the built site, its baseurl, the set) of the corpus with the search box in its layouts."""
    source = work / "src"
    if source.exists():
        shutil.rmtree(source)
    harness.copy_site(harness.CORPUS, source)
    cli = harness.cli_command()
    harness.run_process([*cli, "install-search", "--site", str(source)])
    for layout in sorted((source / "_layouts").glob("*.html")):
        text = layout.read_text(encoding="utf-8")
        if "knowledge_search.html" not in text:
            layout.write_text(re.sub(r"(<body[^>]*>)", r"\1\n{% include knowledge_search.html %}", text, count=1),
                              encoding="utf-8")
    built = subprocess.run(["jekyll", "build", "-q"], cwd=source, capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"jekyll build failed (exit {built.returncode}):\n{built.stderr}")
    harness.run_process([*cli, "build", "--site", str(source), "--cache-dir", str(cache_dir)])
    config = (source / "_config.yml").read_text(encoding="utf-8")
    match = re.search(r'^baseurl:\s*"?([^"\n]*)"?', config, re.M)
    baseurl = (match.group(1) if match else "").rstrip("/")
    return source / "_site", baseurl, source / "_site" / "knowledge" / "v2"


def serve(site: Path, baseurl: str, work: Path):
    www = work / "www"
    if www.exists():
        shutil.rmtree(www)
    target = www / baseurl.strip("/") if baseurl else www
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(site, target_is_directory=True)
    sent: list[tuple[str, int]] = []

    class Counting(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def copyfile(self, source, outputfile):
            data = source.read()
            outputfile.write(data)
            sent.append((unquote(self.path), len(data)))

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Counting, directory=www))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}", sent


def box_rankings(browser, page_url: str, queries: list[str], k: int) -> list[list[str]]:
    """Each query typed into the box of one page; the first k result links, as places."""
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
               else route.abort())
    page.goto(page_url, wait_until="load")
    field = page.locator(".ks-input")
    out = []
    for query in queries:
        field.fill("")
        field.press_sequentially(query)
        page.wait_for_function("q => document.querySelector('.ks-results')?.dataset.query === q", arg=query.strip())
        hrefs = page.eval_on_selector_all(".ks-results a", "links => links.map(a => a.href)")
        out.append([place(h) for h in hrefs[:k]])
    page.close()
    return out


def bytes_per_query(browser, page_url: str, queries: list[str], sent: list, set_path: str) -> list[int]:
    """Bytes under the set's folder for each query, each in a fresh context."""
    counts = []
    for query in queries:
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("http://127.0.0.1")
                   else route.abort())
        start = len(sent)
        page.goto(page_url, wait_until="load")
        page.locator(".ks-input").fill(query)
        page.wait_for_function("q => document.querySelector('.ks-results')?.dataset.query === q", arg=query.strip())
        counts.append(sum(size for path, size in sent[start:] if set_path in path))
        context.close()
    return counts


def module_rankings(browser, page_url: str, module: str, queries: list[str], k: int, dense: bool) -> dict:
    """The box's module imported on the page (no typing): each query's first k links as places, and the
    milliseconds each search took (performance.now around it; the first query fetches, the others mostly not);
    `dense` False: the entry point's dense channel removed, as a bundle built with search_box_dense false ranks."""
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(page_url, wait_until="load")
    got = page.evaluate("""async ([module, queries, k, dense]) => {
        const m = await import(module);
        const index = await m.open(new URL("./", module));
        if (!dense) delete index.entry.dense;
        const links = [], ms = [];
        for (const q of queries) {
            const start = performance.now();
            const found = await index.search(q, {k});
            ms.push(performance.now() - start);
            links.push(found.map((r) => new URL(r.url, location.href).href));
        }
        return {links, ms};
    }""", [module, queries, k, dense])
    page.close()
    return {"rankings": [[place(h) for h in links] for links in got["links"]], "ms": got["ms"]}


def warm_bytes(browser, page_url: str, queries: list[str], sent: list, set_path: str) -> list[int]:
    """Bytes under the set's folder for each of `queries` typed one after another on one page (the browser's
    cache and the module's own kept files as a student has them after the first query)."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    start = len(sent)
    page.goto(page_url, wait_until="load")
    counts = []
    for query in queries:
        page.locator(".ks-input").fill(query)
        page.wait_for_function("q => document.querySelector('.ks-results')?.dataset.query === q", arg=query.strip())
        counts.append(sum(size for path, size in sent[start:] if set_path in path))
        start = len(sent)
    context.close()
    return counts


def hits(rankings: list[list[str]], items: list[dict], url_of: dict[str, str]) -> dict[str, float]:
    h1 = h5 = 0
    for ranked, item in zip(rankings, items):
        wanted = {url_of[i] for i in item["relevant"] if i in url_of}
        h1 += bool(ranked) and ranked[0] in wanted
        h5 += any(r in wanted for r in ranked[:5])
    return {"hit@1": round(h1 / len(items), 3), "hit@5": round(h5 / len(items), 3)}


def main() -> None:
    args = harness.parser(__doc__)
    args.add_argument("--sets", default="dev,variant", help="query sets: " + ", ".join(SETS))
    args.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kb-bench-search-box")
    args.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build" / "bench-corpus")
    args.add_argument("--no-pagefind", action="store_true", help="skip the Pagefind baseline")
    args.add_argument("--format", choices=("text", "json"), default="text")
    options = args.parse_args()
    from playwright.sync_api import sync_playwright

    import knowledge_build as kb
    from pagefind_run import pagefind_results

    work = options.work
    work.mkdir(parents=True, exist_ok=True)
    site, baseurl, set_dir = prepare(work, options.cache_dir)
    chunks = [json.loads(line) for line in (set_dir / "knowledge_chunks.jsonl").read_text(encoding="utf-8").splitlines()]
    url_of = {c["id"]: c["url"] for c in chunks}
    sets = {name: harness.read_jsonl(SETS[name]) for name in options.sets.split(",")}
    index = kb.KnowledgeIndex.open(set_dir)
    httpd, base, sent = serve(site, baseurl, work)
    with_box = next(p for p in sorted(site.rglob("*.html")) if 'class="knowledge-search"' in p.read_text(encoding="utf-8"))
    page_url = f"{base}{baseurl}/{with_box.relative_to(site).as_posix()}"  # a page whose layout has the box
    report: dict = {"machine": harness.machine(), "load": harness.load_average(), "sets": {}}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=TIMEOUT_MS)
            module = f"{base}{baseurl}/knowledge/v2/knowledge-search.js"
            latency = []
            for name, items in sets.items():
                queries = [it["query"] for it in items]
                box = box_rankings(browser, page_url, queries, 5)
                words = module_rankings(browser, page_url, module, queries, 5, dense=False)
                latency += module_rankings(browser, page_url, module, queries, 5, dense=True)["ms"][1:]
                lexical = [[r.url for r in index.search(q, k=5, mode="lexical")] for q in queries]
                hybrid = [[r.url for r in index.search(q, k=5)] for q in queries]
                report["sets"][name] = {"box": hits(box, items, url_of),
                                        "box_words_only": hits(words["rankings"], items, url_of),
                                        "lexical": hits(lexical, items, url_of), "hybrid": hits(hybrid, items, url_of)}
            dev = [it["query"] for it in sets.get("dev", next(iter(sets.values())))]
            counts = bytes_per_query(browser, page_url, dev, sent, "/knowledge/v2/")
            warm = warm_bytes(browser, page_url, dev[:10], sent, "/knowledge/v2/")
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    bundle = [p for p in set_dir.iterdir() if p.name.startswith("knowledge-search")]
    static = [p for p in bundle if p.suffix in (".js",)]
    latency.sort()
    report["box_ms_after_first"] = {"p50": round(latency[len(latency) // 2], 1),
                                    "p95": round(latency[int(len(latency) * 0.95)], 1), "queries": len(latency)}
    report["box_bytes"] = {"first_query": counts[0], "per_query_mean": round(sum(counts) / len(counts)),
                           "max_query": max(counts), "next_nine_mean": round(sum(warm[1:]) / max(1, len(warm) - 1)),
                           "bundle_total": sum(p.stat().st_size for p in bundle), "bundle_files": len(bundle),
                           "js_gzip": sum(len(gzip.compress(p.read_bytes(), 9)) for p in static)}
    if not options.no_pagefind:
        for name, items in sets.items():
            found = pagefind_results(site, baseurl, [it["query"] for it in items], work / f"pagefind-{name}")
            ranked = [[place(u) for u in found["results"][it["query"]]] for it in items]
            report["sets"][name]["pagefind"] = hits(ranked, items, url_of)
            report.setdefault("pagefind_bytes", found["bytes"])
            report["pagefind_version"] = found["version"]
    if options.format == "json":
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    print(f"machine: {report['machine']}; load {report['load']}")
    for name, row in report["sets"].items():
        for system, figures in row.items():
            print(f"{name:8} {system:9} hit@1 {figures['hit@1']:.3f}  hit@5 {figures['hit@5']:.3f}")
    print("box bytes:", json.dumps(report["box_bytes"]))
    print("box search ms after the first:", json.dumps(report["box_ms_after_first"]))
    if "pagefind_bytes" in report:
        print("pagefind bytes:", json.dumps({k: v for k, v in report["pagefind_bytes"].items()
                                             if k in ("first_query", "per_query_mean", "bundle_total", "bundle_files")}))


if __name__ == "__main__":
    main()
