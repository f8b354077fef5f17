"""Pages -> chunks one page at a time, so a build need not hold every scanned page.

Two rules of chunks.py look at the whole site, and this module keeps only the small pieces they need
instead of the pages:
- A box's heuristic learns leave out the bold words many boxes share (`labels_of`), known only
  after the last page: such boxes wait as their `KnowledgeElement` (whose text becomes the chunk's
  content, so waiting costs about what the chunk will) and become chunks in `finish()`.
- A file name (material) belongs to the first page with boxes, wherever it is, else to the first page
  with sections (`_duplicate_material`): a page of sections only waits with its chunks until a page
  with boxes claims its name (it then loses, with the warning at its place) or the site ends.
Diagnostics come out in page order, as if the pages had been read twice; `make_chunks(pages)` is
this module over a list, so both ways give the same chunks byte for byte.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from ..site.jekyll import Site
from ..site.page import Page
from .chunks import (
    ChunkSet,
    _chunk,
    _duplicate_material,
    _page_meta,
    labels_of,
    part_chunk,
    resolve_learns,
    wanted_parts,
)


@dataclass
class _Waiting:
    """A page of sections only whose material no page with boxes has claimed yet."""

    order: int
    page: Page  # slim: what chunks and diagnostics name (no elements, parts or front matter)
    chunks: list
    diagnostics: list  # its own (unknown level): dropped with its chunks if it loses its name


@dataclass
class ChunkMaker:
    site: Site
    sections: str = "off"
    _chunks: list = field(default_factory=list)
    _diagnostics: list = field(default_factory=list)  # (page order, diagnostic)
    _bold: Counter = field(default_factory=Counter)
    _heuristic: list = field(default_factory=list)  # (slim page, meta, element): chunks once labels are known
    _box_owner: dict = field(default_factory=dict)  # material -> rel of the first page with boxes
    _waiting: dict = field(default_factory=dict)  # material -> [_Waiting] in page order
    _order: int = 0

    def add(self, page: Page) -> None:
        """Take the page's chunks (or what they need later); the page itself is not kept."""
        order, self._order = self._order, self._order + 1
        self._bold.update(term for element in page.elements for term in element.bold_terms)
        parts = wanted_parts(page.parts, self.sections)
        if page.elements:
            if page.material in self._box_owner:
                self._diagnostics.append((order, _duplicate_material(page, self._box_owner[page.material])))
                return
            self._box_owner[page.material] = page.rel
            self._lose_waiting(page.material, page.rel)
        elif parts and page.material in self._box_owner:
            self._diagnostics.append((order, _duplicate_material(page, self._box_owner[page.material])))
            return
        own: list = []
        meta = _page_meta(self.site, page, own)
        slim = _slim(page)
        chunks = [part_chunk(self.site, slim, part, meta) for part in parts]
        if page.elements or not parts:
            self._diagnostics += [(order, d) for d in own]
            self._chunks += chunks
            self._add_boxes(slim, meta, page.elements)
        else:
            self._waiting.setdefault(page.material, []).append(_Waiting(order, slim, chunks, own))

    def _add_boxes(self, page: Page, meta: dict, elements) -> None:
        for element in elements:
            _, source = resolve_learns(self.site, page, element)
            if source == "heuristic":  # the only learns that depend on the labels
                self._heuristic.append((page, meta, element))
            else:
                self._chunks.append(_chunk(self.site, page, element, meta, frozenset()))

    def _lose_waiting(self, material: str, owner_rel: str) -> None:
        for waiting in self._waiting.pop(material, ()):
            self._diagnostics.append((waiting.order, _duplicate_material(waiting.page, owner_rel)))

    def finish(self) -> ChunkSet:
        """Every chunk (sorted by id) and the diagnostics of making them (in page order)."""
        for pages in self._waiting.values():
            first, *rest = pages
            self._diagnostics += [(first.order, d) for d in first.diagnostics]
            self._chunks += first.chunks
            self._diagnostics += [(w.order, _duplicate_material(w.page, first.page.rel)) for w in rest]
        self._waiting = {}
        labels = labels_of(self._bold)
        self._chunks += [_chunk(self.site, page, element, meta, labels) for page, meta, element in self._heuristic]
        self._heuristic = []
        self._chunks.sort(key=lambda c: c.id)
        self._diagnostics.sort(key=lambda pair: pair[0])  # stable: a page's own order is kept
        return ChunkSet(self._chunks, [d for _, d in self._diagnostics])


def _slim(page: Page) -> Page:
    """The page without what its chunks no longer need (elements, parts, front matter, diagnostics)."""
    return replace(page, front_matter={}, elements=[], unanchored=[], diagnostics=[], parts=[])


def make_chunks(site: Site, pages: list[Page], sections: str = "off") -> ChunkSet:
    """The chunks of these pages (sorted by id) and the diagnostics of making them, in page order.
    A page at a time (ChunkMaker): a build feeds pages as they are scanned instead."""
    maker = ChunkMaker(site, sections)
    for page in pages:
        maker.add(page)
    return maker.finish()
