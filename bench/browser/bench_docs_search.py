"""The manual's own search box against Material for MkDocs' built-in search, on the manual itself (issue 43; figures
in docs/guide/search-box.md, "The manual's own search").

Both builds of docs/ in the same run: the manual as shipped (mkdocs.yml: Material's search off, the project's box
through docs-theme/, the set `knowledge-build build --site` writes with the local model), and the same pages with
Material's search plugin on and no box. Each is served on 127.0.0.1 and each of the 25 English questions of
data/eval/docs_queries_en.jsonl (written before either search was run on them) is typed into each search in
headless Chromium. Results are compared by page: each search's results in order, a page counted at its first
result (the box ranks boxes, sections and tables; Material ranks pages with their sections under them). hit@k: one of
the question's pages among the first k pages.

    .venv/bin/python bench/browser/bench_docs_search.py [--work DIR] [--cache-dir DIR] [--format json]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from bench_search_box import CHROMIUM, TIMEOUT_MS  # noqa: E402

QUERIES = ROOT / "data" / "eval" / "docs_queries_en.jsonl"
STEADY, POLL_MS = 5, 200  # Material's list is read when unchanged over 5 reads 200 ms apart


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build(work: Path, cache_dir: Path) -> tuple[Path, Path]:
    """(the manual with the box, the manual with Material's search)."""
    mkdocs = str(Path(sys.executable).parent / "mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    ours, theirs = work / "box", work / "material"
    for path in (ours, theirs):
        shutil.rmtree(path, ignore_errors=True)
    subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(ours)], cwd=ROOT, check=True, env=env,
                   capture_output=True)
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for old, new in (("plugins: []", "plugins:\n  - search"), ("  custom_dir: docs-theme\n", ""),
                     ("docs_dir: docs", f"docs_dir: {ROOT / 'docs'}")):
        if old not in text:
            raise SystemExit(f"mkdocs.yml: error: no {old!r} to change for Material's search. Fix: update this bench")
        text = text.replace(old, new, 1)
    variant = work / "mkdocs-material-search.yml"
    variant.write_text(text, encoding="utf-8")
    subprocess.run([mkdocs, "build", "--strict", "-f", str(variant), "--site-dir", str(theirs)], check=True, env=env,
                   capture_output=True)
    log("indexing the manual with knowledge-build (the local model)")
    subprocess.run([str(Path(sys.executable).parent / "knowledge-build"), "build", "--site", str(ours)], check=True,
                   env={**env, "KB_CACHE_DIR": str(cache_dir)}, capture_output=True)
    return ours, theirs


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def page_of(url: str) -> str:
    """A result's page as its Markdown file: /guide/install/#extras -> guide/install.md."""
    path = unquote(urlsplit(url).path).strip("/")
    return f"{path}.md" if path else "index.md"


def distinct(pages: list[str]) -> list[str]:
    return list(dict.fromkeys(pages))


def box_pages(browser, origin: str, queries: list[str]) -> list[list[str]]:
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(origin + "/", wait_until="load")
    field = page.locator(".ks-input")
    out = []
    for query in queries:
        field.fill("")
        field.press_sequentially(query)
        page.wait_for_function("q => document.querySelector('.ks-results')?.dataset.query === q", arg=query)
        hrefs = page.eval_on_selector_all(".ks-results a", "links => links.map(a => a.href)")
        out.append(distinct([page_of(h) for h in hrefs]))
    page.close()
    return out


def material_pages(browser, origin: str, queries: list[str]) -> list[list[str]]:
    """Material's search as a reader uses it: the search field opened, the query typed, the result list read when
    its count line answers the query (the worker has run)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(origin + "/", wait_until="load")
    out = []
    for query in queries:
        field = page.locator("input[data-md-component=search-query]")
        field.click()  # the header's search field (a desktop-wide window shows it)
        field.fill("")
        page.wait_for_function("() => !/matching/i.test(document.querySelector('.md-search-result__meta')?.textContent"
                               " || '')")  # the previous answer is gone
        field.press_sequentially(query)
        page.wait_for_function(
            "q => { const f = document.querySelector('input[data-md-component=search-query]');"
            " const meta = document.querySelector('.md-search-result__meta');"
            " const items = document.querySelectorAll('li.md-search-result__item').length;"
            " return f && f.value === q && meta && (/^No matching/i.test(meta.textContent.trim())"
            "   || (/matching/i.test(meta.textContent) && items > 0)); }", arg=query)
        # Material searches at each keystroke: a prefix's answer may be drawn first, then the whole query's. The
        # list is read once it has stayed the same for STEADY reads POLL_MS apart.
        hrefs, steady = None, 0
        while steady < STEADY:
            page.wait_for_timeout(POLL_MS)
            now = page.eval_on_selector_all("li.md-search-result__item > a.md-search-result__link",
                                            "links => links.map(a => a.href)")
            steady = steady + 1 if now == hrefs else 0
            hrefs = now
        out.append(distinct([page_of(h) for h in hrefs]))
        page.keyboard.press("Escape")
    page.close()
    return out


def score(rankings: list[list[str]], items: list[dict]) -> dict:
    def hit(k):
        return sum(any(p in item["relevant_pages"] for p in ranked[:k]) for ranked, item in zip(rankings, items))
    n = len(items)
    return {"hit@1": round(hit(1) / n, 3), "hit@5": round(hit(5) / n, 3), "answered": sum(bool(r) for r in rankings),
            "hits@1": hit(1), "hits@5": hit(5), "n": n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/kb-bench-docs"))
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "knowledge-build")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("--reuse", action="store_true", help="measure the two builds already in --work again")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    items = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [item["query"] for item in items]
    args.work.mkdir(parents=True, exist_ok=True)
    ours, theirs = args.work / "box", args.work / "material"
    if not (args.reuse and (ours / "knowledge" / "v2" / "manifest.json").is_file() and theirs.is_dir()):
        ours, theirs = build(args.work, args.cache_dir)
    box_server, box_origin = serve(ours)
    material_server, material_origin = serve(theirs)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            box = box_pages(browser, box_origin, queries)
            material = material_pages(browser, material_origin, queries)
            browser.close()
    finally:
        box_server.shutdown()
        material_server.shutdown()
    result = {"box": score(box, items), "material": score(material, items),
              "per_query": [{"query": q["query"], "relevant": q["relevant_pages"], "box": b[:5], "material": m[:5]}
                            for q, b, m in zip(items, box, material)]}
    if args.format == "json":
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return
    print(f"{len(items)} English questions over the manual, by page")
    print(f"{'search':<28}{'answered':>10}{'hit@1':>8}{'hit@5':>8}")
    for name, key in (("the project's box", "box"), ("Material's built-in search", "material")):
        s = result[key]
        print(f"{name:<28}{s['answered']:>10}{s['hit@1']:>8.3f}{s['hit@5']:>8.3f}")
    for row in result["per_query"]:
        mark = lambda ranked: "1" if ranked[:1] and ranked[0] in row["relevant"] else (  # noqa: E731
            "5" if any(p in row["relevant"] for p in ranked) else "-")
        print(f"  [{mark(row['box'])}|{mark(row['material'])}] {row['query']}")


if __name__ == "__main__":
    main()
