"""page_chunks: a fetched page's main text as section and table chunks linked to their place."""

from __future__ import annotations

import asyncio

import pytest

from knowledge_build.web.chunk import FetchedPage
from knowledge_build.web.crawler import Crawler, CrawlSettings
from knowledge_build.web.extract import (
    crawl_site_names,
    page_chunks,
    page_title,
    parse_html,
)
from tests.test_web_crawler import Route, serving

URL = "https://game.example/characters"
WHEN = "2026-03-01T09:30:00Z"
HEADER = "名前 | 職業 | 出身地"
CHARACTERS = [(f"キャラ{n:02d}", "剣士" if n % 2 else "魔法使い", "北の村" if n % 3 else "港町") for n in range(1, 24)]


@pytest.fixture
def serve():
    yield from serving()


def _table_page() -> str:
    rows = "".join(f"<tr><td>{name}</td><td>{job}</td><td>{home}</td></tr>" for name, job, home in CHARACTERS)
    return f"""<!DOCTYPE html><html><head><title>ゲームの登場人物</title><script>var tracking = "追跡";</script></head>
<body><header>サイトの見出し</header><nav><a href="/">ホーム</a><a href="/about">このサイトについて</a></nav>
<aside>広告: いま話題のゲーム</aside>
<article><h1>登場人物</h1><p>このゲームに登場する主なキャラクターを職業と出身地とともに紹介します。</p>
<h2 id="list">キャラクター一覧</h2>
<table><thead><tr><th>名前</th><th>職業</th><th>出身地</th></tr></thead><tbody>{rows}</tbody></table>
<h2>物語のあらすじ</h2><p>北の村に住む剣士が、港町の魔法使いと旅に出る物語です。</p></article>
<footer>著作権表示</footer></body></html>"""


def _chunks(html: str, url: str = URL):
    return page_chunks(FetchedPage(url=url, title="ignored", html=html, crawled_at=WHEN))


def test_a_table_of_characters_gives_one_chunk_per_row_each_with_the_header():
    chunks = _chunks(_table_page())
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) == len(CHARACTERS)
    assert all(c.text.splitlines()[0] == HEADER for c in tables)
    assert all(c.url == URL + "#list" and c.heading == "キャラクター一覧" and c.parents == ("登場人物",) for c in tables)
    # Every row is in a chunk as it reads in the table, so a name in one cell finds its row.
    for name, job, home in CHARACTERS:
        assert any(f"{name} | {job} | {home}" in c.text.splitlines() for c in tables)
    # A chunk is about its row (plus a row of context either side), not the whole table.
    assert all(len(c.text.splitlines()) <= 4 for c in tables)


def test_chunks_record_source_title_order_and_crawl_time():
    chunks = _chunks(_table_page())
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.source_url for c in chunks} == {URL}
    assert {c.title for c in chunks} == {"ゲームの登場人物"}
    assert {c.crawled_at for c in chunks} == {WHEN}
    assert chunks[0].kind == "section" and chunks[-1].heading == "物語のあらすじ"
    assert chunks[-1].url.startswith(URL + "#:~:text=")


def test_only_the_article_is_text_not_nav_header_footer_aside_or_scripts():
    text = "\n".join(c.text for c in _chunks(_table_page()))
    assert "主なキャラクター" in text and "旅に出る物語" in text
    for outside in ("サイトの見出し", "このサイトについて", "広告", "著作権表示", "追跡"):
        assert outside not in text


def test_main_is_used_when_there_is_no_article_and_body_when_neither():
    with_main = "<html><body><div>外側の文章です。</div><main><h2>中身</h2><p>主要な本文です。</p></main></body></html>"
    assert [c.text for c in _chunks(with_main)] == ["主要な本文です。"]
    plain = "<html><body><h2>見出し</h2><p>ただの本文です。</p><footer>フッター</footer></body></html>"
    assert [c.text for c in _chunks(plain)] == ["ただの本文です。"]


def test_a_page_without_text_gives_no_chunks():
    assert _chunks("") == []
    assert _chunks("<html><body><nav><a href='/'>ホーム</a></nav></body></html>") == []


def test_the_title_falls_back_to_the_first_h1_and_an_xml_declaration_is_accepted():
    xhtml = '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><body><h1>  題名  です </h1><p>本文。</p></body></html>'
    assert page_title(parse_html(xhtml)) == "題名 です"
    assert {c.title for c in _chunks(xhtml)} == {"題名 です"}


def test_a_page_fetched_from_a_real_server_becomes_chunks(serve):
    site = serve({"/characters": Route(_table_page())})
    crawler = Crawler(CrawlSettings(delay=0, allow_hosts=(site.host,)))
    page = asyncio.run(crawler.fetch(site.url("/characters#list")))
    chunks = page_chunks(page)
    assert page.title == "ゲームの登場人物"
    assert {c.source_url for c in chunks} == {site.url("/characters")}
    assert sum(c.kind == "table" for c in chunks) == len(CHARACTERS)


