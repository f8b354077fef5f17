"""A page's sections and tables as parts: the content outside anchored boxes, with links that land.

`page_parts` takes the parsed page (the lxml root scan.py parses) and the set of anchored knowledge
elements, and returns the page's `Part`s in document order:
- The main content is main_content.main_content's: the main landmark (`[role=main]`, `<main>`), the
  `article` inside it or the page's, else a container named like content, else `body` (Jekyll source
  pages are fragments: lxml wraps them in a body). Not content: the site's chrome
  (main_content.is_chrome: nav/header/footer, sidebars, tables of contents, breadcrumbs, pagers,
  edit and skip links, headerlinks), buttons, the `<summary>` labels of `<details>` (the body of
  `<details>` is), anything not rendered (script/style/template/noscript/svg/math, comments,
  `hidden`), and the anchored boxes, which are chunks of their own.
- The content is split at every h1–h6 outside anchored boxes (a heading that is itself a knowledge
  element, h3#ex-…, still starts a section). A section's text is its blocks, one per line; its
  `parents` are the enclosing headings. A section without text is left out (its heading stays in its
  children's breadcrumb), a section that is mostly link text (a layout's list of related pages) too.
- Small sections merge with the part before them when that is their parent or a sibling with text
  of its own (the first heading keeps the link, and the part's first words are that heading's), large ones are split at paragraph → sentence → character boundaries with
  overlap (the knowledge_import rule: windows.split_text, a line as the paragraph).
- Tables (HTML, and Markdown/tab tables in a section's text, see content_type.py) become `table`
  parts under their section's heading; their text is not repeated in the section's. A table without
  a `<caption>` takes the section's line just before it as one when that line is short (at most
  INTRO_CHARS: 「次の表は…です。」), so every row chunk says what the table is about.
- `fragment` is an id (of the heading, or of the element it opens: `<section id=…><h2>`) or a text
  directive computed by fragments.section_fragment from the page's visible text (`page_text`).
- A section part that holds lines of an exercise's answer (blocks.Block.answer: inside a `<details>` whose summary
  says 答え/解答/解説/正解, an element whose class says answer or solution, or the site's answer_selector) keeps
  `problem` (its other lines) and `solution` (those), as a box does (box_text.answer_parts).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ..model import Part
from ..text.tex import readable
from ..text.windows import split_text
from .blocks import Block, page_blocks, visible_text
from .content_type import MIXED, TABLE, detect_content_type, text_table_rows
from .fragments import fold_decomposed, section_fragment
from .section_memory import remembered_slug
from .tables import Table, chunk_table, html_table, tables_in_text

__all__ = ["Part", "detect_content_type", "page_parts", "page_text", "text_table_rows"]

LINK_LIST_SHARE = 0.6  # a section whose text is at least this much link text is a list of links
INTRO_CHARS = 120  # a longer line before a table is a paragraph of its own, not the table's introduction
MAX_KEY_CHARS = 60


@dataclass
class _Section:
    heading: str
    parents: tuple[str, ...]
    level: int
    line: int
    fragment: str
    key: str
    lines: list[str]
    link_chars: int = 0
    has_anchored_box: bool = False
    tables: list = None  # (line, Table)
    answers: set = None  # the lines that are an exercise's answer

    @property
    def path(self) -> tuple[str, ...]:
        return self.parents + (self.heading,)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def page_text(root) -> str:
    """The page's visible text as a browser matches text fragments: blocks one per line, math left
    out (a browser shows it typeset). `fragments.fragment_lands` checks a fragment against it."""
    return visible_text(page_blocks(root, anchored=set()))


def page_parts(root, *, anchored: set, line_offset: int = 0, max_chars: int = 800, min_chars: int = 120,
               overlap: int = 80, answers=frozenset()) -> list[Part]:
    """The section and table parts of a page in document order (see the module docstring). `answers`: the
    elements the site's answer_selector picks."""
    blocks = page_blocks(root, anchored=anchored, answers=answers)
    title_levels = 1 if sum(b.level == 1 for b in blocks) == 1 else 0
    sections = _sections(blocks, line_offset, title_levels)
    _unique_keys(sections)
    parts: list[Part] = []
    for section in _merged(_kept(sections), min_chars, max_chars):
        parts.extend(_section_parts(section, max_chars, overlap))
    return _unique_part_keys(parts)


