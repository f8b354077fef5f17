"""The text of a knowledge box's HTML (an lxml element): its title, its visible text with blocks set
apart, its list items and bold terms, never entering a nested knowledge element or what is not
rendered. Iterative throughout: huge_tree pages may nest deeper than Python's recursion limit."""

from __future__ import annotations

import re

from ..kinds import KNOWLEDGE_ID
from ..text.ja import split_label
from ..text.tex import readable

_SKIPPED_TAGS = {"script", "style", "svg", "template", "noscript", "math"}
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
    "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
    "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "ul",
}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_WS = re.compile(r"\s+")
# Emoji and pictographs that decorate titles ("📌 解の公式"); "°" and "△" are kept.
_EMOJI = re.compile(
    "[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0E\uFE0F\u200D\u20E3"
    "\U000E0020-\U000E007F]"
)


def display_title(heading: str) -> tuple[str, str]:
    """(label, title) of a box heading: the number label taken off (「ルール3：」 names no concept)
    and inline TeX rendered readably (\\(b\\) -> b). A heading that is only a label keeps it as
    its title."""
    label, rest = split_label(heading)
    return label, readable(rest or heading)


def descendants(node):
    """Descendants in document order, not entering nested knowledge elements or skipped tags.

    Iterative: huge_tree pages may nest deeper than Python's recursion limit."""
    stack = list(reversed(node))
    while stack:
        child = stack.pop()
        if not isinstance(child.tag, str) or child.tag in _SKIPPED_TAGS:
            continue
        if KNOWLEDGE_ID.match(child.get("id") or ""):
            continue
        yield child
        stack.extend(reversed(child))


def box_title(node) -> str:
    for child in descendants(node):
        classes = child.get("class") or ""
        if child.tag in _HEADINGS or child.tag in ("strong", "b") or "title" in classes:
            title = strip_emoji(node_text(child, skip_class="badge"))
            title = title.strip(" ：:")
            if title:
                return title
    return ""


def node_text(node, skip_class: str = "") -> str:
    parts: list[str] = []
    _collect(node, parts, skip_class)
    return clean("".join(parts))


def _collect(node, parts: list[str], skip_class: str) -> None:
    """Append the text of `node` (not its tail); block elements are set apart by spaces."""
    todo: list = [node]  # elements to open and strings to emit, last first
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        if item.text:
            parts.append(item.text)
        for child in reversed(item):
            if child.tail:
                todo.append(child.tail)
            if isinstance(child.tag, str) and not _skip(child, skip_class):
                gap = [" "] if child.tag in _BLOCK_TAGS else []
                todo += gap + [child] + gap


def _skip(node, skip_class: str) -> bool:
    if node.tag in _SKIPPED_TAGS or KNOWLEDGE_ID.match(node.get("id") or ""):
        return True
    return bool(skip_class) and skip_class in (node.get("class") or "")


def clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def strip_emoji(text: str) -> str:
    return clean(_EMOJI.sub("", text))
