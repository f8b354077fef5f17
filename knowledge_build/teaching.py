"""What a tutor teaches with, over a set's chunks (issue 42, item 4): a site's or a page's outline, and the learning
path of a page (its prerequisites, transitively, in an order a student can follow, then what builds on it).

Both read only the chunks: `material` (a page's name, its file's stem), `line` (where the chunk starts in the page's
source), `parents` (a section's or a table's enclosing headings) and `prerequisites` (the names of the pages the page's
front matter lists under `related` with `type: prerequisite`; README, "How a site is read").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .kinds import ANCHORED_TYPES


def page_url(url: str) -> str:
    """A chunk's link without its fragment: the page it is on."""
    return url.split("#", 1)[0]


def _pages(chunks) -> dict[str, list]:
    """Chunks by page, each page's in the order they come in it (its source's lines, then ids); pages by name."""
    pages: dict[str, list] = {}
    for chunk in chunks:
        pages.setdefault(chunk.material, []).append(chunk)
    return {name: sorted(pages[name], key=lambda c: (c.line, c.id)) for name in sorted(pages)}


def _entry(chunk) -> dict:
    return {"id": chunk.id, "title": chunk.title, "type": chunk.type, "level": chunk.level, "url": chunk.url,
            "line": chunk.line}


def outline(chunks, material: str | None = None) -> list[dict]:
    """Pages → sections → boxes and tables, in page order: per page its name, title, link and `items`; a section
    holds the items that follow it until the next section of its depth or above (its depth: how many headings
    enclose it), each item its id, title, type, level, link and line. `material`: that page only (KeyError when the
    set has no such page)."""
    pages = _pages(chunks)
    if material is not None:
        if material not in pages:
            raise KeyError(material)
        pages = {material: pages[material]}
    out = []
    for name, items in pages.items():
        page = {"material": name, "title": items[0].material_title, "url": page_url(items[0].url), "items": []}
        stack: list[tuple[int, dict]] = []  # open sections: (depth, entry)
        for chunk in items:
            entry = _entry(chunk)
            if chunk.type == "section":
                depth = len(chunk.parents)
                while stack and stack[-1][0] >= depth:
                    stack.pop()
                entry["items"] = []
                (stack[-1][1]["items"] if stack else page["items"]).append(entry)
                stack.append((depth, entry))
            else:
                (stack[-1][1]["items"] if stack else page["items"]).append(entry)
        out.append(page)
    return out


@dataclass
class LearningPath:
    """A page's learning path. `before`: its prerequisites, transitively, each after its own (a student can follow
    them in this order); `page`: the page itself; `after`: the pages that list it as a prerequisite, transitively, in
    the same order; `missing`: prerequisites named that are no page of the set, with the page naming them; `cycles`:
    each loop of prerequisites met, as the pages around it (the walk does not go round them again)."""

    page: dict
    before: list[dict] = field(default_factory=list)
    after: list[dict] = field(default_factory=list)
    missing: list[dict] = field(default_factory=list)
    cycles: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"page": self.page, "before": self.before, "after": self.after, "missing": self.missing,
                "cycles": self.cycles}


def learning_path(chunks, target: str) -> LearningPath:
    """The learning path of the page `target` names: a page's name, or a chunk's id (its page). KeyError when it
    names neither."""
    pages = _pages(chunks)
    by_id = {c.id: c.material for c in chunks}
    name = target if target in pages else by_id.get(target)
    if name is None:
        raise KeyError(target)
    needs = {n: sorted({p for c in items for p in c.prerequisites}) for n, items in pages.items()}
    used_by: dict[str, list[str]] = {n: [] for n in pages}
    for n, prerequisites in needs.items():
        for p in prerequisites:
            if p in used_by:
                used_by[p].append(n)
    missing: list[dict] = []
    cycles: list[list[str]] = []

    def walk(start: str, edges: dict[str, list[str]], report_missing: bool) -> list[str]:
        """Every page reachable from `start` along `edges`, each after those it reaches (post-order), `start` left out."""
        order: list[str] = []
        state: dict[str, int] = {}  # 1: on the walk's path, 2: done
        path: list[str] = []

        def visit(n: str) -> None:
            state[n] = 1
            path.append(n)
            for m in edges.get(n, []):
                if m not in pages:
                    if report_missing and {"page": n, "prerequisite": m} not in missing:
                        missing.append({"page": n, "prerequisite": m})
                    continue
                if state.get(m) == 1:  # a loop: the pages from m round to n
                    loop = path[path.index(m):]
                    if sorted(loop) not in [sorted(c) for c in cycles]:
                        cycles.append(loop)
                elif m not in state:
                    visit(m)
            path.pop()
            state[n] = 2
            order.append(n)

        visit(start)
        return [n for n in order if n != start]

    before = walk(name, needs, True)
    after = walk(name, used_by, False)[::-1]  # reversed: a page before those that build on it
    after = [n for n in after if n not in before]

    def describe(n: str) -> dict:
        first = pages[n][0]
        return {"material": n, "title": first.material_title, "url": page_url(first.url),
                "level": next((c.level for c in pages[n] if c.level), ""),
                "prerequisites": [p for p in needs[n]],
                "boxes": [c.id for c in pages[n] if c.type in ANCHORED_TYPES]}

    return LearningPath(describe(name), [describe(n) for n in before], [describe(n) for n in after], missing, cycles)
