"""What a loader knows about every row without decoding its chunk: the columns filters, kinds and
concepts read (type, level, material, category, concept group, as small integer codes), and the
chunk records themselves, decoded only when a row is asked for.

An index built in memory builds both from its chunks; a set keeps them in `rows.npy` (one
structured row per chunk, memory-mapped) with the code tables in `columns.json`, and the chunks in
`knowledge_chunks.jsonl` (one JSON object per line, sorted by id), found by the offsets in rows.npy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..kinds import PART_TYPES
from ..model import FACET_FIELDS as FACETS
from ..model import Chunk
from ..text.ja import concept_key

# The top-level "id", "material" and "url" of a chunk line: in JSON a quote inside a string is escaped,
# so `"id":"` can only be a key (and chunks have no nested objects).
_BRIEF = re.compile(rb'"(id|material|url)":("(?:[^"\\]|\\.)*")')
# `norm`: the length of the row's stored (fp16) vector, so that a dense score is a cosine, as the
# database computes it from the same published vector (an fp16 vector is unit length only to ~1e-4).
ROW_DTYPE = np.dtype([("offset", "<u8"), ("type", "u1"), ("level", "u1"), ("material", "<u4"),
                      ("category", "<u4"), ("concept", "<i4"), ("norm", "<f4")])
COLUMN_NAMES = ("type", "level", "material", "category")
# FACETS are a page's, not a row's (site/facets.py): columns.json lists them per material, when the site has them.
# A result's other locations (same concept elsewhere): at most this many. A generic heading
# (「7.練習問題」 on 115 pages of the reference corpus) would list every page.
MAX_LOCATIONS = 20


class Columns:
    """Per-row codes and the values they stand for; `materials` also carries each page's title."""

    def __init__(self, codes: dict[str, np.ndarray], values: dict[str, list[str]], material_titles: list[str],
                 concept: np.ndarray, norms: np.ndarray | None = None, facets: dict[str, list[str]] | None = None):
        self.codes, self.values, self.material_titles, self.concept = codes, values, material_titles, concept
        self.norms = norms  # v2: the stored vectors' lengths (None: unit vectors, an in-memory index's float32)
        # FACETS: per material (as values["material"]), its version or language ("" none); only those the site has
        self.facets = {name: list(v) for name, v in (facets or {}).items() if any(v)}
        self.size = len(concept)
        self._index = {name: {v: i for i, v in enumerate(values[name])} for name in COLUMN_NAMES}
        part_codes = [i for i, t in enumerate(values["type"]) if t in PART_TYPES]
        self.parts = np.isin(np.asarray(codes["type"]), part_codes) if self.size else np.zeros(0, dtype=bool)

    @classmethod
    def from_chunks(cls, chunks: Sequence) -> "Columns":
        values = {name: sorted({getattr(c, name) for c in chunks}) for name in COLUMN_NAMES}
        index = {name: {v: i for i, v in enumerate(values[name])} for name in COLUMN_NAMES}
        codes = {name: np.array([index[name][getattr(c, name)] for c in chunks], dtype=np.uint32)
                 for name in COLUMN_NAMES}
        titles, facets = {}, {name: {} for name in FACETS}
        for chunk in chunks:
            titles.setdefault(chunk.material, chunk.material_title)
            for name in FACETS:
                facets[name].setdefault(chunk.material, getattr(chunk, name))
        return cls(codes, values, [titles[m] for m in values["material"]], concept_groups(chunks),
                   facets={name: [facets[name][m] for m in values["material"]] for name in FACETS})

    def facet_values(self, name: str) -> list[str]:
        """The versions or languages the rows have (sorted; none when the site has no such facet)."""
        return sorted({v for v in self.facets.get(name, ()) if v})

    def facet_of(self, row: int, name: str) -> str:
        values = self.facets.get(name)
        return values[int(self.codes["material"][row])] if values else ""

    def mask(self, name: str, value: str) -> np.ndarray:
        if name in FACETS:  # a page outside every version (or language) folder passes: it is not one of them
            values = self.facets.get(name) or []
            wanted = [i for i, v in enumerate(values) if v in (value, "")]
            return np.isin(np.asarray(self.codes["material"]), wanted) if values else np.ones(self.size, dtype=bool)
        code = self._index[name].get(value)
        if code is None:
            return np.zeros(self.size, dtype=bool)
        return np.asarray(self.codes[name]) == code

    def allowed(self, filters: dict) -> np.ndarray | None:
        """Rows that pass every filter given (None: no filter)."""
        mask = None
        for name, value in filters.items():
            if value is not None:
                found = self.mask(name, value)
                mask = found if mask is None else mask & found
        return mask

    def same_concept(self, row: int, limit: int = MAX_LOCATIONS) -> list[int]:
        """Other rows whose title names the same concept, the first `limit` in id order."""
        group = int(self.concept[row])
        if group < 0:
            return []
        return [int(r) for r in np.flatnonzero(np.asarray(self.concept) == group) if r != row][:limit]

    def to_json(self) -> dict:
        return {"type": self.values["type"], "level": self.values["level"], "category": self.values["category"],
                "material": [[m, t] for m, t in zip(self.values["material"], self.material_titles)],
                **{name: values for name, values in self.facets.items()}}


