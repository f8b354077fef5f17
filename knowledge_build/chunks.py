"""`Page` -> `Chunk`: every field of the chunk contract is decided here.

learns resolution (yaml > attribute > heuristic), excerpt, URL, the text that is embedded
and its content_hash.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .diagnostics import Diagnostic
from .kinds import LEVELS, learns_templates
from .learns_gen import source_hash
from .scan import KnowledgeElement, Page
from .site import Site

EXCERPT_CHARS = 100
# Bump when the embedded text recipe changes: every vector is then recomputed.
EMBED_TEXT_VERSION = "1"


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

    def to_dict(self) -> dict:
        # Every field is a str, int or tuple of str, so a shallow copy is enough; asdict's recursive
        # copy cost 25 ms of CPU on each rebuild of the reference corpus.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["learns"] = list(self.learns)
        data["prerequisites"] = list(self.prerequisites)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Chunk":
        values = dict(data)
        values["learns"] = tuple(values.get("learns") or ())
        values["prerequisites"] = tuple(values.get("prerequisites") or ())
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in values.items() if k in known})

    @property
    def embed_text(self) -> str:
        return embed_text(self.title, self.learns, self.content, self.material_title)


def embed_text(title: str, learns, content: str, material_title: str = "") -> str:
    """What the passage embedding sees: title, what it teaches, then the text."""
    head = f"{material_title}: {title}" if material_title else title
    return "\n".join([head, " / ".join(learns), content])


@dataclass
class ChunkSet:
    chunks: list[Chunk] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


def make_chunks(site: Site, pages: list[Page]) -> ChunkSet:
    result = ChunkSet()
    where: dict[str, str] = {}
    for page in pages:
        if page.elements and page.material in where:
            result.diagnostics.append(Diagnostic(
                str(page.path), 1, 1, "error", "duplicate-material",
                f"material name '{page.material}' is also used by {where[page.material]}; "
                "chunk ids (material#anchor) would collide", "rename one of the two files"))
            continue
        if page.elements:
            where[page.material] = page.rel
        meta = _page_meta(site, page, result.diagnostics)
        for element in page.elements:
            result.chunks.append(_chunk(site, page, element, meta))
    result.chunks.sort(key=lambda c: c.id)
    return result


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


def _chunk(site: Site, page: Page, element: KnowledgeElement, meta: dict) -> Chunk:
    learns, source = resolve_learns(site, page, element)
    content = element.text
    return Chunk(
        id=f"{page.material}#{element.id}",
        material=page.material,
        anchor=element.id,
        url=f"{site.baseurl}{page.url_path}#{element.id}",
        title=element.title,
        content=content,
        excerpt=excerpt(content, element.heading or element.title),
        learns=learns,
        learns_source=source,
        type=element.type,
        category=meta["category"],
        level=meta["level"],
        prerequisites=meta["prerequisites"],
        content_hash=content_hash(embed_text(element.title, learns, content, meta["title"])),
        material_title=meta["title"],
        line=element.line,
        source_path=page.rel,
        label=element.label,
    )


def content_hash(text: str) -> str:
    return hashlib.sha256(f"v{EMBED_TEXT_VERSION}\n{text}".encode("utf-8")).hexdigest()


def resolve_learns(site: Site, page: Page, element: KnowledgeElement) -> tuple[tuple[str, ...], str]:
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
    return heuristic_learns(element), "heuristic"


_TITLE_SUFFIX = re.compile(r"(とは|について|の定義)$")


def heuristic_learns(element: KnowledgeElement) -> tuple[str, ...]:
    """3–5 action-oriented items from the title, the type and the box's own list items."""
    topic = _TITLE_SUFFIX.sub("", element.title).strip() or element.title
    items = [template.format(topic=topic) for template in learns_templates(element.type)]
    # The box's own list items say best what it teaches; long ones would be cut mid-formula.
    for item in element.list_items:
        if len(item) <= 40 and item not in items:
            items.append(item)
        if len(items) == 4:
            break
    if len(items) < 3:
        items.append(f"「{topic}」を自分の言葉で説明する")
    return tuple(items[:5])


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
