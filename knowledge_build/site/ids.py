"""Semantic anchor ids: the id rules, suggestions for boxes without one, and byte-exact
write-back of the `id="…"` attribute.

Positions come from the standard library's HTMLParser (tags.py), which reports the line and column of
every start tag in the original text; the box titles come from the scan (lxml). The two are
paired in document order, and a page where they disagree is refused rather than guessed.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import Diagnostic
from ..errors import KnowledgeBuildError
from ..fsutil import atomic_write
from ..html.tags import Tag, box_class, locate_tags
from ..kinds import ALLOWED_PREFIXES, BY_TYPE, CLASS_PREFIX, KNOWLEDGE_ID, LABEL_PREFIX, PREFIXES, TITLE_WORD_ORDER
from ..text.ja import split_label
from ..text.slugs import slug_for
from .page import Page

# Title words that name the kind of box, checked in this order.
_TITLE_PREFIX = tuple((BY_TYPE[t].prefix, BY_TYPE[t].words) for t in TITLE_WORD_ORDER)


class FileChanged(KnowledgeBuildError):
    def __init__(self, path):
        super().__init__(f"{path} changed since it was read; nothing was written to it. "
                         "Run 'knowledge-build suggest-ids --write' again.")


class PageNotWritable(KnowledgeBuildError):
    def __init__(self, path, reason, written_before: int):
        done = f" ({written_before} other file(s) were already updated)" if written_before else ""
        super().__init__(f"{path}: cannot write the ids ({reason}); the file is unchanged{done}. Fix: make the "
                         "file and its directory writable (the file is replaced via a temporary file beside it).")


# --- suggestions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    path: Path
    line: int
    col: int
    offset: int  # where ` id="…"` goes: just after the tag name
    box_class: str
    title: str
    id: str
    reason: str
    existing_id: str = ""  # a non-knowledge id the box already has: renamed by hand, never rewritten

    @property
    def writable(self) -> bool:
        return not self.existing_id

    def to_dict(self) -> dict:
        return {"path": str(self.path), "line": self.line, "col": self.col, "box_class": self.box_class,
                "title": self.title, "id": self.id, "reason": self.reason, "existing_id": self.existing_id}


@dataclass
class PagePlan:
    path: Path
    sha256: str
    suggestions: list[Suggestion] = field(default_factory=list)
    refused: Diagnostic | None = None  # why no ids can be written to this page (nothing is planned)


def choose_prefix(box: str, title: str) -> tuple[str, str]:
    """The id prefix for a box, and why."""
    label = split_label(unicodedata.normalize("NFKC", title))[0]
    word = next((w for w in LABEL_PREFIX if label.startswith(w)), None)
    if word:  # 「練習1」 is a practice problem, whatever box the site put it in
        return LABEL_PREFIX[word], f"{LABEL_PREFIX[word]}- from the label 「{label}」"
    allowed = ALLOWED_PREFIXES.get(box, PREFIXES)
    for prefix, words in _TITLE_PREFIX:
        word = next((w for w in words if w in title), None)
        if word and prefix in allowed:
            return prefix, f"{prefix}- from the title word 「{word}」"
    if box in CLASS_PREFIX:
        return CLASS_PREFIX[box], f"{CLASS_PREFIX[box]}- from the box class {box}"
    return "rule", "rule- by default (no box class or title word says otherwise)"


def plan_page(page: Page, box_classes, glossary: dict[str, str]) -> PagePlan:
    """Suggestions for every box of the page that has no knowledge id.

    A page whose boxes cannot be tied to their exact start tags is refused (`plan.refused`),
    never guessed: ids would land on the wrong box.
    """
    if page.unreadable:
        first = next((d for d in page.diagnostics if d.severity == "error"), None)
        return PagePlan(page.path, "", refused=first or _refusal(page, 1, 1, "page-unreadable",
                                                                 "the page cannot be read", "fix the file"))
    raw = page.path.read_bytes()
    plan = PagePlan(page.path, hashlib.sha256(raw).hexdigest())
    if not page.unanchored:
        return plan
    tags = locate_tags(raw.decode("utf-8"))
    ambiguous = next((t for t in tags if {"id", "class"} & set(t.repeated)), None)
    if ambiguous is not None:
        plan.refused = duplicate_attribute(page.path, ambiguous)
        return plan
    boxes = [t for t in tags if box_class(t, box_classes) and not KNOWLEDGE_ID.match(t.id)]
    lines = [b.end_line for b in boxes]
    if lines != [box.line for box in page.unanchored]:
        line = next((b.line for b, u in zip(boxes, page.unanchored) if b.end_line != u.line), 1)
        plan.refused = _refusal(page, line, 1, "boxes-not-located",
                                f"found {len(boxes)} box start tags without an id where the page scan found "
                                f"{len(page.unanchored)} (or at other lines); no ids are written to this page",
                                "add the ids by hand, or correct the markup near this line")
        return plan
    taken = {t.id for t in tags if t.id}
    for tag, box in zip(boxes, page.unanchored):
        prefix, reason = choose_prefix(box.box_class, box.title)
        slug = slug_for(box.title, glossary, page.title) or "box"
        new_id = _unique(f"{prefix}-{slug}", taken)
        taken.add(new_id)
        plan.suggestions.append(Suggestion(page.path, tag.line, tag.col, tag.offset + 1 + len(tag.name),
                                           box.box_class, box.title, new_id, reason, tag.id))
    return plan


def duplicate_attribute(path: Path, tag: Tag) -> Diagnostic:
    name = next(a for a in ("class", "id") if a in tag.repeated)
    return Diagnostic(str(path), tag.line, tag.col, "error", "duplicate-attribute",
                      f"<{tag.name}> has more than one {name} attribute; browsers use the first "
                      f"({name}=\"{tag.attrs[name]}\") and the id tools refuse to guess",
                      f"merge them into one {name} attribute")


def _refusal(page: Page, line: int, col: int, rule: str, message: str, fix: str) -> Diagnostic:
    return Diagnostic(str(page.path), line, col, "error", rule, message, fix)


def _unique(candidate: str, taken: set[str]) -> str:
    if candidate not in taken:
        return candidate
    n = 2
    while f"{candidate}-{n}" in taken:
        n += 1
    return f"{candidate}-{n}"


def write_plan(plan: PagePlan, written_before: int = 0) -> int:
    """Insert the planned ids; every other byte stays. Refuses a file changed since planning.

    Boxes that already have a (non-knowledge) id are skipped: a second id attribute would be
    invalid HTML and replacing the old one would break links to it. A page that is a symlink
    keeps being one: the ids go into the file it points to.
    """
    todo = [s for s in plan.suggestions if s.writable]
    if not todo or plan.refused is not None:
        return 0
    target = plan.path.resolve()
    try:
        raw = target.read_bytes()
    except OSError:
        raise FileChanged(plan.path) from None
    if hashlib.sha256(raw).hexdigest() != plan.sha256:
        raise FileChanged(plan.path)
    text = raw.decode("utf-8")
    for s in sorted(todo, key=lambda s: s.offset, reverse=True):
        text = text[:s.offset] + f' id="{s.id}"' + text[s.offset:]
    try:
        atomic_write(target, text.encode("utf-8"))
    except OSError as exc:
        raise PageNotWritable(plan.path, exc.strerror or exc, written_before) from None
    return len(todo)


def check_writable(plans: list[PagePlan]) -> None:
    """Refuse before writing anything when a file to change, or its directory, is read-only."""
    for plan in plans:
        if plan.refused is None and any(s.writable for s in plan.suggestions):
            target = plan.path.resolve()
            for where in (target, target.parent):
                if not os.access(where, os.W_OK):
                    raise PageNotWritable(plan.path, f"{where} is read-only", 0)
