"""Pages -> chunks one page at a time, so a build need not hold every scanned page.

One rule of chunks.py looks at the whole site, and this module keeps only the small pieces it needs
instead of the pages: a box's heuristic learns leave out the bold words many boxes share
(`labels_of`), known only after the last page, so such boxes wait as their `KnowledgeElement` (whose
text becomes the chunk's content, so waiting costs about what the chunk will) and become chunks in
`finish()`. Every page has a name of its own (site/identity.py; two pages of one name are an error
of the walk), so no page waits for another. Diagnostics come out in page order;
`make_chunks(pages)` is this module over a list, so both ways give the same chunks byte for byte.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from ..site.jekyll import Site
from ..site.page import Page
from .chunks import NO_WORDS, ChunkSet, _chunk, _page_meta, holds_words, labels_of, own_text, part_chunk, \
    resolve_learns, wanted_parts


@dataclass
class ChunkMaker:
    site: Site
    sections: str = "off"
    _chunks: list = field(default_factory=list)
    _diagnostics: list = field(default_factory=list)
    _bold: Counter = field(default_factory=Counter)
    _heuristic: list = field(default_factory=list)  # (slim page, meta, element): chunks once labels are known
    left_out: Counter = field(default_factory=Counter)  # why -> how many parts and boxes made no chunk

    def add(self, page: Page) -> None:
        """Take the page's chunks (or what they need later); the page itself is not kept. A part or box
        without words (chunks.holds_words) is no chunk, only counted in `left_out`."""
        self._bold.update(term for element in page.elements for term in element.bold_terms)
        parts = [p for p in wanted_parts(page.parts, self.sections) if holds_words(own_text(p))]
        elements = [e for e in page.elements if holds_words(e.text)]
        wordless = len(wanted_parts(page.parts, self.sections)) - len(parts) + len(page.elements) - len(elements)
        if wordless:
            self.left_out[NO_WORDS] += wordless
        meta = _page_meta(self.site, page, self._diagnostics)
        slim = _slim(page)
        self._chunks += [part_chunk(self.site, slim, part, meta) for part in parts]
        for element in elements:
            _, source = resolve_learns(self.site, slim, element)
            if source == "heuristic":  # the only learns that depend on the labels
                self._heuristic.append((slim, meta, element))
            else:
                self._chunks.append(_chunk(self.site, slim, element, meta, frozenset()))

    def finish(self) -> ChunkSet:
        """Every chunk (sorted by id) and the diagnostics of making them (in page order)."""
        labels = labels_of(self._bold)
        self._chunks += [_chunk(self.site, page, element, meta, labels) for page, meta, element in self._heuristic]
        self._heuristic = []
        self._chunks.sort(key=lambda c: c.id)
        return ChunkSet(self._chunks, self._diagnostics, self.left_out)


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
