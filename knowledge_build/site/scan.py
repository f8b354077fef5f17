"""HTML page -> `Page` with its `KnowledgeElement`s (id, type, title, text, source line), and, when
the `sections` setting asks for them, its section and table `Part`s (sections.py) from the same parse.

Works the same on Jekyll source pages (front matter + HTML) and on built HTML. Every
problem becomes a `Diagnostic` naming file:line and the fix; nothing here raises for bad
content.
"""

from __future__ import annotations

import functools

import re
from functools import lru_cache
from pathlib import Path

import lxml.etree
import lxml.html

from ..html.box_text import answer_parts, box_title, clean, descendants, display_title, node_text, strip_emoji
from ..html.blocks import HEADINGS
from ..html.main_content import (breadcrumbs, first_heading, in_main_area, is_placeholder_title, main_content,
                                 strip_site_name, text_language)
from ..kinds import BY_TYPE, KNOWLEDGE_ID, type_of_id
from ..text.tex import readable
from .front_matter import front_matter_from_source, split_front_matter
from .jekyll import Site, permalink, source_page_for
from .page import KnowledgeElement, Page, UnanchoredBox, page_diagnostic, read_page_text

# libxml2 knows HTML4 only; these messages are about valid HTML5, not broken markup, or (ids)
# about what the duplicate-id rule reports better.
_BENIGN_PARSER_MESSAGES = re.compile(r"Tag \S+ invalid|htmlParseEntityRef|Unexpected end tag : p\b|ID \S+ already defined")


def scan_page(site: Site, path: Path, box_classes=(), sections: str = "off", boxes=(),
              answer_selector: str | None = None) -> Page:
    """The page's knowledge elements; with `sections` other than "off" also all its parts (which of
    them become chunks is chunks.py's choice). `box_classes` and `boxes` ((CSS selector, kind) pairs)
    say what a box is on this site; `answer_selector` what holds an exercise's answer in a box, besides
    what marks one anyway (html/box_text.answer_parts)."""
    rel = path.relative_to(site.root)
    material = site.materials.get(rel.as_posix()) or path.stem
    page = Page(path=path, rel=rel.as_posix(), material=material, url_path="")
    text = read_page_text(page)
    if text is None:
        return page
    body, offset = split_front_matter(page, text)
    source = source_page_for(site, rel)
    if source is not None:
        front_matter_from_source(page, source)
    page.url_path = permalink(site, rel, page.front_matter)
    if body.strip():
        _scan_html(page, body, offset, tuple(box_classes), sections != "off" and site.kind, tuple(boxes),
                   site.title_suffix, answer_selector)
    if page.elements and site.kind == "source" and not page.has_front_matter:
        page.diagnostics.append(page_diagnostic(page, 1, 1, "warning", "no-front-matter",
                                      "page has knowledge elements but no front matter, so Jekyll copies it "
                                      "verbatim and its title, category and level are unknown",
                                      "add a front matter block (---\\ntitle: …\\nlevel: 標準\\n---) at the top"))
    page.title = str(page.front_matter.get("title") or page.title or page.material)
    return page


def parse_page(path: Path):
    """The parsed HTML of a page as scan_page parses it (front matter skipped), or None when it cannot
    be read or parsed (scan_page reports why): for checks that need the page itself, such as whether
    a section's link lands (validate)."""
    page = Page(path=path, rel="", material=path.stem, url_path="")
    text = read_page_text(page)
    if text is None:
        return None
    body, _ = split_front_matter(page, text)
    if not body.strip():
        return None
    try:
        return _document(body, _parser())
    except (lxml.etree.ParserError, ValueError):
        return None


def _parser():
    # huge_tree lifts libxml2's 10 MB text-node and 256-level limits (the files are the site's
    # own); what still stops the parser is a FATAL entry, reported as an error by _scan_html.
    # lxml.etree's parser, not lxml.html's: the html one makes every element proxy through a Python
    # class lookup, which cost a third of the walk sections make over every element.
    return lxml.etree.HTMLParser(recover=True, remove_comments=True, huge_tree=True)


