"""One result per place: the chunks of a ranking grouped by where their links land.

A place is the spot a chunk's link lands on: its `url`, page and fragment. Chunks that share it
are parts of one thing a reader would open once: the row chunks of a table (they carry the
table's id, or the section's fragment when the table has none), the split parts of a long
section (`-p2`, `-p3` … carry the heading's fragment), a table without an id of its own and the
prose of its section. Boxes have anchors of their own, so each box is its own place. The text
before a page's first heading links to the page alone: it is one place per page (two pages never
share a URL). A web source's chunks follow the same rule (web/chunk.py: page + the section's
fragment, the page alone for the text before its first heading).

The ranking is walked best first: the first chunk of a place leads it and its later chunks travel
with it as sub-results (at most MAX_SUB_RESULTS), until a place beyond the k-th would begin. So
`k` counts places, and a place's sub-results are its chunks ranked above the (k+1)-th place.

A site that mixes boxes with page parts (sections, tables) may ask for the best part to be shown
among the first few places (`promote`, `within`): a box and the prose around it often both match,
and the box, shorter and titled, wins both channels even when only the prose holds the answer
(docs/retrieval.md, "A page part among the first places").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

MAX_SUB_RESULTS = 5  # enough to show that a table or a section matched more than once
# How many items past the k-th place a promoted one is looked for: one batch of relevance (the same
# places on every query set of docs/retrieval.md at 10, 20, 40 and unbounded), and a bounded walk.
PROMOTE_DEPTH = 20

Item = TypeVar("Item")


def by_place(ranked: Iterable[Item], place_of: Callable[[Item], Hashable], k: int,
             promote: Callable[[Item], bool] | None = None, within: int = 0) -> list[tuple[Item, list[Item]]]:
    """(lead, sub-results) of the first `k` places of `ranked` (best first), in rank order. With
    `promote`: when none of the first `within` places is led by an item it accepts, the first place
    that is (found at most PROMOTE_DEPTH items further down the ranking if need be) moves up to place
    `within`."""
    places: dict[Hashable, tuple[Item, list[Item]]] = {}
    if k < 1:
        return []
    ranked = iter(ranked)
    for item in ranked:
        place = place_of(item)
        if place in places:
            others = places[place][1]
            if len(others) < MAX_SUB_RESULTS:
                others.append(item)
        elif len(places) == k:
            ranked = itertools.chain((item,), ranked)  # the item that ended the walk starts the rest
            break
        else:
            places[place] = (item, [])
    found = list(places.values())
    if promote is None or not 0 < within <= k or any(promote(lead) for lead, _ in found[:within]):
        return found
    at = next((i for i, (lead, _) in enumerate(found) if promote(lead)), None)
    if at is None:
        further = itertools.islice(ranked, PROMOTE_DEPTH)
        item = next((item for item in further if place_of(item) not in places and promote(item)), None)
        if item is None:
            return found
        found.append((item, []))
        at = len(found) - 1
    found.insert(within - 1, found.pop(at))
    return found[:k]

