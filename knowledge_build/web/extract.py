"""A fetched page's main text as chunks: sections and tables, each linked to its place on the page.

The main text is what sections.page_parts reads on the site's own pages: the main content and the
chrome left out of it are html/main_content.py's (the main landmark or article; no navigation,
sidebars, pagers, edit links, headerlinks). The page is then split at its headings, tables become
table chunks with their header row on every chunk, and each chunk links to its section by an id or a
text fragment (`:~:text=`). Reusing page_parts keeps one extraction for both kinds of source, so a
fix to it helps both. A chunk's title is the page's title without the site's name (`site_name`: what
most titles of the crawl's pages of that host end with, `crawl_site_names`; else the page's
`og:site_name`), and it carries the page's language (`<html lang>`).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .chunk import FetchedPage, WebChunk

__all__ = ["chunk_title", "crawl_site_names", "page_chunks", "page_title", "parse_html"]

# lxml refuses a str that declares its own encoding; the page is already decoded.
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)


def parse_html(html: str):
    """The page's root element, parsed as scan.py parses the site's pages (recovering from bad markup;
    an empty page is an empty document, not an error)."""
    import lxml.etree

    parser = lxml.etree.HTMLParser(recover=True, remove_comments=True, huge_tree=True)
    text = _XML_DECLARATION.sub("", html, count=1)
    try:
        root = lxml.etree.fromstring(text, parser=parser) if text.strip() else None
    except (lxml.etree.ParserError, ValueError):
        root = None
    return root if root is not None else lxml.etree.fromstring("<html><body></body></html>", parser=parser)


def page_title(root) -> str:
    """The page's <title>, else its first <h1>, else ""; whitespace collapsed."""
    for tag in ("title", "h1"):
        for element in root.iter(tag):
            text = " ".join("".join(element.itertext()).split())
            if text:
                return text
    return ""


def crawl_site_names(pages: list[FetchedPage]) -> dict[str, str]:
    """Host name -> the site name its pages' titles share (main_content.site_name_suffix); hosts whose
    titles share none are left out."""
    from ..html.main_content import site_name_suffix

    titles: dict[str, list[str]] = {}
    for page in pages:
        titles.setdefault(urlsplit(page.url).hostname or "", []).append(page.title)
    names = {host: site_name_suffix(host_titles) for host, host_titles in titles.items()}
    return {host: name for host, name in names.items() if name}


def chunk_title(root, site_name: str = "") -> str:
    """The page's title without the site's name: `site_name` (the crawl's) when the title ends with
    it, else the page's own og:site_name."""
    from ..html.main_content import meta_site_name, strip_site_name

    title = page_title(root)
    for name in (site_name, meta_site_name(root)):
        stripped = strip_site_name(title, name) if name else title
        if stripped != title:
            return stripped
    return title


def page_chunks(page: FetchedPage, *, max_chars: int = 800, site_name: str = "") -> list[WebChunk]:
    """The page's section and table chunks in page order (see the module docstring); `site_name` is
    the name its site's titles end with (crawl_site_names), "" when not known. A page without text
    gives no chunks. SectionsUnavailable when the Japanese tokenizer the chunkers need is missing."""
    from ..html.main_content import text_language

    root = parse_html(page.html)
    title = chunk_title(root, site_name)
    language = page.language or text_language(root)
    try:
        from ..html.sections import page_parts

        parts = page_parts(root, anchored=set(), max_chars=max_chars)
    except ImportError as exc:  # fugashi/unidic-lite/jaconv name the sections
        from ..errors import SectionsUnavailable

        raise SectionsUnavailable(str(exc)) from exc
    return [WebChunk(source_url=page.url, url=f"{page.url}#{part.fragment}" if part.fragment else page.url,
                     title=title, heading=part.heading, parents=part.parents, kind=part.kind, text=part.text,
                     chunk_index=index, crawled_at=page.crawled_at, language=language)
            for index, part in enumerate(parts)]
