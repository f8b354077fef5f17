"""Which links a crawl follows: breadth-first from the index page, within the site and the pattern, to a
depth and a page limit.

The index page is depth 0; the pages it links to are depth 1, theirs depth 2, up to `depth`. A link
is taken once (fragments removed), in the order pages were fetched and links appear in them, when it
is http(s), on the index page's host, matches the pattern and is not named as a file of another kind
(NOT_PAGES: an image, a PDF, a Sphinx page's `_sources/*.rst.txt`, which a crawl would only fetch to
refuse); then while fewer than `max_pages` pages are taken. Every link left out is recorded once with its reason, and a limit that left links out is
said in `stopped`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from .urls import normalise_url

# The file name endings of links that are never HTML pages: not fetched, reported as skipped. A name with
# another ending, or none, is fetched and judged by its Content-Type (a .php or an extensionless page is HTML).
NOT_PAGES = frozenset(
    "png jpg jpeg gif svg webp ico bmp avif tif tiff "  # images
    "pdf txt csv tsv json xml rss atom md rst tex doc docx xls xlsx ppt pptx odt ods odp epub "  # documents
    "zip gz tgz bz2 xz 7z tar rar whl "  # archives
    "mp3 mp4 m4a wav ogg oga webm mov avi "  # media
    "css js mjs map woff woff2 ttf otf eot wasm inv".split())  # a site's assets, Sphinx's objects.inv


@dataclass
class Frontier:
    host: str | None  # the index page's host: the crawl stays on it
    max_pages: int
    depth: int
    regex: object = None  # re.Pattern | None
    pattern: str | None = None
    seen: set[str] = field(default_factory=set)  # every link met (taken or not)
    taken: list[str] = field(default_factory=list)  # the pages to fetch, in order
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (link, why it was left out)
    followed: dict[str, int] = field(default_factory=dict)  # page URL -> links taken from it
    over_pages: int = 0  # links left out by max_pages
    too_deep: int = 0  # links left out by depth

    def take(self, page_url: str, html_root, depth: int) -> list[str]:
        """The new links of the page at `page_url` (its parsed HTML `html_root`), whose pages are at
        `depth`; the others are recorded as skipped."""
        new: list[str] = []
        for link in page_links(html_root, page_url):
            if link in self.seen:
                continue
            self.seen.add(link)
            reason = self._refusal(link)
            if reason is None and depth > self.depth:
                self.too_deep += 1
                reason = f"deeper than crawl_depth ({self.depth})"
            if reason is None and len(self.taken) >= self.max_pages:
                self.over_pages += 1
                reason = f"over max_pages ({self.max_pages})"
            if reason is None:
                self.taken.append(link)
                new.append(link)
            else:
                self.skipped.append((link, reason))
        if new:
            self.followed[page_url] = len(new)
        return new

    def _refusal(self, link: str) -> str | None:
        parts = urlsplit(link)
        if parts.scheme not in ("http", "https"):
            return f"not http or https ({parts.scheme}:)"
        if parts.hostname != self.host:
            return f"other domain ({parts.hostname})"
        if self.regex is not None and not self.regex.search(link):
            return f"does not match the pattern {self.pattern!r}"
        ending = parts.path.rsplit("/", 1)[-1].rpartition(".")[2].lower() if "." in parts.path.rsplit("/", 1)[-1] else ""
        if ending in NOT_PAGES:
            return f"not a page (a .{ending} file, not fetched)"
        return None

    def stopped(self) -> list[str]:
        """The limits that left links out, as the crawl's summary says them."""
        said = []
        if self.too_deep:
            said.append(f"crawl_depth ({self.depth}) reached: {self.too_deep} link(s) deeper not followed")
        if self.over_pages:
            said.append(f"max_pages ({self.max_pages}) reached: {self.over_pages} link(s) not followed")
        return said


def page_links(root, page_url: str) -> list[str]:
    """Every <a href> of the page, absolute (the page's <base href> honoured) and without fragment."""
    base = page_url
    for element in root.iter("base"):
        if element.get("href"):
            base = urljoin(page_url, element.get("href").strip())
            break
    links = []
    for element in root.iter("a"):
        href = (element.get("href") or "").strip()
        if href and not href.startswith("#"):
            try:
                links.append(normalise_url(urljoin(base, href)))
            except ValueError:  # an unparsable href (a bad IPv6 literal, a bad port) is not a page
                continue
    return links