def concept_groups(chunks: Sequence) -> np.ndarray:
    """Per row, the number of its concept (a title two or more chunks share), or -1."""
    rows: dict[str, list[int]] = {}
    for row, chunk in enumerate(chunks):
        name = concept_key(chunk.title)
        if name:
            rows.setdefault(name, []).append(row)
    concept = np.full(len(chunks), -1, dtype=np.int32)
    for group, name in enumerate(n for n in sorted(rows) if len(rows[n]) > 1):
        concept[rows[name]] = group
    return concept


def _string(literal: bytes) -> str:
    """A JSON string literal's value (json.loads only when it holds an escape)."""
    return json.loads(literal) if b"\\" in literal else literal[1:-1].decode("utf-8")


def chunk_line(chunk: Chunk) -> bytes:
    return (json.dumps(chunk.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n").encode()


class ChunkRecords(Sequence):
    """The chunks of a v2 set, decoded on demand from the mapped `knowledge_chunks.jsonl`."""

    def __init__(self, data, offsets: np.ndarray, decode=Chunk.from_dict, path=""):
        self._data, self._decode, self.path = data, decode, path
        self._offsets = memoryview(np.ascontiguousarray(np.append(np.asarray(offsets, dtype=np.uint64),
                                                                  np.uint64(len(data))))).cast("B").cast("Q")
        self._cached = lru_cache(maxsize=4096)(self._load)
        self._lookups, self._table = 0, None

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> "ChunkRecords":
        """The records of chunks held in memory, in their order, as a set's file would hold them (their rows
        need not be sorted by id: the table of ids is made at once)."""
        lines = [chunk_line(chunk) for chunk in chunks]
        records = cls(b"".join(lines), np.cumsum([0] + [len(line) for line in lines[:-1]]) if lines else np.zeros(0))
        records._table = {chunk.id: row for row, chunk in enumerate(chunks)}
        return records

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def raw(self, row: int) -> dict:
        """The chunk's JSON; ArtifactUnreadable when the line is damaged (an open that did not read
        every byte trusts the file's size, see verify_v2.py)."""
        from ..errors import ArtifactUnreadable

        try:
            data = json.loads(bytes(self._data[self._offsets[row]:self._offsets[row + 1]]))
        except (ValueError, RecursionError) as exc:
            raise ArtifactUnreadable(self.path, "knowledge_chunks.jsonl",
                                     f"line {row + 1} is damaged ({str(exc)[:60]}); 'knowledge-build validate' checks the whole set") from exc
        if not isinstance(data, dict):
            raise ArtifactUnreadable(self.path, "knowledge_chunks.jsonl", f"line {row + 1} is not a chunk")
        return data

    def digests(self, salt: bytes = b"") -> list[str]:
        """The sha256 of `salt` and each row's line, in row order, without decoding a chunk."""
        import hashlib

        data, offsets, salted = memoryview(self._data), self._offsets.tolist(), hashlib.sha256(salt)

        def digest(line) -> str:
            found = salted.copy()
            found.update(line)
            return found.hexdigest()

        return [digest(data[start:end]) for start, end in zip(offsets, offsets[1:])]

    def _load(self, row: int):
        from ..errors import ArtifactUnreadable

        try:
            return self._decode(self.raw(row))
        except TypeError as exc:
            raise ArtifactUnreadable(self.path, "knowledge_chunks.jsonl", f"line {row + 1} is not a chunk") from exc

    def __getitem__(self, row):
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(len(self)))]
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(row)
        return self._cached(row)

    def brief(self, row: int) -> tuple[str, str, str]:
        """(id, url, material) of a row without decoding its chunk (a result's other locations)."""
        found: dict[bytes, bytes] = {}
        for match in _BRIEF.finditer(bytes(self._data[self._offsets[row]:self._offsets[row + 1]])):
            found.setdefault(match.group(1), match.group(2))
        try:
            return tuple(_string(found[name]) for name in (b"id", b"url", b"material"))
        except (KeyError, ValueError):
            chunk = self[row]  # raises ArtifactUnreadable for a damaged line
            return chunk.id, chunk.url, chunk.material

    def row_of(self, chunk_id: str) -> int | None:
        """The row of `chunk_id` by bisection (rows are sorted by id); after many lookups (a database's
        ranking of thousands of ids), from a table of every id read once."""
        self._lookups += 1
        if self._table is None and self._lookups > 256:
            self._table = {self.brief(row)[0]: row for row in range(len(self))}
        if self._table is not None:
            return self._table.get(chunk_id)
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.brief(mid)[0] < chunk_id:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self) and self.brief(lo)[0] == chunk_id else None