def _sections(blocks: list[Block], line_offset: int, title_levels: int) -> list[_Section]:
    """Split the blocks at headings; the fragment of each heading from the text around it. A page's
    only h1 is its title: it is a breadcrumb but not part of the keys, so the keys of a built page
    (the layout adds the h1) are those of its Jekyll source."""
    texts = [b.visible for b in blocks]
    folded = _FoldedPage(texts)
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    current = None
    before = ""  # the section's text block just before this one ("" after a heading, table or box)
    for i, block in enumerate(blocks):
        if block.level:
            before = ""
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            parents = tuple(text for _, text in stack)
            stack.append((block.level, block.visible))
            fragment = _fragment(block, i, texts, folded)
            key = _key(tuple(t for level, t in stack if level > title_levels) or (block.visible,))
            current = _Section(block.visible, parents, block.level, block.line + line_offset, fragment, key, [],
                               tables=[], answers=set())
            sections.append(current)
            continue
        if not block.content and not block.anchored and block.table is None:
            continue
        if current is None:
            current = _Section("", (), 0, block.line + line_offset, "", "top", [], tables=[], answers=set())
            sections.append(current)
        current.has_anchored_box |= block.anchored
        if block.table is not None:
            table = _introduced(html_table(block.table), before)
            current.tables.append((block.line + line_offset, table, block.table.get("id")))
        if block.content:
            current.lines.append(block.content)
            current.link_chars += block.link_chars
            if block.answer:
                current.answers.add(block.content)
        before = block.content
    return sections


class _FoldedPage:
    """The page's blocks folded once for matching, so that each heading costs a substring test, not
    a fold of the whole page. Folded without composition (fragments.fold_decomposed): a heading that
    occurs earlier in fragments.py's comparison occurs earlier here too, so the test only decides
    whether section_fragment, which compares exactly, needs the page around the heading."""

    def __init__(self, texts: list[str]):
        folded = fold_decomposed("\0".join(texts)).split("\0")  # one call for the page
        if len(folded) != len(texts):  # a text held a NUL
            folded = [fold_decomposed(text) for text in texts]
        self.starts, at = [], 0
        for n, text in enumerate(folded):
            folded[n] = text = " ".join(text.split())
            self.starts.append(at)
            at += len(text) + 1
        self.text = "\n".join(folded)

    def occurs_before(self, heading: str, index: int) -> bool:
        term = " ".join(fold_decomposed(heading).split())
        return self.text.find(term, 0, max(self.starts[index] - 1, 0)) >= 0


def _fragment(block: Block, index: int, texts: list[str], folded: _FoldedPage) -> str:
    """section_fragment for the heading at texts[index]; the page around it is passed only when the
    heading occurs earlier (only then does the directive need context)."""
    if block.anchor or not folded.occurs_before(block.visible, index):
        return section_fragment(block.visible, anchor=block.anchor, text_before="", text_after="")
    return section_fragment(block.visible, anchor=None, text_before="\n".join(texts[:index]),
                            text_after="\n".join(texts[index + 1:]))


def _kept(sections: list[_Section]) -> list[_Section]:
    """The sections that are not lists of links (at least LINK_LIST_SHARE of their text is link
    text: on the reference corpus's built pages the layout's 関連教材 lists are 1.0, no other
    section reaches 0.2); a dropped section's tables go with it."""
    kept = []
    for section in sections:
        size = sum(len(line) for line in section.lines)
        if size and section.link_chars / size >= LINK_LIST_SHARE:
            continue
        kept.append(section)
    return kept


def _merged(sections: list[_Section], min_chars: int, max_chars: int) -> list[_Section]:
    """Small sections joined to the part before them (see _can_merge); the earlier heading stays the
    part's heading and link, the later one becomes a line of the text. Sections left without text
    or tables are dropped: their headings live on in their children's breadcrumbs."""
    out: list[_Section] = []
    for section in sections:
        while out and not (out[-1].lines or out[-1].tables):
            out.pop()  # an empty section stays empty: it takes nothing in
        prev = out[-1] if out else None
        if prev is not None and _can_merge(prev, section, min_chars, max_chars):
            prev.lines.append(section.heading)
            prev.lines.extend(section.lines)
            prev.answers |= section.answers
            continue
        out.append(section)
    return [s for s in out if s.lines or s.tables]


def _can_merge(prev: _Section, section: _Section, min_chars: int, max_chars: int) -> bool:
    """A small section joins its parent or previous sibling that has text of its own, so the part's
    link (the earlier heading) lands on the part's first words. Never into an empty section (its
    first child keeps its own heading and link; the empty heading stays in the breadcrumb), the text
    before the first heading or an h1 section (the page's title: its sections keep their own links),
    never across the anchored-box flag (the `unanchored` setting chunks by it), never a section with
    tables (they keep their own heading), never beyond max_chars."""
    if not section.lines or section.tables or not prev.lines or prev.level <= 1 \
            or prev.has_anchored_box != section.has_anchored_box:
        return False
    if len(prev.text) + len(section.heading) + len(section.text) + 2 > max_chars:
        return False
    return len(section.text) < min_chars and (_inside(section, prev) or section.parents == prev.parents)


def _inside(section: _Section, outer: _Section) -> bool:
    return section.parents[:len(outer.path)] == outer.path


