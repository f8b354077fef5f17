"""A parsed page as a flat list of text blocks in document order: what sections.py splits.

Each block is one block-level element's own text (a paragraph, a list item, a table cell …) with
two readings: `visible`, the text a browser shows and matches text fragments against (math spans
left out, since the browser shows them typeset), and `content`, the part of it that belongs to a
section (inside the main content, main_content.main_content; not in the site's chrome,
main_content.is_chrome: nav/header/footer, sidebars, pagers …; not a button, a `<summary>` label, svg,
a table or an anchored box). Headings of the main content, tables and anchored boxes are marker blocks;
a heading's text leaves out its chrome (Sphinx's `¶` link). A block inside an element that holds an exercise's answer
(box_text.answer_block: a class, a `<details>` whose summary says so, the site's answer_selector) is marked `answer`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text.tex import MATH_SPAN
from .box_text import answer_block
from .main_content import CHROME_TAGS, is_chrome, main_content

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_INVISIBLE = {"script", "style", "template", "noscript", "head", "title", "meta", "link", "math"}
_NOT_CONTENT = {"button", "summary", "svg"}  # not chrome, not section text either
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div", "dl", "dt",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
    "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "text", "tfoot", "th",
    "thead", "tr", "ul", "body", "html", "svg",
}


@dataclass(slots=True)
class Block:
    visible: str  # visible text, lines folded, math left out
    content: str = ""  # section text ("" when not content); `<pre>` keeps its lines and tabs
    line: int = 0
    link_chars: int = 0  # characters of content that are link text
    level: int = 0  # a section heading: 1..6
    anchor: str | None = None  # a section heading's id, or its wrapper's
    anchored: bool = False  # an anchored box starts here
    table: object = None  # a content <table> starts here (lxml element)
    answer: bool = False  # all of its content is inside an exercise's answer (box_text.answer_block)


# The walk's state bits: inside the main content; not section content (noise, summary, table,
# anchored box); inside a link; inside <pre>. Plain ints, since every element and text pushes one.
_MAIN, _EXCLUDED, _LINK, _PRE, _ANSWER = 1, 2, 4, 8, 16
_CONTENT_BITS = _MAIN | _EXCLUDED


_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # where str.splitlines splits
_SKIPPED = -1  # an element whose subtree the walk does not enter


def page_blocks(root, *, anchored: set, answers=frozenset()) -> list[Block]:
    """The blocks of the page under `root` (see the module docstring). lxml's iterwalk enumerates
    the elements; the states stack holds, per open element, the state its content is read in. `answers`: the
    elements the site's answer_selector picks."""
    from lxml.etree import iterwalk

    main = main_content(root)
    builder = _Builder()
    states = [0]
    walker = iterwalk(root, events=("start", "end"))
    for event, el in walker:
        if event == "start":
            state = _start(el, states[-1], main, anchored, builder, answers)
            states.append(state)
            if state == _SKIPPED:
                walker.skip_subtree()
            elif el.text:
                builder.add(el.text, state)
            continue
        if states.pop() != _SKIPPED and el.tag in _BLOCK_TAGS:
            builder.flush()  # the end of a block-level element
        if el.tail:
            builder.add(el.tail, states[-1])
    builder.flush()
    return builder.blocks


def visible_text(blocks: list[Block]) -> str:
    return "\n".join(b.visible for b in blocks if b.visible)


def _start(el, state: int, main, anchored: set, builder: _Builder, answers=frozenset()) -> int:
    """Enter an element: the state its content is read in, or _SKIPPED (invisible, or read whole
    here: a heading, an svg)."""
    tag = el.tag
    if tag.__class__ is not str or tag in _INVISIBLE or el.get("hidden") is not None:
        return _SKIPPED
    if el is main:
        state |= _MAIN
    content = state & _CONTENT_BITS == _MAIN
    line = el.sourceline or 0
    if content and tag in HEADINGS:
        text = _fold(_plain(el))
        if text:
            builder.flush()
            builder.blocks.append(Block(text, line=line, level=HEADINGS[tag], anchor=_anchor(el)))
            return _SKIPPED
    if tag == "svg":  # thousands of shapes; only its text labels are seen, each a block
        builder.flush()
        builder.blocks.extend(Block(t, line=line) for t in _svg_labels(el))
        return _SKIPPED
    if tag in _BLOCK_TAGS:
        builder.flush()
    if content and el in anchored:  # a mapping's value: whether the box makes its section an anchored one
        builder.blocks.append(Block("", line=line, anchored=anchored[el] if isinstance(anchored, dict) else True))
        state |= _EXCLUDED
    elif content and (tag in CHROME_TAGS or ((keys := el.keys()) and is_chrome(el, keys))):
        state |= _EXCLUDED  # the site's chrome (an element without attributes is chrome by its tag alone)
    elif content and tag == "table":
        builder.blocks.append(Block("", line=line, table=el))
        state |= _EXCLUDED
    elif tag in _NOT_CONTENT:
        state |= _EXCLUDED
    elif tag == "a":
        state |= _LINK
    elif tag == "pre":
        state |= _PRE
    if content and not state & _ANSWER and answer_block(el, answers):
        state |= _ANSWER
    if line:
        builder.next_line = line
    return state


