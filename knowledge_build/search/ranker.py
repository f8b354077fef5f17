"""The ranker: channel scores in, results out. It takes each channel's ranking ({row: score}: the
artifacts' FAISS and BM25, or the database's dense rows) and applies ranking/'s rules in order: each
kind's top candidates per channel, fusion, the type priors, relevance over a window, one result per place
with a page part lifted among the first places. The database's hybrid RPC does the first four in SQL; its
ranked rows come here for the places (`places`). A row's chunk is decoded only for the results returned.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from ..ranking.fusion import fuse
from ..ranking.places import by_place
from ..ranking.priors import type_weights
from ..ranking.relevance import lexical_coverage, relevances
from ..ranking.settings import SearchSettings
from .loader import ArtifactSet


@dataclass(frozen=True)
class SearchResult:
    id: str
    url: str
    title: str
    learns: tuple[str, ...]
    excerpt: str
    similarity: float
    score: float
    type: str
    material: str
    anchor: str
    source: str = "artifacts"
    # Other places that teach the same concept (same title on another page): id, url, material
    # (and absolute_url when the site's URL is known).
    locations: tuple[dict, ...] = ()
    # `url` on the site's host (manifest site.url + url, percent-encoded); None when the build did
    # not know the site's URL. `url` stays root-relative: v1 promises existing fields keep their meaning.
    absolute_url: str | None = None
    # Calibrated 0..1: how likely this result answers the query at all (ranking/relevance.py);
    # `relevant` is relevance >= SearchSettings.relevance_threshold. All results of an
    # off-topic query are `relevant: false`.
    relevance: float = 0.0
    relevant: bool = False
    # The other chunks of the same place (ranking/places.py: the same url, e.g. a table's other rows), best
    # first: id, url, title, excerpt, score, similarity, relevance, relevant. `k` counts places.
    sub_results: tuple[dict, ...] = ()
    # On a site with versions or languages (site/facets.py): this result's, and the same place in the site's
    # other versions (version, id, url, absolute_url), newest first: one result links to each.
    version: str = ""
    language: str = ""
    other_versions: tuple[dict, ...] = ()

    def to_dict(self) -> dict:
        data = asdict(self)
        data["learns"] = list(self.learns)
        data["locations"] = [dict(x) for x in self.locations]
        data["sub_results"] = [dict(x) for x in self.sub_results]
        data["other_versions"] = [dict(x) for x in self.other_versions]
        for facet in ("version", "language", "other_versions"):  # a site without facets: what it was before
            if not data[facet]:
                del data[facet]
        return data


class Ranker:
    def __init__(self, artifacts: ArtifactSet, settings: SearchSettings):
        self.artifacts = artifacts
        self.settings = settings

    def rank(self, query: str, qvec: np.ndarray | None, fields: dict[str, list[str]],
             channels: dict[str, dict[int, float]], k: int, filters: dict, min_similarity: float | None = None,
             min_relevance: float | None = None, source: str = "artifacts") -> list[SearchResult]:
        """The best `k` places for one query from its channels' rankings ({row: score}; a dense channel's
        scores are cosines). `fields`: the query's lexical tokens, read for relevance's coverage."""
        channels = {name: self.per_kind(scores) for name, scores in channels.items()}
        fused = fuse(channels, self.settings)
        if filters.get("type") is None:
            weights = type_weights(query, self.settings)
            columns = self.artifacts.columns
            types, codes = columns.values["type"], columns.codes["type"]  # no chunk is decoded
            fused = {row: score * weights.get(types[codes[row]], 1.0) for row, score in fused.items()}
        ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))  # rows are in id order
        similar = self.settings.min_similarity if min_similarity is None else min_similarity
        relevant = self.settings.min_relevance if min_relevance is None else min_relevance
        passing = (c for c in self._candidates(ordered, qvec, channels.get("dense", {}), fields)
                   if (similar is None or c[2] >= similar) and (relevant is None or c[3] >= relevant))
        return self.places(passing, k, filters, source)

    def places(self, candidates, k: int, filters: dict, source: str = "artifacts") -> list[SearchResult]:
        """The best `k` places of ranked (row, score, similarity, relevance) candidates as results,
        each with its place's other chunks (ranking/places.py) and the other places of its concept."""
        mixed = filters.get("type") is None and self.artifacts.mixed
        place = self.artifacts.url
        every_version = bool(self.artifacts.versions) and filters.get("version") is None
        if every_version:  # every version: each place once, led by its newest version (ranking/facets.py)
            place = self.artifacts.place_in_every_version
        found = by_place(candidates, lambda c: place(c[0]), k,
                         promote=self._liftable if mixed else None, within=self.settings.part_place)
        if every_version:
            found = [self._newest_first(lead, others) for lead, others in found]
        return [replace(self._result(*lead, source), locations=self.artifacts.locations(lead[0]),
                        sub_results=tuple(self._sub_result(*other) for other in others))
                for lead, others in found]

    def _newest_first(self, lead, others):
        """A place of every version led by the newest version among its candidates (the best of that version)."""
        artifacts = self.artifacts
        newest = min([lead, *others], key=lambda c: artifacts.version_rank.get(  # min keeps the first of equals
            artifacts.columns.facet_of(c[0], "version"), len(artifacts.versions)))
        return (lead, others) if newest is lead else (newest, [lead, *(o for o in others if o is not newest)])

    def per_kind(self, scores: dict[int, float]) -> dict[int, float]:
        """The top `candidates` of each kind group of a channel's ranking (the artifacts' channels take
        them so already; a ranking another store supplied may hold more)."""
        if not self.artifacts.mixed:
            return scores
        parts, most = self.artifacts.parts, self.settings.candidates
        in_parts = int(np.count_nonzero(parts[np.fromiter(scores, dtype=np.int64, count=len(scores))]))
        if in_parts <= most and len(scores) - in_parts <= most:  # the artifacts' own channels: nothing to cut
            return scores
        keep: dict[int, float] = {}
        for part in (False, True):
            group = sorted((r for r in scores if bool(parts[r]) == part), key=lambda r: (-scores[r], r))
            keep.update((r, scores[r]) for r in group[:most])
        return keep

    def _liftable(self, candidate) -> bool:
        """A page part the query is relevant to may be lifted among the first places (ranking/places.py)."""
        row, _, _, relevance = candidate
        return bool(self.artifacts.parts[row]) and relevance >= self.settings.relevance_threshold

    def _candidates(self, ordered, qvec, cosines: dict, fields: dict):
        """(row, score, similarity, relevance) in ranked order; computed a window at a time (the first
        window holds the candidates the query's relevance is judged on). No chunk is decoded here:
        only the results returned become SearchResults."""
        window = max(1, self.settings.relevance_window)
        own = {name: tokens for name, tokens in fields.items() if name in self.settings.relevance_fields}
        query_best = None
        for start in range(0, len(ordered), max(window, 20)):
            batch = ordered[start:start + max(window, 20)]
            rows = [row for row, _ in batch]
            similarities = [self._similarity(row, qvec, cosines.get(row)) for row in rows]
            coverage = lexical_coverage(self.artifacts.postings, own, rows)
            sims = similarities if qvec is not None else [None] * len(rows)
            parts = [bool(self.artifacts.parts[row]) for row in rows]
            scores, query_best = relevances(sims, coverage, self.settings, query_best, parts)
            yield from ((row, score, similarity, relevance)
                        for (row, score), similarity, relevance in zip(batch, similarities, scores))

    def _similarity(self, row: int, qvec: np.ndarray | None, cosine: float | None) -> float:
        """The row's dense cosine clipped to 0..1 and rounded as results show it."""
        if cosine is None:
            norms = self.artifacts.columns.norms
            cosine = float(np.dot(self.artifacts.dense_index.reconstruct(row), qvec)) if qvec is not None else 0.0
            cosine /= float(norms[row]) if norms is not None else 1.0
        # JSON has no NaN: a non-finite number (a broken dense source) reads as no similarity.
        return round(float(np.clip(cosine, 0.0, 1.0)) if np.isfinite(cosine) else 0.0, 6)

    def _result(self, row: int, score: float, similarity: float, relevance: float, source: str) -> SearchResult:
        chunk = self.artifacts.chunks[row]
        score = score if np.isfinite(score) else 0.0
        return SearchResult(id=chunk.id, url=chunk.url, title=chunk.title, learns=chunk.learns,
                            excerpt=chunk.excerpt, similarity=similarity, score=round(score, 6),
                            type=chunk.type, material=chunk.material, anchor=chunk.anchor, source=source,
                            absolute_url=self.artifacts.absolute_url(chunk.url), relevance=relevance,
                            relevant=relevance >= self.settings.relevance_threshold, version=chunk.version,
                            language=chunk.language, other_versions=tuple(self.artifacts.other_versions(chunk)))

    def _sub_result(self, row: int, score: float, similarity: float, relevance: float) -> dict:
        """Another chunk of a result's place (ranking/places.py), as the result lists it in `sub_results`."""
        chunk = self.artifacts.chunks[row]
        return {"id": chunk.id, "url": chunk.url, "title": chunk.title, "excerpt": chunk.excerpt,
                "score": round(score, 6) if np.isfinite(score) else 0.0, "similarity": similarity,
                "relevance": relevance, "relevant": relevance >= self.settings.relevance_threshold}