# -- crawled pages get the site's treatment: chrome left out, the site name off the title, the language

def _docs_page(title: str, heading: str, lang: str = "ja", extra_head: str = "") -> str:
    return f"""<!DOCTYPE html><html lang="{lang}"><head><title>{title}</title>{extra_head}</head><body>
<a class="skip-link" href="#main">本文へスキップ</a><div class="sidebar"><ul><li><a href="/a">ページA</a></li></ul></div>
<main id="main"><nav aria-label="breadcrumb"><ol><li><a href="/">ホーム</a></li></ol></nav>
<h1>{heading}</h1><h2 id="step">手順</h2><p>{heading}の手順を順に説明します。必要なものを先にそろえます。</p>
<div class="pager"><a href="/prev">← 前へ</a><a href="/next">次へ →</a></div>
<p><a href="https://github.com/example/docs/edit/main/{heading}.md">このページを編集</a></p></main>
<footer>© ツール名</footer></body></html>"""


def test_a_crawled_page_leaves_out_sidebars_pagers_edit_and_skip_links():
    chunks = _chunks(_docs_page("インストール | ツール名ドキュメント", "インストール"))
    assert [(c.heading, c.parents) for c in chunks] == [("手順", ("インストール",))]
    text = "\n".join(c.text for c in chunks)
    assert "必要なものを先にそろえます" in text
    for chrome in ("本文へスキップ", "ページA", "ホーム", "前へ", "次へ", "このページを編集", "ツール名"):
        assert chrome not in text


def test_the_site_name_most_titles_of_a_host_share_is_taken_off_the_chunk_title():
    pages = [FetchedPage(url=f"https://docs.example/{slug}", title=title, html=_docs_page(title, title.split(" | ")[0]),
                         crawled_at=WHEN)
             for slug, title in (("install", "インストール | ツール名ドキュメント"), ("usage", "使い方 | ツール名ドキュメント"),
                                 ("faq", "よくある質問 | ツール名ドキュメント"))]
    pages.append(FetchedPage(url="https://other.example/x", title="別のサイト | 別の名前", html="", crawled_at=WHEN))
    names = crawl_site_names(pages)
    assert names == {"docs.example": "ツール名ドキュメント"}
    assert {c.title for c in page_chunks(pages[0], site_name=names["docs.example"])} == {"インストール"}


def test_og_site_name_takes_the_site_name_off_a_single_page_and_a_home_page_keeps_its_title():
    og = '<meta property="og:site_name" content="ツール名">'
    assert {c.title for c in _chunks(_docs_page("インストール - ツール名", "インストール", extra_head=og))} == {"インストール"}
    assert {c.title for c in _chunks(_docs_page("ツール名", "ツール名", extra_head=og))} == {"ツール名"}
    assert {c.title for c in _chunks(_docs_page("インストール - ツール名", "インストール"))} == {"インストール - ツール名"}


def test_chunks_carry_the_page_language():
    english = _docs_page("Install | Tool", "Install", lang="en-US").replace(
        "の手順を順に説明します。必要なものを先にそろえます。", " takes three steps: download, unpack and run the installer.")
    assert {c.language for c in _chunks(english)} == {"en"}
    assert {c.language for c in _chunks(_table_page())} == {""}
    # A theme's lang="en-US" on a page written in Japanese (main_content.text_language): Japanese.
    assert {c.language for c in _chunks(_docs_page("Install | Tool", "Install", lang="en-US"))} == {"ja"}


def test_a_crawl_stores_titles_without_the_site_name_and_the_language(serve, tmp_path):
    from knowledge_build.store.sources import SourceStore
    from knowledge_build.web.ingest import crawl_into
    from tests.conftest import FakeEmbedder

    routes = {"/": Route('<a href="/install">i</a><a href="/usage">u</a>'),
              "/install": Route(_docs_page("インストール | ツール名ドキュメント", "インストール")),
              "/usage": Route(_docs_page("使い方 | ツール名ドキュメント", "使い方"))}
    site = serve(routes)
    with SourceStore(FakeEmbedder(), tmp_path / "store.sqlite") as store:
        report = asyncio.run(crawl_into(store, CrawlSettings(delay=0, allow_hosts=(site.host,)), site.url("/")))
        assert [(s["title"], s["language"]) for s in report.stored] == [("インストール", "ja"), ("使い方", "ja")]
        assert [(s["title"], s["language"]) for s in store.sources()] == [("インストール", "ja"), ("使い方", "ja")]
        assert store.query("手順")[0]["title"] in ("インストール", "使い方")
