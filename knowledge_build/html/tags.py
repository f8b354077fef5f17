"""Every start tag of an HTML text with its exact line, column and offset, as the standard
library's HTMLParser reports them: what `id="…"` write-back and the anchor lint need, where lxml's
tree gives no byte positions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser


@dataclass(frozen=True)
class Tag:
    name: str
    line: int
    col: int  # 1-based
    offset: int  # character offset of '<' in the text
    attrs: dict  # the first value of each attribute, as browsers and lxml take it
    end_line: int = 0  # line of the tag's closing '>' (where lxml says the element is)
    repeated: tuple[str, ...] = ()  # attributes written more than once

    @property
    def id(self) -> str:
        return self.attrs.get("id") or ""

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()


class _TagLocator(HTMLParser):
    # Like libxml2 and browsers, no tags are seen inside these (their content is text).
    CDATA_CONTENT_ELEMENTS = ("script", "style", "textarea", "title", "xmp", "iframe")

    def __init__(self, line_starts: list[int]):
        super().__init__(convert_charrefs=True)
        self.tags: list[Tag] = []
        self._line_starts = line_starts

    def handle_starttag(self, tag, attrs):
        line, col = self.getpos()
        offset = self._line_starts[line - 1] + col
        first: dict = {}
        repeated = []
        for key, value in attrs:
            if key in first:
                repeated.append(key)
            first.setdefault(key, value or "")
        end_line = line + (self.get_starttag_text() or "").count("\n")
        self.tags.append(Tag(tag, line, col + 1, offset, first, end_line, tuple(dict.fromkeys(repeated))))

    handle_startendtag = handle_starttag


def locate_tags(text: str) -> list[Tag]:
    """Every start tag of `text` with its exact position."""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    locator = _TagLocator(line_starts)
    locator.feed(text)
    locator.close()
    return locator.tags


def box_class(tag: Tag, box_classes) -> str:
    return next((c for c in tag.classes if c in box_classes), "")
