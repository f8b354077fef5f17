"""Issue 24, acceptance: the owner's path finds at least what the crawl path finds. On each generator's
output, served by a real HTTP server on 127.0.0.1, `knowledge-build sources crawl` (from the home page)
fills a source store; the same labelled questions are asked of it (`SourceStore.query`, what `sources
query` runs) and of the owner's index (`knowledge-build search --queries`): the owner, who has the whole
site, must hit in the top 5 at least as often as the crawl. Crawled pages get the owner's treatment too:
titles without the site name, no pager or sidebar text.
"""

import json

import pytest

from .generated_sites.chrome import chrome_in
from .generated_sites.fixtures import SITE_PARAMS, knowledge_build
from .generated_sites.hits import is_hit, load_queries
from .test_generated_sites import TOP_K, _answers
from .test_generated_sites_browser import serving

pytestmark = [pytest.mark.model, pytest.mark.generators]


@pytest.fixture(scope="module")
def local_embedder():
    import knowledge_build as kb

    return kb.get_embedder("local")


def _crawl(site, store, cache) -> dict:
    with serving(site.output, site.base_path) as origin:
        result = knowledge_build("sources", "crawl", origin + site.base_path, "--allow-host", origin.split("//")[1],
                                 "--delay", "0", "--no-robots", "--max-pages", "200", "--store", str(store),
                                 "--format", "json", cache=cache)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("generated_site", SITE_PARAMS, indirect=True)
def test_the_owner_finds_at_least_what_the_crawl_finds(generated_index, local_embedder, tmp_path):
    from knowledge_build.store.sources import SourceStore

    index, site = generated_index, generated_index.site
    report = _crawl(site, tmp_path / "store.sqlite", index.cache)
    assert report["pages"] >= 1, report
    store = SourceStore(local_embedder, str(tmp_path / "store.sqlite"))
    try:
        crawled = {label.qid: store.query(label.query, k=TOP_K) for label in load_queries()}
        rows = store.query("Tsumiki", k=50)
    finally:
        store.close()
    parents = {chunk["id"]: chunk.get("parents", []) for chunk in index.chunks}
    answers = _answers(index)
    owner = crawl = 0
    for label in load_queries():
        owner += any(is_hit(r["url"], r["title"], parents.get(r["id"], []), label, site) for r in answers[label.qid])
        crawl += any(is_hit(_path(r["url"]), r["heading"] or r["title"], r["parents"], label, site)
                     for r in crawled[label.qid])
    print(f"{site.generator}: owner hit@{TOP_K} {owner}, crawl hit@{TOP_K} {crawl} of {len(load_queries())}")
    assert owner >= crawl, f"{site.generator}: the owner's build hits {owner}, the crawl {crawl}"
    if report["pages"] * 2 >= len(site.page_files):  # Sphinx's home links 3 pages: a one-level crawl sees those
        assert crawl > 0, f"{site.generator}: the crawl found nothing ({report})"
    suffix = f" | {site.site_title}"
    assert not [r["title"] for r in rows if r["title"].endswith(suffix)], "crawled titles keep the site name"
    chrome = {r["url"]: chrome_in(r["text"], site.generator) for r in rows}
    assert not {url: found for url, found in chrome.items() if found}, "crawled chunks hold the theme's chrome"


def _path(url: str) -> str:
    """A crawled chunk's URL as the site's own path (`http://127.0.0.1:PORT/tsumiki/x/#a` -> `/tsumiki/x/#a`)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.path + (f"#{parts.fragment}" if parts.fragment else "")
