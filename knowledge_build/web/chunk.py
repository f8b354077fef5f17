"""A fetched web page (what the crawler hands the extractor) and a chunk of it (what the extractor
makes and the source store keeps)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebChunk:
    source_url: str  # the page, without fragment
    url: str  # source_url + "#" + the section's fragment (an id or :~:text=…), or source_url for the top
    title: str  # the page's title without the site's name (extract.page_chunks)
    heading: str  # the section's heading ("" for text before the first heading)
    parents: tuple[str, ...]  # enclosing headings, outermost first
    kind: str  # "section" or "table"
    text: str
    chunk_index: int  # 0..n-1 in page order
    crawled_at: str  # ISO 8601, UTC, seconds
    language: str = ""  # the page's <html lang>, primary subtag ("ja", "en"), "" when it says none


@dataclass(frozen=True)
class FetchedPage:
    url: str  # normalised (no fragment); after redirects, the final URL
    title: str  # the page's <title> as it is (the site name still in it)
    html: str
    crawled_at: str  # ISO 8601, UTC, seconds
    language: str = ""  # <html lang>, primary subtag, or "ja" for a page written in Japanese (main_content.text_language)
