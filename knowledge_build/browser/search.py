"""The search box's ranking in Python, over a written bundle: what static/knowledge-search.js does in the
browser, step for step (the benches score it without a browser; the tests hold the two to the same
results)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from ..errors import BrokenBundle, QueryTooLong
from ..ranking.fusion import dbsf, rrf
from .analysis import fold, query_terms, term_key
from .binary import fnv1a
from .bundle import ENTRY, FIELDS, file_name, safe_link
from .verify import (FACET_KEYS, check_entry, checked, read_cluster, read_codes, read_offset, read_pieces, read_places,
                     read_records, read_shard)

log = logging.getLogger("knowledge_build.browser")


def type_weights(query: str, entry: dict) -> list[float]:
    """Per type code, the multiplier of a row's score for this query: the type's prior, or its weight when
    named for the one type the query names (the bundle's type-prior table: ranking.type_priors); 1 for a
    row of no known type (code 255)."""
    folded = fold(query)
    named = [i for i, t in enumerate(entry["types"]) if any(w in folded for w in t["words"])]
    weights = [t["named"] if [i] == named else t["weight"] for i, t in enumerate(entry["types"])]
    return weights + [1.0] * (256 - len(weights))


def leads_by_place(ranked, place_of, k: int) -> list:
    """The first `k` places of `ranked` (best first), each led by its best item: ranking/places.py's leads."""
    seen, leads = set(), []
    for item in ranked:
        if len(leads) == k:
            break
        if place_of(item) not in seen:
            seen.add(place_of(item))
            leads.append(item)
    return leads


class MissingDense(Exception):
    """A file of the dense channel is not in the set (deployed without it)."""


def _top(scores: dict[int, float], n: int) -> dict[int, float]:
    """The `n` best of a channel's scores, best first (ties by row)."""
    return {r: scores[r] for r in sorted(scores, key=lambda r: (-scores[r], r))[:n]}


@dataclass
class BrowserResult:
    row: int
    id: str
    url: str | None  # None: the record's link is neither http(s) nor site-relative (bundle.safe_link)
    title: str
    type: str
    level: str
    score: float


class BrowserIndex:
    """A bundle read from a set directory, ranked as the browser ranks it."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        try:
            self.entry = json.loads((self.dir / ENTRY).read_bytes())
        except OSError as error:
            raise BrokenBundle(self.dir, ENTRY, f"it cannot be read: {error.strerror or error}") from None
        except ValueError:
            raise BrokenBundle(self.dir, ENTRY, "it is not JSON") from None
        self.digests = check_entry(self.entry, self.dir)
        self._shards: dict[int, dict] = {}
        self._postings: dict[int, dict] = {}
        name = file_name("p", self.digests["p"][0])
        data = self._read("p", 0)
        present = [key for key in FACET_KEYS if key in self.entry]
        self.place, self.type_codes, self.level_codes, codes, self.place_across = read_places(
            data, self.entry["rows"], self.dir, name, len(present), "versions" in present)
        self.facet_codes = dict(zip(present, codes))
        self._records: dict[int, list] = {}
        self._dense: dict[tuple[str, int], object] = {}
        self._warned = False

    def _read(self, kind: str, number: int) -> bytes:
        """The bundle's file of `kind` at `number`, checked against the digest the entry point lists."""
        name = file_name(kind, self.digests[kind][number])
        try:
            data = (self.dir / name).read_bytes()
        except OSError as error:
            raise BrokenBundle(self.dir, name, f"it cannot be read: {error.strerror or error}") from None
        return checked(data, self.digests[kind][number], self.dir, name)

    def _shard(self, number: int) -> dict:
        if number not in self._shards:
            name = file_name("t", self.digests["t"][number])
            self._shards[number] = read_shard(self._read("t", number), self.entry["rows"], self.dir, name)
        return self._shards[number]

    def postings(self, term: str) -> list[tuple[list[int], bytes]]:
        """A vocabulary term's (rows, q) per field: from its key's shard, or, when it is there with no postings in
        any field, from its posting shard (bundle.py)."""
        found = self._shard(fnv1a(term_key(term)) % len(self.digests["t"]))[term]
        if any(rows for rows, _ in found):
            return found
        if not self.digests["o"]:
            raise BrokenBundle(self.dir, ENTRY, f"the term {term!r} has its postings in a posting shard, but it lists none")
        number = fnv1a(term) % len(self.digests["o"])
        name = file_name("o", self.digests["o"][number])
        if number not in self._postings:
            self._postings[number] = read_shard(self._read("o", number), self.entry["rows"], self.dir, name)
        if term not in self._postings[number]:
            raise BrokenBundle(self.dir, name, f"the term {term!r} is not in it")
        return self._postings[number][term]

    def lookup(self, key: str) -> list[str]:
        """The vocabulary's terms filed under `key` (analysis.term_key)."""
        return [t for t in self._shard(fnv1a(key) % len(self.digests["t"])) if term_key(t) == key]

    def _dense_file(self, kind: str, number: int, read):
        """A dense file, read; MissingDense when it is not there (the box then answers without the channel)."""
        key = (kind, number)
        if key not in self._dense:
            name = file_name(kind, self.digests[kind][number])
            if not (self.dir / name).is_file():
                raise MissingDense(name)
            self._dense[key] = read(self._read(kind, number), name)
        return self._dense[key]

    def dense_scores(self, body: list[str]) -> dict[int, float]:
        try:
            return self._dense_scores(body)
        except MissingDense as missing:
            if not self._warned:
                log.warning("%s: %s is missing: the search box answers without its dense channel", self.dir, missing)
            self._warned = True
            return {}

    def _dense_scores(self, body: list[str]) -> dict[int, float]:
        """{row: its dense score} of every row: the query's vector is the idf-weighted mean of the mapped rows
        of its pieces less the offset, scored against each row's 2-bit code a byte (four axes) at a time
        (dense.py); {} on a bundle without the dense channel or for a query none of whose pieces it has."""
        dense = self.entry.get("dense")
        if not dense:
            return {}
        dims, shards, n = dense["dims"], len(self.digests["v"]), self.entry["rows"]
        total, vector = 0.0, [0.0] * dims
        for term in body:  # its body terms: the pieces are the body's words (dense.py)
            found = self._dense_file("v", fnv1a(term) % shards, lambda data, name: read_pieces(
                data, dims, self.dir, name)).get(term)
            if found is not None:
                total += found[0]
                vector = [v + found[0] * x for v, x in zip(vector, found[1])]
        if not total:
            return {}
        offset, spread = self._dense_file("k", 0, lambda data, name: read_offset(data, dims, self.dir, name))
        query = [(v / total - o) * s for v, o, s in zip(vector, offset, spread)]
        levels = dense["levels"]
        tables = []  # per byte, its 256 values: the four axes' levels times the query, summed in axis order
        for j in range(dims // 4):
            table = []
            for byte in range(256):
                value = 0.0
                for i in range(4):
                    value += levels[(byte >> (2 * i)) & 3] * query[4 * j + i]
                table.append(value)
            tables.append(table)
        width = dims // 4

        def score(codes: bytes, r: int) -> float:
            value = 0.0
            for j, byte in enumerate(codes[r * width:(r + 1) * width]):
                value += tables[j][byte]
            return value

        scores = {}
        if "probe" in dense:  # the codes in clusters: the rows of the query's `probe` best clusters
            clusters = len(self.digests["c"])
            centres = self._dense_file("g", 0, lambda data, name: read_codes(data, clusters, dims, self.dir, name))
            best = sorted(range(clusters), key=lambda c: (-score(centres, c), c))[:dense["probe"]]
            for number in sorted(best):
                rows, codes = self._dense_file("c", number, lambda data, name: read_cluster(data, n, dims, self.dir, name))
                for r, row in enumerate(rows):
                    scores[row] = score(codes, r)
            return scores
        size = dense["rows"]
        for number in range(len(self.digests["c"])):
            count = min(size, n - number * size)
            codes = self._dense_file("c", number, lambda data, name: read_codes(data, count, dims, self.dir, name))
            for r in range(count):
                scores[number * size + r] = score(codes, r)
        return scores

    def terms(self, query: str) -> tuple[list[str], list[str]]:
        """(body terms, reading terms) of a query in the bundle's vocabulary (analysis.query_terms)."""
        return query_terms(query, self.entry["thesaurus"], self.entry["english"], self.lookup)

    def scores(self, query: str) -> dict[int, float]:
        """{row: its words' score} (BM25 per field, weighted) for a query."""
        return self._scores(*self.terms(query))

    def _scores(self, body: list[str], reading: list[str]) -> dict[int, float]:
        entry = self.entry
        scores: dict[int, float] = {}
        for slot, (weight, scale) in enumerate(zip(entry["weights"], entry["scales"])):
            unit = weight * scale
            field = FIELDS[slot]
            for term in (reading if field == "reading" else body + reading if field == "title" else body):
                rows, q = self.postings(term)[slot]
                for row, value in zip(rows, q):
                    scores[row] = scores.get(row, 0.0) + unit * value
        return scores

    def search(self, query: str, k: int = 5, type: str | None = None, level: str | None = None,
               version: str | None = None, language: str | None = None) -> list[BrowserResult]:
        """The first `k` places, each led by its best row; QueryTooLong over the CLI's MAX_QUERY_CHARS.
        `version`, `language`: ranking/facets.py's defaults when left out (the newest version)."""
        from ..ranking.facets import default_facets
        from ..ranking.settings import MAX_QUERY_CHARS

        if len(query) > MAX_QUERY_CHARS:
            raise QueryTooLong(len(query), MAX_QUERY_CHARS)
        types = [t["value"] for t in self.entry["types"]]
        levels = [v["value"] for v in self.entry["levels"]]
        keep = []  # (codes per row, the code a row must have, or also 255: no version)
        if type is not None:
            keep.append((self.type_codes, types.index(type) if type in types else -1, False))
        if level is not None:
            keep.append((self.level_codes, levels.index(level) if level in levels else -1, False))
        values = {key: [v["value"] for v in self.entry.get(key, [])] for key in FACET_KEYS}
        wanted = default_facets({"version": version, "language": language}, query, values["versions"],
                                values["languages"])
        for key, value in (("versions", wanted["version"]), ("languages", wanted["language"])):
            if value is not None and key in self.facet_codes:
                keep.append((self.facet_codes[key], values[key].index(value) if value in values[key] else -1, True))

        def passing(found: dict[int, float]) -> dict[int, float]:
            return {r: s for r, s in found.items()
                    if all(codes[r] == code or (none and codes[r] == 255) for codes, code, none in keep)}

        body, reading = self.terms(query)
        scores = passing(self._scores(body, reading))
        dense = passing(self.dense_scores(body))
        if dense:  # the same fusion as the CLI's, over each channel's top candidates (ranking/fusion.py)
            settings = self.entry["dense"]
            channels = {"lexical": _top(scores, settings["candidates"]), "dense": _top(dense, settings["candidates"])}
            scores = (rrf(channels, settings["weights"], settings["rrf_k"]) if settings["fusion"] == "rrf"
                      else dbsf(channels, settings["weights"]))
        if type is None:
            weights = type_weights(query, self.entry)
            scores = {r: s * weights[self.type_codes[r]] for r, s in scores.items()}
        every = bool(self.place_across) and wanted["version"] is None  # each place once, its newest version first
        place = self.place_across if every else self.place
        ranked = sorted(scores, key=lambda r: (-scores[r], r))
        leads = leads_by_place(ranked, lambda row: place[row], k)
        if every:
            codes, newest = self.facet_codes["versions"], {}  # code 0: the newest version
            for row in ranked:
                have = newest.get(place[row])
                if have is None or codes[row] < codes[have]:
                    newest[place[row]] = row
            leads = [newest[place[row]] for row in leads]
        return [self._result(row, scores[row]) for row in leads]

    def _result(self, row: int, score: float) -> BrowserResult:
        size = self.entry["records"]["rows"]
        number = row // size
        if number not in self._records:
            name = file_name("r", self.digests["r"][number])
            count = min(size, self.entry["rows"] - number * size)
            self._records[number] = read_records(self._read("r", number), count, self.dir, name)
        chunk_id, url, title, type_, level, _, _ = self._records[number][row % size]
        return BrowserResult(row, chunk_id, safe_link(url), title, type_, level, score)
