"""Issue 24, acceptance: knowledge-build reads a site as its owner built it, whichever generator built
it. The same Japanese documentation site (tests/generated_sites/) is built by jekyll, hugo, mkdocs
(Material), sphinx (html and dirhtml) and written by hand, then indexed with the local model through
the CLI (`knowledge-build build --site <output> --format json`), and:

(a) at least 10 of the labelled questions find their answer in the top 5 (`is_hit`);
(b) every HTML page of the output is indexed (a chunk links it) or named in the build's
    `pages.skipped`, and every page of the site's content is indexed;
(c) no chunk holds the theme's chrome: header, sidebar page list, pager, footer, TOC, ¶ marks;
(d) no chunk title ends with the site's name as the `<title>` adds it (` | Tsumiki ドキュメント`).
"""

import json
from urllib.parse import unquote, urlsplit

import pytest

from .generated_sites.chrome import chrome_in
from .generated_sites.fixtures import SITE_PARAMS, knowledge_build
from .generated_sites.hits import QUERIES, is_hit, load_queries

pytestmark = [pytest.mark.model, pytest.mark.generators]
each_generator = pytest.mark.parametrize("generated_site", SITE_PARAMS, indirect=True)

TOP_K = 5
MIN_HITS = 10
TITLE_SEPARATORS = (" | ", " - ", " — ", " – ", " · ", " :: ")


def _answers(index) -> dict[str, list[dict]]:
    """Every question's top results: `knowledge-build search --queries … --format json`."""
    result = knowledge_build("search", "--queries", str(QUERIES), "--index", str(index.index), "-k", str(TOP_K),
                             "--format", "json", cache=index.cache)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return {line["qid"]: line["results"] for line in lines}


@each_generator
def test_most_questions_find_their_answer_in_the_top_five(generated_index):
    index, site = generated_index, generated_index.site
    parents = {chunk["id"]: chunk.get("parents", []) for chunk in index.chunks}
    answers = _answers(index)
    hits, misses = [], []
    for label in load_queries():
        results = answers[label.qid]
        if any(is_hit(r["url"], r["title"], parents.get(r["id"], []), label, site) for r in results):
            hits.append(label.qid)
        else:
            misses.append(f"{label.qid} {label.query!r} wants {label.page} › {label.heading}; got "
                          + "; ".join(f"{r['url']} {r['title']!r}" for r in results))
    assert len(hits) >= MIN_HITS, (f"{site.generator}: {len(hits)} of {len(hits) + len(misses)} questions hit "
                                   f"in the top {TOP_K} (want {MIN_HITS}); misses:\n" + "\n".join(misses))


@each_generator
def test_every_page_is_indexed_or_named_as_skipped(generated_index):
    index, site = generated_index, generated_index.site
    assert "pages" in index.summary, (f"{site.generator}: the build's JSON has no 'pages' summary "
                                      f"(found, indexed, skipped); it has {sorted(index.summary)}")
    pages = index.summary["pages"]
    files = site.html_files()
    indexed = {_file_of_url(chunk["url"], site) for chunk in index.chunks}
    skipped = {_relative(entry["path"], site): entry["reason"] for entry in pages["skipped"]}
    unaccounted = [f for f in files if f not in indexed and f not in skipped]
    assert not unaccounted, f"{site.generator}: neither indexed nor skipped: {unaccounted} (skipped: {skipped})"
    content_skipped = {f: skipped[f] for f in site.page_files.values() if f in skipped}
    assert not content_skipped, f"{site.generator}: pages of the site's content skipped: {content_skipped}"
    assert pages["found"] == len(files) and pages["indexed"] == len(indexed & set(files)), (pages, files)


@each_generator
def test_no_chunk_holds_the_theme_chrome(generated_index):
    site = generated_index.site
    found = {f"{c['url']} {c['title']!r}": chrome_in(f"{c['title']}\n{c['content']}", site.generator)
             for c in generated_index.chunks}
    found = {chunk: pieces for chunk, pieces in found.items() if pieces}
    assert not found, f"{site.generator}: {len(found)} of {len(generated_index.chunks)} chunks hold the theme's " \
                        "chrome:\n" + "\n".join(f"{chunk}: {pieces}" for chunk, pieces in found.items())


@each_generator
def test_no_chunk_title_ends_with_the_site_name(generated_index):
    site = generated_index.site
    suffixes = tuple(sep + site.site_title for sep in TITLE_SEPARATORS)
    titled = sorted({c["title"] for c in generated_index.chunks if c["title"].strip().endswith(suffixes)})
    assert not titled, f"{site.generator}: chunk titles carry the site's name: {titled}"


def _file_of_url(url: str, site) -> str:
    """The output file a chunk's URL names (its base path taken off), as html_files() spells it."""
    path = unquote(urlsplit(url).path)
    base = site.base_path.rstrip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):]
    path = path.lstrip("/")
    if path == "" or path.endswith("/"):
        return path + "index.html"
    if path.endswith(".html") or (site.output / path).is_file():
        return path
    return path + ".html" if (site.output / (path + ".html")).is_file() else path + "/index.html"


def _relative(path: str, site) -> str:
    from pathlib import Path

    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(site.output.resolve()).as_posix()
        except ValueError:
            return p.as_posix()
    return p.as_posix().removeprefix("./")
