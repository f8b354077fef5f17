"""`Page` -> `Chunk`: every field of the chunk contract is decided here.

learns resolution (yaml > attribute > heuristic), excerpt, URL, the text that is embedded
and its content_hash. Boxes come from the page's knowledge elements; sections and tables from
its parts (sections.py), chosen by the `sections` setting (see `wanted_parts`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..diagnostics import Diagnostic
from ..kinds import BY_TYPE, LEVELS
from ..model import EXCERPT_CHARS  # noqa: F401  (chunks.EXCERPT_CHARS: where the tests read it)
from ..model import (CONTEXT_MARK, Chunk, embed_text, embedded_learns, excerpt, retrieval_content, template_learns,
                     topic_of)
from ..site.jekyll import Site
from ..site.page import KnowledgeElement, Page
from ..text.tex import readable
from .learns_gen import source_hash

# Bump when the embedded text recipe changes: every vector is then recomputed.
EMBED_TEXT_VERSION = "1"


@dataclass
class ChunkSet:
    chunks: list[Chunk] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    left_out: Counter = field(default_factory=Counter)  # why -> how many parts and boxes made no chunk


NO_WORDS = "chunks without words (only symbols or private-use glyphs such as icon fonts)"
_WORD = re.compile(r"[^\W_]")  # a letter or a digit of any script; private-use glyphs and symbols are neither


def holds_words(text: str) -> bool:
    """Whether a text has a letter or a digit: one of only symbols or icon-font glyphs (U+E000–U+F8FF)
    answers no question, so it is no chunk."""
    return _WORD.search(text) is not None


def own_text(part) -> str:
    """What a part says of its own: a table part's own rows (its caption, header and context rows are
    other rows' too), a section's text."""
    if part.kind != "table" or part.rows == (0, 0):
        return part.text
    lines = (part.core or part.text).split("\n")
    return "\n".join(lines[-(part.rows[1] - part.rows[0] + 1):])


def wanted_parts(parts: list, sections: str) -> list:
    """The parts the `sections` setting makes chunks of: none (off), those that hold no anchored box
    (unanchored: the content no box chunk covers), or all of them."""
    if sections == "all":
        return list(parts)
    if sections == "unanchored":
        return [p for p in parts if not p.has_anchored_box]
    return []


LABEL_BOXES = 3  # a bold word in this many boxes of the site is a label (解き方, 答え), not a term


def labels_of(counts: Counter) -> frozenset[str]:
    """Bold words that head parts of many boxes (counts: term -> boxes of the site with it): they name a
    box's layout, not what it teaches."""
    return frozenset(term for term, n in counts.items() if n >= LABEL_BOXES)


def _page_meta(site: Site, page: Page, diagnostics: list) -> dict:
    fm = page.front_matter
    level = str(fm.get("level") or "")
    if level and level not in LEVELS:
        diagnostics.append(Diagnostic(str(page.path), 1, 1, "warning", "unknown-level",
                                      f"level '{level}' is not one of {'/'.join(LEVELS)}; chunks get no level",
                                      f"set level to one of {', '.join(LEVELS)}"))
        level = ""
    related = fm.get("related") or []
    prerequisites = tuple(
        PurePosixPath(str(item.get("url", ""))).stem
        for item in related
        if isinstance(item, dict) and item.get("type") == "prerequisite" and item.get("url")
    )
    return {
        "category": str(fm.get("category") or ""),
        "level": level,
        "prerequisites": prerequisites,
        "title": page.title,
    }


def _chunk(site: Site, page: Page, element: KnowledgeElement, meta: dict, labels: frozenset[str]) -> Chunk:
    learns, source = resolve_learns(site, page, element, labels)
    content = element.text
    return Chunk(
        id=f"{page.material}#{element.id}",
        material=page.material,
        anchor=element.id,
        url=f"{site.baseurl}{page.url_path}{_fragment(element)}",
        title=element.title,
        content=content,
        excerpt=excerpt(content, element.heading or element.title),
        learns=learns,
        learns_source=source,
        type=element.type,
        category=meta["category"],
        level=meta["level"],
        prerequisites=meta["prerequisites"],
        content_hash=content_hash(embed_text(element.title, embedded_learns(learns, source, element.type, element.title),
                                             content, meta["title"])),
        material_title=meta["title"],
        line=element.line,
        source_path=page.rel,
        label=element.label,
        problem=element.problem,
        solution=element.solution,
    )


def _fragment(element: KnowledgeElement) -> str:
    fragment = element.id if element.fragment is None else element.fragment
    return f"#{fragment}" if fragment else ""


