"""The types every stage hands on: `Chunk` (the chunk contract, and the text of it that is embedded)
and `Part` (a section or table of a page, before it is a chunk). Below every other module, so the
index and search sides can name them without importing the scanner."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .kinds import learns_templates
from .ranking.facets import FACET_FILTERS

_TITLE_SUFFIX = re.compile(r"(とは|について|の定義)$")
# The fields of a chunk that are its page's facets (site/facets.py), written only when the site has them: THE
# facets of ranking/facets.py.
FACET_FIELDS = FACET_FILTERS


@dataclass(frozen=True)
class Chunk:
    id: str
    material: str
    anchor: str
    url: str
    title: str
    content: str
    excerpt: str
    learns: tuple[str, ...]
    learns_source: str  # yaml | attribute | generated | heuristic
    type: str
    category: str
    level: str
    prerequisites: tuple[str, ...]
    content_hash: str
    material_title: str = ""
    line: int = 0
    source_path: str = ""
    label: str = ""  # the box's number label (「コツ2」「練習1」) taken off its title
    parents: tuple[str, ...] = ()  # sections and tables: the enclosing headings (breadcrumb), outermost first
    version: str = ""  # the site version its page belongs to (site/facets.py); "" when the site has one
    language: str = ""  # its page's language when the site has several (site/facets.py); "" otherwise
    # A box whose answer is marked (html/box_text.answer_parts): its text outside the answer, and inside; "" otherwise.
    problem: str = ""
    solution: str = ""

    def to_dict(self) -> dict:
        # Every field is a str, int or tuple of str, so a shallow copy is enough; asdict's recursive
        # copy cost 25 ms of CPU on each rebuild of the reference corpus.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["learns"] = list(self.learns)
        data["prerequisites"] = list(self.prerequisites)
        if self.parents:
            data["parents"] = list(self.parents)
        else:
            del data["parents"]  # optional: a box's JSON is what it was before sections existed
        for facet in (*FACET_FIELDS, "problem", "solution"):  # optional: written only when the chunk has them
            if not data[facet]:
                del data[facet]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Chunk":
        values = dict(data)
        values["learns"] = tuple(values.get("learns") or ())
        values["prerequisites"] = tuple(values.get("prerequisites") or ())
        values["parents"] = tuple(values.get("parents") or ())
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in values.items() if k in known})

    @property
    def embed_text(self) -> str:
        return embed_text(self.title, self.embedded_learns, retrieval_content(self.content), self.material_title,
                          self.parents)

    @property
    def lexical_text(self) -> str:
        """What the lexical channel analyses: page title, headings and box title, learns, content
        (text/ja.py, analyze_box); learns as shown, template lines included: on JSQuAD they were
        BM25's only repetition of the title, see docs/retrieval.md."""
        from .text.ja import box_text

        return box_text(self.material_title, " ".join((*self.parents, self.title)),
                        f"{' '.join(self.learns)}\n{retrieval_content(self.content)}")

    @property
    def embedded_learns(self) -> tuple[str, ...]:
        """The learns the passage embedding sees (a heuristic box's template lines are shown, not embedded)."""
        return embedded_learns(self.learns, self.learns_source, self.type, self.title)


def embed_text(title: str, learns, content: str, material_title: str = "", parents=()) -> str:
    """What the passage embedding sees: title (after the page title and, for a section, its
    breadcrumb), what it teaches (when it says anything), then the text."""
    title = " > ".join((*parents, title))
    head = f"{material_title}: {title}" if material_title else title
    return "\n".join([head, *([" / ".join(learns)] if learns else []), content])


# A table chunk shows a row of context either side of its own rows; those lines start with this
# mark and are left out of what the channels read, so the chunk whose own row holds a cell ranks
# first, not its neighbours (tables.py, ROW_CONTEXT).
CONTEXT_MARK = "(context) "


def retrieval_content(content: str) -> str:
    """The content the embedding and the lexical channel read: without marked context rows."""
    if CONTEXT_MARK not in content:
        return content
    return "\n".join(line for line in content.split("\n") if not line.startswith(CONTEXT_MARK))


def embedded_learns(learns, source: str, type_: str, title: str) -> tuple[str, ...]:
    """The learns that go into the embedded text: all of them, except heuristic template lines,
    which repeat the title with words every chunk shares (理解する, 問題を解く)."""
    learns = tuple(learns)
    if source == "heuristic" and learns == template_learns(type_, title):
        return ()
    return learns


def template_learns(type_: str, title: str) -> tuple[str, ...]:
    """The kind's template lines for a box with nothing more specific to offer."""
    topic = topic_of(title)
    return tuple(template.format(topic=topic) for template in learns_templates(type_))


def topic_of(title: str) -> str:
    return _TITLE_SUFFIX.sub("", title).strip() or title


@dataclass(frozen=True)
class Part:
    kind: str  # "section" or "table"
    heading: str  # the heading's text ("" for text before the first heading)
    parents: tuple[str, ...]  # enclosing headings, outermost first (breadcrumb)
    level: int  # 1..6 (0 before the first heading)
    text: str  # section: its text outside anchored boxes; table: header + rows (+ context rows)
    fragment: str  # an id or :~:text=… ("" for text before the first heading: the page's top)
    key: str  # stable id part: slug of the heading path (+ "-2"… on collision; tables "-t1", rows "-r3-5")
    line: int  # source line of the heading (or table)
    has_anchored_box: bool  # the section contains an anchored knowledge box
    header: tuple[str, ...] = ()  # tables: the header cells
    rows: tuple[int, int] = (0, 0)  # tables: first/last data row (1-based) this part holds
    core: str = ""  # tables: `text` without the context rows (caption, header, the part's own rows)
    problem: str = ""  # sections with an exercise's answer (sections._exercise): the lines outside it
    solution: str = ""  # ... and the answer's lines


EXCERPT_CHARS = 100


def excerpt(content: str, title: str = "") -> str:
    """About EXCERPT_CHARS characters of the content after its title, cut at a sentence end if one is near."""
    at = content.find(title) if title else -1
    text = content[at + len(title):].lstrip(" ：:") if 0 <= at <= 4 else content
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = text[:EXCERPT_CHARS]
    end = max(cut.rfind("。"), cut.rfind("．"))
    if end >= EXCERPT_CHARS * 0.6:
        return cut[: end + 1]
    return cut.rstrip() + "…"
