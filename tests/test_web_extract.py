"""page_chunks: a fetched page's main text as section and table chunks linked to their place."""

from __future__ import annotations

import asyncio

import pytest

from knowledge_build.web.chunk import FetchedPage
from knowledge_build.web.crawler import Crawler, CrawlSettings
from knowledge_build.web.extract import page_chunks, page_title, parse_html
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
