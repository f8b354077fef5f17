"""What a reader of the bundle checks before it uses a file (the Python mirror here; static/knowledge-search.js
checks the same, rule for rule): the entry point's shape and counts, each other file against the digest the
entry point lists for it, and every count a file declares against the bytes that hold it and the limits
below, so a broken or hostile file is refused with a message and never makes a reader loop or allocate
beyond what it was sent. A record's link is kept only when it is http(s) or site-relative (bundle.safe_link).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from ..errors import BrokenBundle
from .bundle import CENTRES, DENSE_KINDS, ENTRY, FIELDS, FORMAT, MAX_LEVELS, MAX_RECORD_FILES, MAX_SHARDS, digest, unpack
from ..ranking.settings import FUSIONS
from .dense import MAX_CLUSTERS, MAX_DIMS, MAX_PIECE_SHARDS

MAX_ROWS = 1 << 24  # rows of one bundle: far more than any site's chunks, few enough for a browser tab
RECORD_FIELDS = 7  # id, url, title, type, level, learns, excerpt


def _is_count(value, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _romaji_table(table) -> bool:
    """Whether `table` has the shape of text/romaji.py's table (what the box reads romaji with)."""
    return (isinstance(table, dict) and all(isinstance(table.get(k), str) for k in ("vowels", "n", "sokuon", "doubled", "small"))
            and len(table["vowels"]) == len(table["small"]) == 5
            and all(isinstance(table.get(k), dict) and all(map(lambda v: isinstance(v, str), table[k].values()))
                    for k in ("rows", "contracted")))


# The entry point's facet lists, in the order their codes follow the level codes in the places file.
FACET_KEYS = ("versions", "languages")


