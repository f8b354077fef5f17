"""Semantic anchor ids: the id rules, suggestions for boxes without one, and byte-exact
write-back of the `id="…"` attribute.

Positions come from the standard library's HTMLParser, which reports the line and column of
every start tag in the original text; the box titles come from the scan (lxml). The two are
paired in document order, and a page where they disagree is refused rather than guessed.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

from .artifacts import atomic_write
from .diagnostics import Diagnostic
from .errors import ConfigError, KnowledgeBuildError
from .kinds import ALLOWED_PREFIXES, BY_TYPE, CLASS_PREFIX, KNOWLEDGE_ID, LABEL_PREFIX, PREFIXES, TITLE_WORD_ORDER
from .scan import Page
from .tex import without_math
from .text_ja import split_label, strip_label
from .yamlfile import load as load_yaml
from .yamlfile import load_file as load_yaml_file

# Title words that name the kind of box, checked in this order.
_TITLE_PREFIX = tuple((BY_TYPE[t].prefix, BY_TYPE[t].words) for t in TITLE_WORD_ORDER)
MAX_SLUG_WORDS = 4
MAX_SLUG_CHARS = 40


class FileChanged(KnowledgeBuildError):
    def __init__(self, path):
        super().__init__(f"{path} changed since it was read; nothing was written to it. "
                         "Run 'knowledge-build suggest-ids --write' again.")


class PageNotWritable(KnowledgeBuildError):
    def __init__(self, path, reason, written_before: int):
        done = f" ({written_before} other file(s) were already updated)" if written_before else ""
        super().__init__(f"{path}: cannot write the ids ({reason}); the file is unchanged{done}. Fix: make the "
                         "file and its directory writable (the file is replaced via a temporary file beside it).")


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


def load_glossary(extra: Path | None = None) -> dict[str, str]:
    text = resources.files("knowledge_build.data").joinpath("glossary.yml").read_text(encoding="utf-8")
    glossary = dict(load_yaml(text, "glossary.yml").data)
    if extra is not None:
        doc = load_yaml_file(extra)
        if not isinstance(doc.data or {}, dict):
            raise ConfigError(f"{extra}:{doc.line()}: the glossary must map terms to slugs. "
                              "Fix: write it as 'term: slug' lines.")
        glossary.update(doc.data or {})
    return {unicodedata.normalize("NFKC", str(k)): _slugify_ascii(str(v)) for k, v in glossary.items()}


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


def slug_for(title: str, glossary: dict[str, str], topic: str = "") -> str:
    """An ASCII slug from the title: glossary terms in English, other nouns romanised, in title
    order; never TeX. A title with no words of its own (「練習1」) takes the words of `topic`
    (the page's title) and keeps its number: a slug is never a bare number."""
    text = unicodedata.normalize("NFKC", title)
    words = _slug_words(without_math(strip_label(text)), glossary)
    if not words or all(w.isdigit() for w in words):
        number = "-".join(re.findall(r"[0-9]+", text))
        words = _slug_words(without_math(strip_label(unicodedata.normalize("NFKC", topic))), glossary)
        head = _limit("-".join([w for w in words if not w.isdigit()][:MAX_SLUG_WORDS - 1]), len(number) + 1)
        return "-".join(w for w in (head, number) if w)
    return _limit("-".join(words))


def _slug_words(text: str, glossary: dict[str, str]) -> list[str]:
    text = text.replace("\\", " ").strip()
    if not text:
        return []
    spans = list(_segments(text, glossary))
    for nouns_only in (True, False):  # verbs only when the title has no noun at all
        # Words are read in the context of the whole title (正 of 正多角形 is sei, not tadashi),
        # then each takes its place among the glossary terms.
        context = romanized_words(text, nouns_only)
        pieces: list[str] = []
        for is_term, value, start, end in spans:
            words = [value] if is_term else [w for w, at in context if start <= at < end]
            for word in words:
                if word not in pieces:
                    pieces.append(word)
        if pieces:
            return pieces[:MAX_SLUG_WORDS]
    return []


def _segments(text: str, glossary: dict[str, str]):
    """Split text into glossary slugs (True, slug, start, end) and the stretches between them
    (False, "", start, end)."""
    longest = max((len(k) for k in glossary), default=0)
    i = start = 0
    while i < len(text):
        for size in range(min(longest, len(text) - i), 0, -1):
            slug = glossary.get(text[i:i + size])
            if slug:
                if text[start:i].strip():
                    yield False, "", start, i
                yield True, slug, i, i + size
                i = start = i + size
                break
        else:
            i += 1
    if text[start:].strip():
        yield False, "", start, len(text)


# Words that say what kind of box it is; the prefix already says so.
_KIND_WORDS = {"コツ", "ポイント", "注意", "まとめ"}


def romanized_words(text: str, nouns_only: bool = True) -> list[tuple[str, int]]:
    """(romaji, offset) of the nouns (or all content words) of a Japanese text, romanised from
    their reading in context (Hepburn, long vowels dropped)."""
    import jaconv

    from .text_ja import content_words

    words = []
    for surface, kana, at in content_words(text, nouns_only):
        if surface in _KIND_WORDS:
            continue
        romaji = jaconv.kata2alphabet(jaconv.hira2kata(kana)).replace("-", "")  # ー is a long vowel
        romaji = re.sub(r"ou|oo", "o", _slugify_ascii(romaji)).replace("uu", "u")
        if romaji:
            words.append((romaji, at))
    return words


def _slugify_ascii(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _limit(slug: str, room: int = 0) -> str:
    """At most MAX_SLUG_CHARS - room characters, cut at a hyphen when there is one."""
    size = MAX_SLUG_CHARS - room
    if len(slug) <= size:
        return slug
    return slug[:size].rsplit("-", 1)[0] or slug[:size]


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
