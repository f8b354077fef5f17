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


# What marks an exercise's answer in a box (issue 42): an element whose class names it (answer, solution: the words
# exercise markup uses, e.g. sphinx-exercise's `solution`), a <details> element whose <summary> (the button's label,
# in neither part) begins with a word for the answer (答えを見る; a <details> of ヒント or 考え方 is a hint, part of
# the problem), or an element that reads as a heading and begins with one (解答, 解説, 答え, 正解): from there the
# rest of the box is answer, in document order.
_ANSWER_WORD = re.compile(r"^[\s→⇒▶▼・■●]*(?:解答|解説|答え|こたえ|正解)")
_ANSWER_CLASS = re.compile(r"(?:^|[\s_-])(?:answers?|solutions?)(?:$|[\s_-])", re.I)
_MARKER_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "dt", "summary", "th"}


def answer_block(node, configured=frozenset()) -> bool:
    """Whether `node` holds an answer whole: the site's answer_selector picks it, a class says so, or it is a
    <details> whose summary says so."""
    if node in configured or _ANSWER_CLASS.search(node.get("class") or ""):
        return True
    if node.tag != "details":
        return False
    summary = next((c for c in node if c.tag == "summary"), None)
    return summary is not None and bool(_ANSWER_WORD.match(node_text(summary)))


def answer_parts(node, configured=frozenset()) -> tuple[str, str] | None:
    """(problem, solution) texts of a box whose answer is marked (see _ANSWER_WORD), or None: the problem is every
    text of the box outside the answer, the solution every text inside it (the <summary> of an answer's <details> in
    neither). `configured`: the elements the site's answer_selector picks (config.py). Nested knowledge elements and
    what is not rendered are left out, as node_text leaves them."""
    problem: list[str] = []
    solution: list[str] = []
    after = False  # past a marker: the rest of the box is answer
    marked = False
    todo: list = [(node, False)]  # (element or string, inside a <details>), last first
    while todo:
        item, inside = todo.pop()
        if isinstance(item, str):
            (solution if inside or after else problem).append(item)
            continue
        block = item is not node and not inside and item.tag != "summary" and answer_block(item, configured)
        if block:
            inside = marked = True
        elif item is not node and item.tag in _MARKER_TAGS and not inside and _ANSWER_WORD.match(node_text(item)):
            after = marked = True
        if item.text:
            (solution if inside or after else problem).append(item.text)
        for child in reversed(item):
            if child.tail:
                todo.append((child.tail, inside))
            if isinstance(child.tag, str) and not _skip(child, "") and not (block and child.tag == "summary"):
                gap = [(" ", inside)] if child.tag in _BLOCK_TAGS else []
                todo += gap + [(child, inside)] + gap
    if not marked:
        return None
    return clean("".join(problem)), clean("".join(solution))


def _skip(node, skip_class: str) -> bool:
    if node.tag in _SKIPPED_TAGS or KNOWLEDGE_ID.match(node.get("id") or ""):
        return True
    return bool(skip_class) and skip_class in (node.get("class") or "")


def clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def strip_emoji(text: str) -> str:
    return clean(_EMOJI.sub("", text))