def check_entry(entry, where: Path) -> dict[str, list[bytes]]:
    """The digests of the entry point's files by kind (t, r, p), once its shape and counts are sound."""
    def broken(detail: str) -> BrokenBundle:
        return BrokenBundle(where, ENTRY, detail)

    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        raise broken(f"it is not a {FORMAT} entry point")
    rows, records = entry.get("rows"), entry.get("records")
    if not _is_count(rows, MAX_ROWS):
        raise broken(f"rows {rows!r} is not a count from 0 to {MAX_ROWS}")
    if entry.get("fields") != list(FIELDS) or not all(
            isinstance(entry.get(k), list) and len(entry[k]) == len(FIELDS) and all(map(_is_number, entry[k]))
            for k in ("weights", "scales")):
        raise broken("fields, weights or scales are not what this reader ranks with")
    if not isinstance(records, dict) or not _is_count(records.get("rows"), MAX_ROWS) or records["rows"] < 1:
        raise broken("records.rows is not a count from 1")
    types, levels = entry.get("types"), entry.get("levels")
    if not (isinstance(types, list) and len(types) <= MAX_LEVELS and all(
            isinstance(t, dict) and isinstance(t.get("value"), str) and isinstance(t.get("label"), str)
            and _is_number(t.get("weight")) and _is_number(t.get("named")) and _strings(t.get("words")) for t in types)
            and isinstance(levels, list) and len(levels) <= MAX_LEVELS and all(
            isinstance(v, dict) and isinstance(v.get("value"), str) and isinstance(v.get("label"), str) for v in levels)):
        raise broken("types or levels are not lists of values and labels")
    for key in FACET_KEYS:  # only on a site with versions or languages (site/facets.py)
        values = entry.get(key, [])
        if not (isinstance(values, list) and len(values) < 255 and all(
                isinstance(v, dict) and isinstance(v.get("value"), str) and isinstance(v.get("label"), str)
                for v in values)):
            raise broken(f"{key} is not a list of values and labels")
    thesaurus, english = entry.get("thesaurus"), entry.get("english")
    if not (isinstance(thesaurus, dict) and all(map(_strings, thesaurus.values()))
            and isinstance(english, dict) and all(isinstance(v, str) for v in english.values())):
        raise broken("thesaurus or english is not a table of terms")
    if not _romaji_table(entry.get("romaji")):
        raise broken("romaji is not a syllable table")
    try:
        digests = {"t": unpack(entry.get("shards")), "r": unpack(records.get("files")) if rows else [],
                   "p": unpack(entry.get("places")), "o": unpack(entry["postings"]) if "postings" in entry else []}
    except ValueError as error:
        raise broken(f"its digests are unreadable: {error}") from None
    if len(digests["o"]) > MAX_SHARDS:
        raise broken(f"it lists {len(digests['o'])} posting shards, more than {MAX_SHARDS}")
    if not 1 <= len(digests["t"]) <= MAX_SHARDS or len(digests["p"]) != 1 \
            or len(digests["r"]) != -(-rows // records["rows"]) or len(digests["r"]) > MAX_RECORD_FILES:
        raise broken(f"it lists {len(digests['t'])} term shards, {len(digests['r'])} record files and "
                     f"{len(digests['p'])} places files for {rows} rows")
    if "dense" in entry:  # the dense channel (dense.py): on unless the site's owner turned it off
        digests.update(_dense_digests(entry["dense"], rows, broken))
    return digests


def _dense_digests(dense, rows: int, broken) -> dict[str, list[bytes]]:
    if not (isinstance(dense, dict) and _is_count(dense.get("dims"), MAX_DIMS) and dense["dims"] >= 4
            and dense["dims"] % 4 == 0 and isinstance(dense.get("levels"), list) and len(dense["levels"]) == 4
            and all(map(_is_number, dense["levels"])) and _is_count(dense.get("rows"), MAX_ROWS) and dense["rows"] >= 1
            and _is_count(dense.get("candidates"), MAX_ROWS) and dense["candidates"] >= 1
            and dense.get("fusion") in FUSIONS and _is_count(dense.get("rrf_k"), MAX_ROWS)
            and isinstance(dense.get("weights"), dict) and sorted(dense["weights"]) == ["dense", "lexical"]
            and all(map(_is_number, dense["weights"].values()))):
        raise broken("dense is not a table of dims, levels, rows, fusion, candidates and weights")
    try:
        found = {kind: unpack(dense.get(key)) for kind, key in DENSE_KINDS.items()}
    except ValueError as error:
        raise broken(f"its dense digests are unreadable: {error}") from None
    clustered = "probe" in dense  # the codes in clusters (dense.py): a centres' file, and a file per cluster
    if clustered:
        try:
            found[CENTRES[0]] = unpack(dense.get(CENTRES[1]))
        except ValueError as error:
            raise broken(f"its dense digests are unreadable: {error}") from None
        if not (_is_count(dense["probe"], MAX_CLUSTERS) and 1 <= dense["probe"] <= len(found["c"]) <= MAX_CLUSTERS
                and len(found[CENTRES[0]]) == 1):
            raise broken(f"it lists {len(found['c'])} clusters, {len(found[CENTRES[0]])} centres' files and probes "
                         f"{dense['probe']!r} of them")
    if not (1 <= len(found["v"]) <= MAX_PIECE_SHARDS and len(found["k"]) == 1
            and (clustered or len(found["c"]) == -(-rows // dense["rows"]))):
        raise broken(f"it lists {len(found['v'])} piece shards, {len(found['c'])} code files and {len(found['k'])} "
                     f"offset files for {rows} rows")
    return found


def checked(data: bytes, expected: bytes, where: Path, name: str) -> bytes:
    """`data` when its sha256 begins with the digest the entry point lists for it."""
    if digest(data) != expected:
        raise BrokenBundle(where, name, f"its sha256 does not begin with the digest {ENTRY} lists for it")
    return data


class Reader:
    """Varints and bytes of one file, each read only when the file holds it."""

    def __init__(self, data: bytes, where: Path, name: str):
        self.data, self.at, self.where, self.name = data, 0, where, name

    def broken(self, detail: str) -> BrokenBundle:
        return BrokenBundle(self.where, self.name, detail)

    @property
    def left(self) -> int:
        return len(self.data) - self.at

    def varint(self) -> int:
        value = 0
        for shift in range(0, 56, 7):  # 8 bytes at most: every count and delta of a bundle is below 2^53
            if self.at >= len(self.data):
                raise self.broken(f"it ends inside a number at byte {self.at}")
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
        raise self.broken(f"a number at byte {self.at - 8} is longer than 8 bytes")

    def take(self, size: int) -> bytes:
        if size > self.left:
            raise self.broken(f"it declares {size} bytes at byte {self.at}, but only {self.left} follow")
        self.at += size
        return self.data[self.at - size:self.at]

    def text(self, what: str) -> str:
        """A varint length and that many bytes of UTF-8 (a term, a piece)."""
        try:
            return self.take(self.varint()).decode("utf-8")
        except UnicodeDecodeError:
            raise self.broken(f"{what} before byte {self.at} is not UTF-8") from None


def read_shard(data: bytes, rows: int, where: Path, name: str) -> dict[str, list[tuple[list[int], bytes]]]:
    """term -> per field (rows, q) of one term shard, every count bounded by the bytes left and `rows`."""
    reader, out = Reader(data, where, name), {}
    while reader.left:
        term = reader.text("a term")
        per_field = []
        for _ in FIELDS:
            n = reader.varint()
            if 2 * n > reader.left:  # each posting takes a byte of row delta and a byte of q at least
                raise reader.broken(f"a term declares {n} postings, more than the {reader.left} bytes left hold")
            per_field.append((_rows(reader, n, rows, "a posting"), reader.take(n)))
        out[term] = per_field
    return out


def _rows(reader: Reader, n: int, rows: int, what: str) -> list[int]:
    """`n` ascending rows stored as varint deltas (the first from row 0), each below `rows`."""
    found, row = [], 0
    for _ in range(n):
        row += reader.varint()
        if row >= rows:
            raise reader.broken(f"{what} names row {row} of {rows}")
        found.append(row)
    return found


def read_places(data: bytes, rows: int, where: Path, name: str, facets: int = 0,
                every_version: bool = False) -> tuple[list[int], bytes, bytes, list[bytes], list[int]]:
    """(place, type codes, level codes, the codes of each of `facets` facets, the place in every version when
    `every_version`, else []) per row; the file must hold exactly `rows` of each."""
    reader = Reader(data, where, name)
    if 2 * rows > len(data):
        raise reader.broken(f"rows {rows} need at least {2 * rows} bytes, the file has {len(data)}")
    place = _places(reader, rows)
    across = _places(reader, rows) if every_version else []
    columns = 1 + facets
    if reader.left != columns * rows:
        raise reader.broken(f"{reader.left} bytes follow the places, not the {columns * rows} of {rows} rows' codes")
    codes = [data[reader.at + i * rows:reader.at + (i + 1) * rows] for i in range(columns)]
    # type and level share a byte (4 bits each, 15 for none): as two columns of codes, 255 for none
    types = bytes(255 if b & 15 == 15 else b & 15 for b in codes[0])
    levels = bytes(255 if b >> 4 == 15 else b >> 4 for b in codes[0])
    return place, types, levels, codes[1:], across


def _places(reader: Reader, rows: int) -> list[int]:
    """Per row, the first row of its place (stored as the distance back to it)."""
    place = []
    for row in range(rows):
        delta = reader.varint()
        if delta > row:
            raise reader.broken(f"row {row} names a place before row 0")
        place.append(row - delta)
    return place


def read_records(data: bytes, count: int, where: Path, name: str) -> list[list]:
    """The `count` display records of one file, each [id, url, title, type, level, learns, excerpt]."""
    try:
        records = json.loads(data)
    except ValueError:
        raise BrokenBundle(where, name, "it is not JSON") from None
    if not isinstance(records, list) or len(records) != count or not all(
            isinstance(r, list) and len(r) == RECORD_FIELDS and all(isinstance(r[i], str) for i in (0, 2, 3, 6))
            and all(r[i] is None or isinstance(r[i], str) for i in (1, 4)) and _strings(r[5]) for r in records):
        raise BrokenBundle(where, name, f"it does not hold {count} records of {RECORD_FIELDS} fields")
    return records


def _floats(reader: Reader, count: int, what: str) -> list[float]:
    values = list(struct.unpack(f"<{count}f", reader.take(4 * count)))
    if not all(map(math.isfinite, values)):
        raise reader.broken(f"{what} holds a number that is not finite")
    return values


def read_pieces(data: bytes, dims: int, where: Path, name: str) -> dict[str, tuple[float, list[float]]]:
    """term -> (idf weight, its mapped row) of one piece shard (dense.py)."""
    reader, out = Reader(data, where, name), {}
    while reader.left:
        term = reader.text("a piece")
        weight, scale = _floats(reader, 2, "a piece's weight or scale")
        row = []
        for byte in reader.take(dims // 2):  # two signed 4-bit numbers a byte, the low first
            row += [scale * (n - 16 if n >= 8 else n) for n in (byte & 0xF, byte >> 4)]
        out[term] = (weight, row)
    return out


def read_offset(data: bytes, dims: int, where: Path, name: str) -> tuple[list[float], list[float]]:
    """(the offset, each axis's spread) of the offset file (dense.py)."""
    reader = Reader(data, where, name)
    if len(data) != 8 * dims:
        raise reader.broken(f"it has {len(data)} bytes, not the {8 * dims} of an offset and spreads of {dims} axes")
    return _floats(reader, dims, "the offset"), _floats(reader, dims, "a spread")


def read_cluster(data: bytes, rows: int, dims: int, where: Path, name: str) -> tuple[list[int], bytes]:
    """(its rows, their codes) of one cluster's file (dense.py): varint n, n varint row deltas, n codes."""
    reader = Reader(data, where, name)
    n = reader.varint()
    if n > reader.left:  # each row takes a byte of delta at least
        raise reader.broken(f"it declares {n} rows, more than the {reader.left} bytes left hold")
    found = _rows(reader, n, rows, "a cluster")
    if reader.left != n * dims // 4:
        raise reader.broken(f"{reader.left} bytes follow its rows, not the {n * dims // 4} of {n} codes")
    return found, reader.take(reader.left)


def read_codes(data: bytes, count: int, dims: int, where: Path, name: str) -> bytes:
    """The codes of `count` rows of one code file (dense.py): dims / 4 bytes each."""
    if len(data) != count * dims // 4:
        raise BrokenBundle(where, name, f"it has {len(data)} bytes, not the {count * dims // 4} of {count} codes")
    return data