def _document(body: str, parser):
    """The page's root element, as lxml.html.document_fromstring gives it."""
    root = lxml.etree.fromstring(body, parser=parser)
    if root is None:
        raise lxml.etree.ParserError("Document is empty")
    return root


def _scan_html(page: Page, body: str, offset: int, box_classes: tuple[str, ...], parts_of: str = "",
               box_selectors: tuple = (), site_name: str = "", answer_selector: str | None = None) -> None:
    """Elements (and, when `parts_of` names the site's kind, parts) of the page's HTML.

    A box is an element with a box class (`box_classes`) or one that a `boxes` selector picks (an
    admonition, a definition list: `selected_boxes`). A box with a knowledge id is a knowledge element
    linked by its id; a box by class without one is reported (missing-id) and left to its section; a
    box by selector without one is a knowledge element linked to its section's heading. A knowledge
    id on anything else (a heading's `id="rule-of-two"`) is an ordinary id. Whatever matched it, an
    element outside the page's main content (main_content.in_main_area) is chrome, not a box: it is
    counted in `page.left_out` and named in an info (box-outside-main). A page whose <title> is empty
    or the generator's placeholder (Sphinx's `<no title>`) takes the first heading of its main content
    as title (a sidebar's logo heading is not it); a placeholder-titled page without one is an included
    fragment, skipped with that reason (`page.skip_reason`); an untitled one is named by its file."""
    parser = _parser()
    try:
        root = _document(body, parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        page.diagnostics.append(page_diagnostic(page, offset + 1, 1, "error", "html-unparsable",
                                      f"the HTML cannot be parsed ({exc})", "fix the markup"))
        return
    stopped = _parser_messages(page, parser.error_log, offset)
    page.redirect = bool(_REFRESH(root))
    page.lang = text_language(root)  # a theme's lang="en" on a page written in Japanese is "ja"
    page.breadcrumbs = breadcrumbs(root)
    main = None  # the main area, asked once a box or an untitled page needs it
    if not page.front_matter.get("title"):
        titles = root.xpath("//title//text()")
        title = clean(" ".join(titles)) if titles else ""
        page.title = strip_site_name(title, site_name) if title and site_name else title
        if not page.title or is_placeholder_title(page.title):  # no title of its own: its first heading's
            main = main_content(root)
            heading = first_heading(main)
            if not heading and page.title:
                page.skip_reason = f"{UNTITLED} ({page.title}, no heading): {UNTITLED_WHY}"
                return
            page.title = heading
    selected = selected_boxes(root, box_selectors)
    answers = set(_compiled_answers(answer_selector)(root)) if answer_selector else set()
    seen: dict[str, int] = {}
    box_lines: list[int] = []
    counted = [0, 0]  # knowledge ids, box class names: what the cheap lost-box check compares
    # every box that is a knowledge element (sections leave their text to it) -> whether it is an
    # anchored box by id (`sections: unanchored` then leaves its section out) or a box by selector,
    # whose section's own text stays a section chunk
    anchored: dict = {}
    outside: list[int] = []  # lines of boxes outside the main area
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        node_id = node.get("id") or ""
        boxes = [c for c in (node.get("class") or "").split() if c in box_classes]
        kind = selected.get(node) if selected else None
        knowledge_id = bool(KNOWLEDGE_ID.match(node_id))
        line = (node.sourceline or 1) + offset
        if boxes or knowledge_id:
            box_lines.append(line)
            counted[0] += knowledge_id
            counted[1] += len(boxes)
        if not (boxes or kind):
            if knowledge_id and node.tag not in HEADINGS:
                page.diagnostics.append(page_diagnostic(
                    page, line, 1, "info", "not-a-box", f"<{node.tag} id=\"{node_id}\"> has no box class, so it is "
                    "indexed with its section, not as a box",
                    f"add the box class of its kind (e.g. class=\"{BY_TYPE[type_of_id(node_id)].box_class}\") "
                    "to make it a box"))
            continue
        if kind and not boxes and _inside(node, anchored):
            continue  # a definition list inside a box is part of the box
        if main is None:
            main = main_content(root)
        if not in_main_area(node, main):
            outside.append(line)
            continue
        if knowledge_id or (kind and not boxes):
            anchored[node] = knowledge_id
            element = (_element(page, node, node_id, line, boxes, answers) if knowledge_id
                       else _selected_element(page, node, kind, line, seen))
            if element is None:
                continue
            if element.id in seen:
                page.diagnostics.append(page_diagnostic(page, line, 1, "error", "duplicate-id",
                                              f"id '{element.id}' is used twice in this page (first at line {seen[element.id]})",
                                              "give one of the two boxes another id; links would jump to the first"))
                continue
            seen[element.id] = line
            page.elements.append(element)
        else:
            page.unanchored.append(UnanchoredBox(boxes[0], box_title(node), line, node_id or None))
    if outside:
        _report_outside(page, outside)
    if not stopped:
        _report_lost_boxes(page, body, offset, box_classes, box_lines, counted)
    if parts_of:
        boxes_key = repr((box_classes, box_selectors)) + (f"|answers:{answer_selector}" if answer_selector else "")
        page.parts = _parts(page, root, anchored, offset, body, source=parts_of == "source", boxes=boxes_key,
                            answers=answers)


UNTITLED = "no title of its own"
UNTITLED_WHY = "a fragment the generator rendered from an include; its text is in the page that includes it"
OUTSIDE_MAIN = "boxes outside the main content (the site's navigation or toolbar)"


def _report_outside(page: Page, lines: list[int]) -> None:
    """Boxes matched outside the page's main area are chrome (a theme's version menu is a `<dl>`):
    counted in the build's report of what was left out, and named in an info."""
    page.left_out[OUTSIDE_MAIN] = page.left_out.get(OUTSIDE_MAIN, 0) + len(lines)
    shown = ", ".join(map(str, lines[:5])) + (" …" if len(lines) > 5 else "")
    page.diagnostics.append(page_diagnostic(
        page, lines[0], 1, "info", "box-outside-main",
        f"{len(lines)} element(s) matched as boxes lie outside the page's main content, in the site's "
        f"navigation or frame (lines {shown}), so they are not indexed",
        "move a box that is content into the page's main area (<main>, the article)"))


_LIQUID = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
_RAW = re.compile(r"\{%-?\s*(end)?raw\s*-?%\}")
_RAW_BLOCK = re.compile(r"\{%-?\s*raw\s*-?%\}.*?\{%-?\s*endraw\s*-?%\}", re.DOTALL)


def _parts(page: Page, root, anchored: dict, offset: int, body: str, source: bool, boxes: str = "",
           answers=frozenset()) -> list:
    """The page's section and table parts. Liquid in a Jekyll source page's text ({{ site.x }},
    {% for %}) is template code: what a reader sees exists only after Jekyll renders it, so such a
    page has no parts from its source (an info says so). Liquid in attributes (href="{{ … }}") does
    not change the text; `{% raw %}` markers are taken out."""
    from ..html.section_memory import page_parts_remembered
    from ..html.sections import page_parts

    if source and ("{{" in body or "{%" in body) and _liquid_in_text(root):
        page.diagnostics.append(page_diagnostic(page, offset + 1, 1, "info", "sections-need-render",
                                      "the page uses Liquid ({{ … }}, {% … %}), so its text is known only after "
                                      "Jekyll renders it; its sections are not indexed from the source",
                                      "index the rendered site (--site _site) to include them"))
        return []
    if source and "{%" in body:
        _drop_raw_markers(root)
    try:
        return page_parts_remembered(body, offset, source,
                                     lambda: page_parts(root, anchored=anchored, line_offset=offset,
                                                        answers=answers), boxes)
    except ImportError as exc:  # fugashi/unidic-lite/jaconv: the keys of the chunk ids need them
        from ..errors import SectionsUnavailable

        raise SectionsUnavailable(str(exc)) from exc


def _liquid_in_text(root) -> bool:
    """Whether the page's text (not its attributes) holds Liquid outside {% raw %} blocks (TeX such
    as \\frac{{}_7C_3}{…} in a raw block is text)."""
    texts = "\n".join(text for node in root.iter() if isinstance(node.tag, str)
                      for text in (node.text, node.tail) if text and "{" in text)
    return bool(_LIQUID.search(_RAW_BLOCK.sub("", texts)))


def _drop_raw_markers(root) -> None:
    """Take `{% raw %}`/`{% endraw %}` out of the text (the elements are already read, so changing
    the tree here changes nothing else)."""
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        if node.text and "{%" in node.text:
            node.text = _RAW.sub("", node.text)
        if node.tail and "{%" in node.tail:
            node.tail = _RAW.sub("", node.tail)


def _parser_messages(page: Page, error_log, offset: int) -> bool:
    """Report the parser's complaints; True when it stopped early (content after that is lost)."""
    for entry in error_log:
        line = entry.line + offset
        if entry.level_name == "FATAL":
            page.diagnostics.append(page_diagnostic(page, line, entry.column + 1, "error", "html-truncated",
                                          f"the HTML parser stopped at line {line} ({entry.message.strip()}); "
                                          "boxes after it are not indexed",
                                          "nest elements less deeply (at most about 2,000 levels) or split the page"))
            return True
        if entry.level_name == "ERROR" and not _BENIGN_PARSER_MESSAGES.search(entry.message):
            page.diagnostics.append(page_diagnostic(page, line, entry.column + 1, "warning",
                                          "html-malformed", f"malformed HTML: {entry.message.strip()}",
                                          "close or correct the tag; the box's text may be cut or merged"))
    return False


_KNOWLEDGE_ID_ATTR = re.compile(r"""\sid\s*=\s*["']?\s*(?:rule|method|def|ex|tip)-""", re.IGNORECASE)


def _report_lost_boxes(page: Page, body: str, offset: int, box_classes, box_lines: list[int],
                       counted: list[int]) -> None:
    """Boxes the standard library's tokenizer sees but libxml2 dropped (it discards markup after
    </html> without a message, for one) are errors, never a silent loss. A cheap count of id and
    class attributes decides whether the second parse is needed at all."""
    if (len(_KNOWLEDGE_ID_ATTR.findall(body)) <= counted[0]
            and sum(body.count(c) for c in box_classes) <= counted[1]):
        return
    from ..html.tags import box_class, locate_tags

    found = list(box_lines)
    for tag in locate_tags(body):
        if not (KNOWLEDGE_ID.match(tag.id) or box_class(tag, box_classes)):
            continue
        line = tag.line + offset
        if line in found:
            found.remove(line)
            continue
        name = f"box '{tag.id}'" if tag.id else f"{box_class(tag, box_classes)} box"
        page.diagnostics.append(page_diagnostic(page, line, tag.col, "error", "html-lost",
                                      f"{name} is not in the parsed page (the HTML parser dropped it), "
                                      "so it is not indexed",
                                      "move it inside <body> and check the markup before it"))


def _element(page: Page, node, node_id: str, line: int, boxes: list[str], answers=frozenset()) -> KnowledgeElement | None:
    text = strip_emoji(node_text(node))
    if not text:
        page.diagnostics.append(page_diagnostic(page, line, 1, "warning", "empty-box",
                                      f"knowledge element '{node_id}' has no text and is left out of the index",
                                      "write its content or remove the id"))
        return None
    heading = box_title(node)
    label, title = display_title(heading)
    if not heading:
        title = readable(text[:30])
        page.diagnostics.append(page_diagnostic(page, line, 1, "info", "no-title",
                                      f"knowledge element '{node_id}' has no <strong> or heading; its title is taken from its text",
                                      "start the box with <strong>Title</strong>"))
    inside = list(descendants(node))
    items = tuple(clean(node_text(li)) for li in inside if li.tag == "li")
    bold = [strip_emoji(node_text(b)).strip(" ：:") for b in inside if b.tag in ("strong", "b")]
    parts = answer_parts(node, answers)
    return KnowledgeElement(
        id=node_id,
        type=type_of_id(node_id),
        title=title,
        text=text,
        line=line,
        box_class=boxes[0] if boxes else "",
        learns_attribute=node.get("data-learns"),
        list_items=tuple(i for i in items if i),
        bold_terms=tuple(dict.fromkeys(b for b in bold if b and b != heading)),
        label=label,
        heading=heading,
        problem=strip_emoji(parts[0]) if parts else "",
        solution=strip_emoji(parts[1]) if parts else "",
    )


_REFRESH = lxml.etree.XPath("//meta[translate(@http-equiv, 'REFSH', 'refsh') = 'refresh']")
_SECTION_ANCHOR = lxml.etree.XPath(
    "(preceding::*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6][@id]"
    " | ancestor::*[@id][self::section or self::div[contains(concat(' ', normalize-space(@class), ' '), ' section ')]])"
    "[last()]/@id")
_ADMONITION_TITLE = lxml.etree.XPath("*[contains(concat(' ', normalize-space(@class), ' '), ' admonition-title ')]")
SHORT_TITLE = 8  # an admonition title this short is its kind's label (Tip, 注釈): the text names the box


@lru_cache(maxsize=8)
@functools.lru_cache(maxsize=8)
def _compiled_answers(selector: str):
    from lxml.cssselect import CSSSelector

    return CSSSelector(selector)


def _compiled(box_selectors: tuple) -> tuple:
    from lxml.cssselect import CSSSelector

    return tuple((CSSSelector(selector), kind) for selector, kind in box_selectors)


def selected_boxes(root, box_selectors: tuple) -> dict:
    """element -> kind for every element a `boxes` selector picks (the first selector wins)."""
    found: dict = {}
    for selector, kind in _compiled(box_selectors):
        for node in selector(root):
            found.setdefault(node, kind)
    return found


def _inside(node, boxes) -> bool:
    return any(parent in boxes for parent in node.iterancestors())


def _selected_element(page: Page, node, kind: str, line: int, seen: dict) -> KnowledgeElement | None:
    """A box picked by a selector: its id when it has one, else `<prefix>-<section>[-n]`, linked to the
    heading of its section (the closest one before it with an id)."""
    text = strip_emoji(node_text(node))
    if not text:
        return None
    node_id = node.get("id") or ""
    section = next(iter(_SECTION_ANCHOR(node)), "")
    prefix = BY_TYPE[kind].prefix
    anchor = node_id
    if not anchor:
        base = f"{prefix}-{section}" if section else prefix
        anchor, number = base, 1
        while anchor in seen:
            number += 1
            anchor = f"{base}-{number}"
    label_nodes = _ADMONITION_TITLE(node)
    if label_nodes:
        label_text = clean(node_text(label_nodes[0]))
        body = clean(text[len(label_text):] if text.startswith(label_text) else text)
    elif node.tag == "dl":
        label_text = body = "・".join(clean(node_text(dt)) for dt in node.iter("dt"))[:60]
    else:
        label_text = box_title(node)
        body = clean(text[len(label_text):]) if label_text and text.startswith(label_text) else text
    if node.tag == "dl" or len(label_text) > SHORT_TITLE:  # a definition list is titled by its terms
        title = label_text or readable(text[:30])
    else:
        title = f"{label_text}：{readable(body[:30])}" if label_text else readable(body[:30])
    inside = list(descendants(node))
    return KnowledgeElement(
        id=anchor, type=kind, title=title, text=text, line=line, box_class="",
        learns_attribute=node.get("data-learns"),
        list_items=tuple(i for i in (clean(node_text(li)) for li in inside if li.tag == "li") if i),
        heading=label_text, fragment=node_id or section,
    )