class _Builder:
    def __init__(self):
        self.blocks: list[Block] = []
        self.visible: list[str] = []
        self.content: list[str] = []
        self.links: list[str] = []
        self.answer = 0  # content texts added inside an answer
        self.pre = False
        self.line = 0
        self.next_line = 0

    def add(self, text: str, state: int) -> None:
        if not self.visible:
            self.line = self.next_line
        self.visible.append(text)
        if state & _CONTENT_BITS == _MAIN:
            self.content.append(text)
            if state & _ANSWER:
                self.answer += 1
            if state & _PRE:
                self.pre = True
            if state & _LINK:
                self.links.append(text)

    def flush(self) -> None:
        if not self.visible:
            return
        raw = "".join(self.visible)
        if raw.isspace():  # the indentation between tags: most flushes
            self.visible, self.content, self.links, self.pre, self.answer = [], [], [], False, 0
            return
        visible = _visible(raw)
        if self.pre:
            content = _pre_lines("".join(self.content))
        elif len(self.content) == len(self.visible):  # all of it is content: the usual block
            content = _fold(raw)
        else:
            content = _fold("".join(self.content))
        if visible or content:
            links = len(_fold("".join(self.links))) if self.links else 0
            answer = bool(content) and self.answer == len(self.content)
            self.blocks.append(Block(visible, content, self.line, links, answer=answer))
        self.visible, self.content, self.links, self.pre, self.answer = [], [], [], False, 0


def _visible(raw: str) -> str:
    """A block's visible text: lines folded, math spans left out (each ends a line)."""
    if "\\(" in raw or "\\[" in raw:  # what every MATH_SPAN match starts with
        raw = MATH_SPAN.sub("\n", raw)
    if not _LINE_BREAK.search(raw):
        return _fold(raw)
    return "\n".join(filter(None, (_fold(line) for line in raw.splitlines())))


def _svg_labels(svg) -> list[str]:
    labels = (_fold(MATH_SPAN.sub(" ", "".join(t.itertext()))) for t in svg.iter("text"))
    return [label for label in labels if label]


def _anchor(heading) -> str | None:
    """The heading's id, else the id of the closest element that the heading opens (nothing of it
    comes before the heading: `<section id="s1"><h2>`), so `page#id` lands on the heading."""
    node = heading
    while node is not None:
        if node.get("id"):
            return node.get("id")
        parent = node.getparent()
        if parent is None or (parent.text or "").strip():
            return None
        first = next((c for c in parent if isinstance(c.tag, str)), None)
        if first is not node or any((c.tail or "").strip() for c in parent if c is not node and _before(c, node)):
            return None
        node = parent
    return None


def _before(child, node) -> bool:
    for c in child.itersiblings():
        if c is node:
            return True
    return False


def _plain(el) -> str:
    """The visible text of an element (a heading), math left out."""
    parts: list[str] = []
    todo: list = [el.text or ""] + [child for child in el]
    todo.reverse()
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        if item.tail:
            todo.append(item.tail)
        if isinstance(item.tag, str) and item.tag not in _INVISIBLE and item.get("hidden") is None and not (
                item is not el and is_chrome(item)):
            todo.extend(reversed(item))
            if item.text:
                todo.append(item.text)
    return MATH_SPAN.sub(" ", "".join(parts))


def _fold(text: str) -> str:
    return " ".join(text.split())


def _pre_lines(text: str) -> str:
    lines = (re.sub(r"[ \u3000]+$", "", line) for line in text.splitlines())
    return "\n".join(line for line in lines if line.strip())
