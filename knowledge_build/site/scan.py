"""HTML page -> `Page` with its `KnowledgeElement`s (id, type, title, text, source line), and, when
the `sections` setting asks for them, its section and table `Part`s (sections.py) from the same parse.

Works the same on Jekyll source pages (front matter + HTML) and on built HTML. Every
problem becomes a `Diagnostic` naming file:line and the fix; nothing here raises for bad
content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import lxml.etree
import lxml.html

from ..diagnostics import Diagnostic
from ..kinds import KNOWLEDGE_ID, type_of_id
from ..readfile import UnreadableFile, read_regular_file
from ..text.ja import split_label
from ..text.tex import readable
from ..yamlfile import YamlError
from ..yamlfile import load as load_yaml
from .jekyll import Site, permalink, source_page_for

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
# libxml2 knows HTML4 only; these messages are about valid HTML5, not broken markup, or (ids)
# about what the duplicate-id rule reports better.
_BENIGN_PARSER_MESSAGES = re.compile(r"Tag \S+ invalid|htmlParseEntityRef|Unexpected end tag : p\b|ID \S+ already defined")


@dataclass
class KnowledgeElement:
    id: str
    type: str
    title: str
    text: str
    line: int
    box_class: str = ""
    learns_attribute: str | None = None
    list_items: tuple[str, ...] = ()
    bold_terms: tuple[str, ...] = ()  # <strong>/<b> texts after the title: the terms the box stresses
    label: str = ""  # the box's number label (「コツ2」「練習1」), taken off the title
    heading: str = ""  # the title as written on the page (label, TeX and all)


@dataclass
class UnanchoredBox:
    """A knowledge box (by class) with no knowledge id: nothing can link to it."""

    box_class: str
    title: str
    line: int
    id: str | None = None


@dataclass
class Page:
    path: Path
    rel: str  # posix path relative to the scanned root
    material: str  # file stem: the "material" of every chunk on the page
    url_path: str  # permalink without baseurl
    title: str = ""
    front_matter: dict = field(default_factory=dict)
    has_front_matter: bool = False
    elements: list[KnowledgeElement] = field(default_factory=list)
    unanchored: list[UnanchoredBox] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unreadable: bool = False  # the file could not be read or decoded: nothing else is known
    parts: list = field(default_factory=list)  # sections.Part: every section and table (`sections` not off)


def scan_page(site: Site, path: Path, box_classes=(), sections: str = "off") -> Page:
    """The page's knowledge elements; with `sections` other than "off" also all its parts (which of
    them become chunks is chunks.py's choice)."""
    rel = path.relative_to(site.root)
    page = Page(path=path, rel=rel.as_posix(), material=path.stem, url_path="")
    text = _read_text(page)
    if text is None:
        return page
    body, offset = split_front_matter(page, text)
    source = source_page_for(site, rel)
    if source is not None:
        _front_matter_from_source(page, source)
    page.url_path = permalink(site, rel, page.front_matter)
    if body.strip():
        _scan_html(page, body, offset, tuple(box_classes), sections != "off" and site.kind)
    if page.elements and site.kind == "source" and not page.has_front_matter:
        page.diagnostics.append(_diag(page, 1, 1, "warning", "no-front-matter",
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
    text = _read_text(page)
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


def _diag(page, line, col, severity, rule, message, fix="") -> Diagnostic:
    return Diagnostic(str(page.path), line, col, severity, rule, message, fix)


def _read_text(page: Page) -> str | None:
    try:
        raw = read_regular_file(page.path)
    except UnreadableFile as exc:
        page.unreadable = True
        page.diagnostics.append(_diag(page, 1, 1, "error", "page-unreadable",
                                      f"the page cannot be read ({exc.reason})", exc.fix))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        page.diagnostics.append(_diag(page, line, col, "error", "invalid-utf8",
                                      f"invalid UTF-8 byte 0x{raw[exc.start]:02x}",
                                      "re-save the file as UTF-8 (Jekyll's encoding is UTF-8)"))
        page.unreadable = True
        return None
    return text.removeprefix("\ufeff")


def split_front_matter(page: Page, text: str) -> tuple[str, int]:
    """Return the HTML body and how many lines precede it in the file."""
    if not re.match(r"---[ \t]*\r?\n", text):
        return text, 0
    lines = text.splitlines(keepends=True)
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            page.has_front_matter = True
            page.front_matter = _parse_yaml(page, "".join(lines[1:index]), first_line=2)
            return "".join(lines[index + 1:]), index + 1
    page.diagnostics.append(_diag(page, 1, 1, "error", "front-matter-unclosed",
                                  "front matter starts with '---' but is never closed",
                                  "add a line '---' after the front matter"))
    return "", 0


def _parse_yaml(page: Page, block: str, first_line: int) -> dict:
    try:
        doc = load_yaml(block, page.path, first_line)
    except YamlError as exc:
        page.diagnostics.append(exc.diagnostic("front-matter-yaml"))
        return {}
    if doc.data is None:
        return {}
    if not isinstance(doc.data, dict):
        page.diagnostics.append(_diag(page, first_line, 1, "error", "front-matter-yaml",
                                      "front matter must be a mapping of keys to values",
                                      "write it as 'key: value' lines"))
        return {}
    return _checked_front_matter(page, doc)


# Front matter keys the tool reads, and the shape each must have.
_SCALAR_KEYS = ("title", "permalink", "level", "category")
_LIST_OF_MAPPINGS_KEYS = {"related": "- title: …\\n    url: /page.html\\n    type: prerequisite",
                          "toc": "- id: section-id\\n    title: …"}


def _checked_front_matter(page: Page, doc) -> dict:
    """The front matter with keys of the wrong shape left out, each a warning on its line."""
    data = dict(doc.data)

    def drop(keys, message, fix):
        page.diagnostics.append(_diag(page, doc.line(*keys), 1, "warning", "front-matter-shape", message, fix))

    for key in _SCALAR_KEYS:
        if isinstance(data.get(key), (dict, list)):
            drop((key,), f"front matter '{key}' must be a single value, not a "
                 f"{'list' if isinstance(data[key], list) else 'mapping'}; it is ignored", f"write '{key}: value'")
            del data[key]
    for key, example in _LIST_OF_MAPPINGS_KEYS.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            drop((key,), f"front matter '{key}' must be a list of entries, not {type(value).__name__} "
                 f"{str(value)[:40]!r}; it is ignored", f"write it as '{key}:\\n  {example}'")
            del data[key]
            continue
        bad = [i for i, item in enumerate(value) if not isinstance(item, dict)]
        for i in bad:
            drop((key, i), f"front matter '{key}' entry {i + 1} is not a mapping; it is ignored",
                 f"write each entry as '{example}'")
        data[key] = [item for item in value if isinstance(item, dict)]
    return data


def _front_matter_from_source(page: Page, source: Path) -> None:
    shadow = Page(path=source, rel="", material=page.material, url_path="")
    text = _read_text(shadow)
    if text is not None:
        split_front_matter(shadow, text)
    page.front_matter, page.has_front_matter = shadow.front_matter, shadow.has_front_matter
    page.diagnostics.extend(shadow.diagnostics)


def _scan_html(page: Page, body: str, offset: int, box_classes: tuple[str, ...], parts_of: str = "") -> None:
    """Elements (and, when `parts_of` names the site's kind, parts) of the page's HTML."""
    parser = _parser()
    try:
        root = _document(body, parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        page.diagnostics.append(_diag(page, offset + 1, 1, "error", "html-unparsable",
                                      f"the HTML cannot be parsed ({exc})", "fix the markup"))
        return
    stopped = _parser_messages(page, parser.error_log, offset)
    if not page.front_matter.get("title"):
        page.title = _clean(" ".join(root.xpath("//title//text() | (//h1)[1]//text()")))
    seen: dict[str, int] = {}
    box_lines: list[int] = []
    counted = [0, 0]  # knowledge ids, box class names: what the cheap lost-box check compares
    anchored = set()  # every element with a knowledge id: sections leave their text to them
    for node in root.iter():
        if not isinstance(node.tag, str):
            continue
        node_id = node.get("id") or ""
        boxes = [c for c in (node.get("class") or "").split() if c in box_classes]
        line = (node.sourceline or 1) + offset
        if boxes or KNOWLEDGE_ID.match(node_id):
            box_lines.append(line)
            counted[0] += bool(KNOWLEDGE_ID.match(node_id))
            counted[1] += len(boxes)
        if KNOWLEDGE_ID.match(node_id):
            anchored.add(node)
            element = _element(page, node, node_id, line, boxes)
            if node_id in seen:
                page.diagnostics.append(_diag(page, line, 1, "error", "duplicate-id",
                                              f"id '{node_id}' is used twice in this page (first at line {seen[node_id]})",
                                              "give one of the two boxes another id; links would jump to the first"))
                continue
            seen[node_id] = line
            if element is not None:
                page.elements.append(element)
        elif boxes:
            page.unanchored.append(UnanchoredBox(boxes[0], _title(node), line, node_id or None))
    if not stopped:
        _report_lost_boxes(page, body, offset, box_classes, box_lines, counted)
    if parts_of:
        page.parts = _parts(page, root, anchored, offset, body, source=parts_of == "source")


_LIQUID = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)
_RAW = re.compile(r"\{%-?\s*(end)?raw\s*-?%\}")
_RAW_BLOCK = re.compile(r"\{%-?\s*raw\s*-?%\}.*?\{%-?\s*endraw\s*-?%\}", re.DOTALL)


def _parts(page: Page, root, anchored: set, offset: int, body: str, source: bool) -> list:
    """The page's section and table parts. Liquid in a Jekyll source page's text ({{ site.x }},
    {% for %}) is template code: what a reader sees exists only after Jekyll renders it, so such a
    page has no parts from its source (an info says so). Liquid in attributes (href="{{ … }}") does
    not change the text; `{% raw %}` markers are taken out."""
    from ..html.section_memory import page_parts_remembered
    from ..html.sections import page_parts

    if source and ("{{" in body or "{%" in body) and _liquid_in_text(root):
        page.diagnostics.append(_diag(page, offset + 1, 1, "info", "sections-need-render",
                                      "the page uses Liquid ({{ … }}, {% … %}), so its text is known only after "
                                      "Jekyll renders it; its sections are not indexed from the source",
                                      "index the rendered site (--site _site) to include them"))
        return []
    if source and "{%" in body:
        _drop_raw_markers(root)
    try:
        return page_parts_remembered(body, offset, source,
                                     lambda: page_parts(root, anchored=anchored, line_offset=offset))
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
            page.diagnostics.append(_diag(page, line, entry.column + 1, "error", "html-truncated",
                                          f"the HTML parser stopped at line {line} ({entry.message.strip()}); "
                                          "boxes after it are not indexed",
                                          "nest elements less deeply (at most about 2,000 levels) or split the page"))
            return True
        if entry.level_name == "ERROR" and not _BENIGN_PARSER_MESSAGES.search(entry.message):
            page.diagnostics.append(_diag(page, line, entry.column + 1, "warning",
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
        page.diagnostics.append(_diag(page, line, tag.col, "error", "html-lost",
                                      f"{name} is not in the parsed page (the HTML parser dropped it), "
                                      "so it is not indexed",
                                      "move it inside <body> and check the markup before it"))


def _element(page: Page, node, node_id: str, line: int, boxes: list[str]) -> KnowledgeElement | None:
    text = _strip_emoji(_text(node))
    if not text:
        page.diagnostics.append(_diag(page, line, 1, "warning", "empty-box",
                                      f"knowledge element '{node_id}' has no text and is left out of the index",
                                      "write its content or remove the id"))
        return None
    heading = _title(node)
    label, title = display_title(heading)
    if not heading:
        title = readable(text[:30])
        page.diagnostics.append(_diag(page, line, 1, "info", "no-title",
                                      f"knowledge element '{node_id}' has no <strong> or heading; its title is taken from its text",
                                      "start the box with <strong>Title</strong>"))
    inside = list(_descendants(node))
    items = tuple(_clean(_text(li)) for li in inside if li.tag == "li")
    bold = [_strip_emoji(_text(b)).strip(" ：:") for b in inside if b.tag in ("strong", "b")]
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
    )


def display_title(heading: str) -> tuple[str, str]:
    """(label, title) of a box heading: the number label taken off (「ルール3：」 names no concept)
    and inline TeX rendered readably (\\(b\\) -> b). A heading that is only a label keeps it as
    its title."""
    label, rest = split_label(heading)
    return label, readable(rest or heading)


def _descendants(node):
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


def _title(node) -> str:
    for child in _descendants(node):
        classes = child.get("class") or ""
        if child.tag in _HEADINGS or child.tag in ("strong", "b") or "title" in classes:
            title = _strip_emoji(_text(child, skip_class="badge"))
            title = title.strip(" ：:")
            if title:
                return title
    return ""


def _text(node, skip_class: str = "") -> str:
    parts: list[str] = []
    _collect(node, parts, skip_class)
    return _clean("".join(parts))


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


def _clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _strip_emoji(text: str) -> str:
    return _clean(_EMOJI.sub("", text))
