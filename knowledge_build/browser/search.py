"""The search box's ranking in Python, over a written bundle: what static/knowledge-search.js does in the
browser, step for step (the benches score it without a browser; the tests hold the two to the same
results)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import BrokenBundle, QueryTooLong
from .analysis import fold, query_terms, term_key
from .bundle import ENTRY, FIELDS, file_name, fnv1a, safe_link
from .verify import FACET_KEYS, check_entry, checked, read_places, read_records, read_shard


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
        name = file_name("p", self.digests["p"][0])
        data = self._read("p", 0)
        present = [key for key in FACET_KEYS if key in self.entry]
        self.place, self.type_codes, self.level_codes, codes, self.place_across = read_places(
            data, self.entry["rows"], self.dir, name, len(present), "versions" in present)
        self.facet_codes = dict(zip(present, codes))
        self._records: dict[int, list] = {}

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

    def lookup(self, key: str) -> list[str]:
        """The vocabulary's terms filed under `key` (analysis.term_key)."""
        return [t for t in self._shard(fnv1a(key) % len(self.digests["t"])) if term_key(t) == key]

    def scores(self, query: str) -> dict[int, float]:
        entry = self.entry
        body, reading = query_terms(query, entry["thesaurus"], entry["english"], self.lookup)
        scores: dict[int, float] = {}
        for slot, (weight, scale) in enumerate(zip(entry["weights"], entry["scales"])):
            unit = weight * scale
            field = FIELDS[slot]
            for term in (reading if field == "reading" else body + reading if field == "title" else body):
                found = self._shard(fnv1a(term_key(term)) % len(self.digests["t"]))[term]
                rows, q = found[slot]
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
        scores = self.scores(query)
        if type is None:
            weights = type_weights(query, self.entry)
            scores = {r: s * weights[self.type_codes[r]] for r, s in scores.items()}
        if type is not None:
            code = types.index(type) if type in types else -1
            scores = {r: s for r, s in scores.items() if self.type_codes[r] == code}
        if level is not None:
            code = levels.index(level) if level in levels else -1
            scores = {r: s for r, s in scores.items() if self.level_codes[r] == code}
        values = {key: [v["value"] for v in self.entry.get(key, [])] for key in FACET_KEYS}
        wanted = default_facets({"version": version, "language": language}, query, values["versions"],
                                values["languages"])
        for key, value in (("versions", wanted["version"]), ("languages", wanted["language"])):
            if value is not None and key in self.facet_codes:  # a row of no version (255) passes
                code = values[key].index(value) if value in values[key] else -1
                scores = {r: s for r, s in scores.items() if self.facet_codes[key][r] in (code, 255)}
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
