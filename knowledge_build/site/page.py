"""A page of the site as the scan sees it (`Page`, its `KnowledgeElement`s and the boxes with no id),
and reading its file: every problem a `Diagnostic` on the page, never an exception."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import Diagnostic
from ..readfile import UnreadableFile, read_regular_file


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
    fragment: str | None = None  # the link's #fragment when it is not the id ("" none: the page itself)
    problem: str = ""  # with an answer marked in the box (html/box_text.answer_parts): the text outside it
    solution: str = ""  # and the answer's text


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
    material: str  # the page's name in chunk ids (identity.py): its file stem, or its path
    url_path: str  # permalink without baseurl
    title: str = ""
    front_matter: dict = field(default_factory=dict)
    has_front_matter: bool = False
    elements: list[KnowledgeElement] = field(default_factory=list)
    unanchored: list[UnanchoredBox] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unreadable: bool = False  # the file could not be read or decoded: nothing else is known
    parts: list = field(default_factory=list)  # sections.Part: every section and table (`sections` not off)
    redirect: bool = False  # a <meta http-equiv="refresh"> stub that sends the reader elsewhere
    lang: str = ""  # <html lang>'s primary subtag ("ja", "en"), "" when the page does not say; "ja" when its text is (written_in_japanese)
    breadcrumbs: tuple[str, ...] = ()  # a built page's breadcrumb trail, the page itself left out
    skip_reason: str = ""  # why the scan read nothing of the page although it could (an untitled fragment)
    left_out: dict[str, int] = field(default_factory=dict)  # why -> how many: what was matched but not indexed


def page_diagnostic(page, line, col, severity, rule, message, fix="") -> Diagnostic:
    return Diagnostic(str(page.path), line, col, severity, rule, message, fix)


def read_page_text(page: Page) -> str | None:
    try:
        raw = read_regular_file(page.path)
    except UnreadableFile as exc:
        page.unreadable = True
        page.diagnostics.append(page_diagnostic(page, 1, 1, "error", "page-unreadable",
                                      f"the page cannot be read ({exc.reason})", exc.fix))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        page.diagnostics.append(page_diagnostic(page, line, col, "error", "invalid-utf8",
                                      f"invalid UTF-8 byte 0x{raw[exc.start]:02x}",
                                      "re-save the file as UTF-8 (Jekyll's encoding is UTF-8)"))
        page.unreadable = True
        return None
    return text.removeprefix("\ufeff")
