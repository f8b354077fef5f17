"""A fetched page's main text as chunks: sections and tables, each linked to its place on the page.

The main text is what the F9 design asks for and sections.page_parts already does for the site's own
pages: nav/header/footer/script/style dropped, the first `article`, else `main`, else `body`. The
page is then split at its headings, tables become table chunks with their header row on every chunk,
and each chunk links to its section by an id or a text fragment (`:~:text=`). Reusing page_parts
keeps one extraction for both kinds of source, so a fix to it helps both.
"""

from __future__ import annotations

import re

from .chunk import FetchedPage, WebChunk

__all__ = ["page_chunks", "page_title", "parse_html"]

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


def page_chunks(page: FetchedPage, *, max_chars: int = 800) -> list[WebChunk]:
    """The page's section and table chunks in page order (see the module docstring). A page without
    text gives no chunks. SectionsUnavailable when the Japanese tokenizer the chunkers need is missing."""
    root = parse_html(page.html)
    title = page_title(root)
    try:
        from ..html.sections import page_parts

        parts = page_parts(root, anchored=set(), max_chars=max_chars)
    except ImportError as exc:  # fugashi/unidic-lite/jaconv name the sections
        from ..errors import SectionsUnavailable

        raise SectionsUnavailable(str(exc)) from exc
    return [WebChunk(source_url=page.url, url=f"{page.url}#{part.fragment}" if part.fragment else page.url,
                     title=title, heading=part.heading, parents=part.parents, kind=part.kind, text=part.text,
                     chunk_index=index, crawled_at=page.crawled_at)
            for index, part in enumerate(parts)]