def part_chunk(site: Site, page: Page, part, meta: dict) -> Chunk:
    """A section or table part as a chunk: anchor `sec-<key>`/`tbl-<key>`, the link that lands on it
    (the page's URL + its fragment), the heading as title and the enclosing headings as breadcrumb."""
    type_ = "table" if part.kind == "table" else "section"
    anchor = f"{BY_TYPE[type_].prefix}-{part.key}"
    title = section_title(part.heading) or meta["title"] or page.material
    content = _marked_context(part.text, part.core) if type_ == "table" else _worded_lines(part.text)
    element = KnowledgeElement(id=anchor, type=type_, title=title, text=content, line=part.line)
    learns, source = resolve_learns(site, page, element)
    fragment = f"#{part.fragment}" if part.fragment else ""
    parents = _with_breadcrumbs(page.breadcrumbs, part.parents)
    return Chunk(
        id=f"{page.material}#{anchor}", material=page.material, anchor=anchor,
        url=f"{site.baseurl}{page.url_path}{fragment}", title=title, content=content,
        excerpt=excerpt(retrieval_content(content)), learns=learns, learns_source=source,
        type=type_, category=meta["category"], level=meta["level"], prerequisites=meta["prerequisites"],
        content_hash=content_hash(embed_text(title, embedded_learns(learns, source, type_, title),
                                             retrieval_content(content), meta["title"], parents)),
        material_title=meta["title"], line=part.line, source_path=page.rel, parents=parents,
        problem=_worded_lines(part.problem) if part.solution else "",
        solution=_worded_lines(part.solution) if part.solution else "",
    )


def _with_breadcrumbs(trail: tuple[str, ...], parents: tuple[str, ...]) -> tuple[str, ...]:
    """The page's breadcrumb trail (where the site puts the page: ガイド › 応用) before the headings
    that enclose the part; a trail entry the headings repeat (the page's own title) is not doubled."""
    if trail and parents and trail[-1] == parents[0]:
        trail = trail[:-1]
    return tuple(trail) + tuple(parents)


# Decoration before a heading's words: emoji, and a shape (▶ ■ ●) followed by a space. A shape
# without a space is part of the words (△ABC).
_DECORATION = re.compile("^(?:[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D]+\\s*"
                         "|[\u25A0-\u25FF\u2605\u2606]+\\s+)+")


def section_title(heading: str) -> str:
    """A heading as a chunk title: its leading decoration (▶, 📌) dropped; the link keeps the heading
    as the page shows it."""
    return _DECORATION.sub("", heading).strip() or heading.strip()


def _worded_lines(text: str) -> str:
    """A section's lines that have a word or number: a line of brackets or arrows alone (「［］」 left
    where a source page's Liquid tag was) says nothing."""
    return "\n".join(line for line in text.split("\n") if _WORD_CHAR.search(line))


_WORD_CHAR = re.compile(r"\w")


def _marked_context(text: str, core: str) -> str:
    """The table part's text with each context row (a line not in `core`, in order) marked."""
    if not core or core == text:
        return text
    own = core.split("\n")
    out, at = [], 0
    for line in text.split("\n"):
        if at < len(own) and line == own[at]:
            out.append(line)
            at += 1
        else:
            out.append(CONTEXT_MARK + line)
    return "\n".join(out)


def content_hash(text: str) -> str:
    return hashlib.sha256(f"v{EMBED_TEXT_VERSION}\n{text}".encode("utf-8")).hexdigest()


def resolve_learns(site: Site, page: Page, element: KnowledgeElement,
                   labels: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], str]:
    from_yaml = (site.learns.get(page.material) or {}).get(element.id)
    if isinstance(from_yaml, list) and from_yaml:
        return tuple(str(x).strip() for x in from_yaml if str(x).strip()), "yaml"
    if element.learns_attribute:
        items = tuple(x.strip() for x in element.learns_attribute.split("|") if x.strip())
        if items:
            return items, "attribute"
    generated = (site.generated_learns.get(page.material) or {}).get(element.id) or {}
    if generated.get("source_hash") == source_hash(element.title, element.text) and generated.get("learns"):
        return tuple(generated["learns"]), "generated"
    return heuristic_learns(element, labels), "heuristic"


MAX_LEARNS = 5
_LEARNS_CHARS = 40  # longer list items are sentences of working, not what the box teaches
# What `readable` leaves when a line has TeX it cannot render (a bare \frac, $…$ math, x^{2}).
_MARKUP = re.compile(r"\\[A-Za-z()\[\]]|[\^_]\{|\$")
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")  # kana or kanji: the line says something in words


def heuristic_learns(element: KnowledgeElement, labels: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Up to 5 items from the box itself: its list items, then its bold terms (not `labels`, the
    bold words many boxes share such as 解き方 or 答え), TeX written as text, a rule's bare formula
    named by its topic. Only a box that offers none gets the kind's template lines
    (「…の内容を理解する」), which say nothing beyond the title and are not embedded."""
    topic = topic_of(element.title) if element.type != "example" else ""
    terms = [t for t in element.bold_terms if t not in labels and _WORDS.search(t)]
    items: list[str] = []
    for raw in (*element.list_items, *terms):
        item = _learns_line(raw, topic)
        if item and item != element.title and not any(item in seen for seen in items):
            items.append(item)
        if len(items) == MAX_LEARNS:
            break
    return tuple(items) or template_learns(element.type, element.title)


def _learns_line(raw: str, topic: str) -> str:
    """One list item or bold term as a learns line, or "" when it cannot be one."""
    text = readable(raw).strip(" ：:・→")
    if not text or len(text) > _LEARNS_CHARS or _MARKUP.search(text):
        return ""
    if topic and not _WORDS.search(text) and any(c in text for c in "=＝<>≤≥"):
        return f"{topic}：{text}"  # a bare formula says what it is only with its name
    return text if len(text) >= 2 else ""