def _section_parts(section: _Section, max_chars: int, overlap: int) -> list[Part]:
    base = Part("section", section.heading, section.parents, section.level, "", section.fragment, section.key,
                section.line, section.has_anchored_box)
    prose, text_tables = _text_tables(section.lines)
    parts = [replace(base, text=piece, key=section.key if n == 1 else f"{section.key}-p{n}",
                     **_exercise(piece, section.answers))
             for n, piece in enumerate(split_text(prose, max_chars, overlap, paragraph="\n"), 1)]
    tables = [(line, table, table_id) for line, table, table_id in section.tables]
    tables += [(section.line, table, None) for table in text_tables]
    for number, (line, table, table_id) in enumerate(tables, 1):
        parts.extend(_table_parts(base, table, line, f"{section.key}-t{number}", table_id, max_chars))
    return parts


def _exercise(text: str, answers: set) -> dict:
    """A part's problem and solution when some of its lines are an answer's: a line is when it is one of the
    section's answer lines, or a piece of one (a long line split across parts) that no other line holds."""
    if not answers:
        return {}
    problem, solution = [], []
    for line in text.split("\n"):
        inside = line in answers or (line.strip() and any(line in a for a in answers))
        (solution if inside else problem).append(line)
    if not solution:
        return {}
    return {"problem": "\n".join(problem), "solution": "\n".join(solution)}


# What every row of a text table holds (content_type._cells): a pipe, a tab or a column gap. Most
# sections have none, and need no line-by-line detection.
_ROW_HINT = re.compile(r"[|\t]|\S(?: {2,}|\u3000+)\S")


def _text_tables(lines: list[str]) -> tuple[str, list[Table]]:
    """The section's prose and the Markdown/tab tables taken out of it."""
    text = "\n".join(lines)
    if not _ROW_HINT.search(text) or detect_content_type(text) not in (TABLE, MIXED):
        return text, []
    found = tables_in_text(text)
    all_lines = text.splitlines()
    prose, tables, start = [], [], 0
    for first, end, table in found:
        prose.extend(all_lines[start:first])
        tables.append(_introduced(table, all_lines[first - 1] if first > start else ""))
        start = end
    prose.extend(all_lines[start:])
    return "\n".join(prose), tables


def _introduced(table: Table, before: str) -> Table:
    """The table with a caption: its own, else the text line just before it when that is short
    enough to introduce it (see INTRO_CHARS), TeX made readable as in the cells."""
    line = before.splitlines()[-1].strip() if before.strip() else ""
    if table.caption or not line or len(line) > INTRO_CHARS:
        return table
    return replace(table, caption=readable(line))


def _table_parts(base: Part, table: Table, line: int, key: str, table_id, max_chars: int) -> list[Part]:
    chunks = chunk_table(table, max_chars=max_chars)
    fragment = table_id or base.fragment
    single = len(chunks) == 1
    return [replace(base, kind="table", text=c.text, line=line, fragment=fragment, header=table.header,
                    rows=c.rows, core=c.core, key=key if single else f"{key}-r{c.rows[0]}-{c.rows[1]}") for c in chunks]


def _key(path: tuple[str, ...]) -> str:
    """A readable ASCII slug of the heading path: the heading's slug, then parents' while it fits."""
    slugs = [_slug(h) for h in path]
    key = slugs[-1]
    for slug in reversed(slugs[:-1]):
        if len(slug) + 1 + len(key) > MAX_KEY_CHARS:
            break
        key = f"{slug}-{key}"
    return key


def _slug(heading: str) -> str:
    return remembered_slug(heading, _computed_slug)


@lru_cache(maxsize=4096)
def _computed_slug(heading: str) -> str:
    from ..text.slugs import slug_for

    slug = slug_for(heading, _glossary()) if heading else "top"
    if not slug or slug.isdigit():
        digest = hashlib.sha1(heading.encode("utf-8")).hexdigest()[:6]
        slug = f"{slug}-h{digest}" if slug else f"h{digest}"
    return slug[:MAX_KEY_CHARS]


@lru_cache(maxsize=1)
def _glossary() -> dict[str, str]:
    from ..text.slugs import load_glossary

    return load_glossary()


def _unique_keys(sections: list[_Section]) -> None:
    seen: dict[str, int] = {}
    for section in sections:
        section.key = _unique(section.key, seen)


def _unique_part_keys(parts: list[Part]) -> list[Part]:
    seen: dict[str, int] = {}
    return [replace(p, key=_unique(p.key, seen)) for p in parts]


def _unique(key: str, seen: dict[str, int]) -> str:
    if key not in seen:
        seen[key] = 1
        return key
    n = seen[key]
    while True:
        n += 1
        candidate = f"{key}-{n}"
        if candidate not in seen:
            seen[key] = n
            seen[candidate] = 1
            return candidate
