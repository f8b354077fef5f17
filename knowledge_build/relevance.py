"""Calibrated relevance: how likely a result answers the query at all, 0..1.

The dense cosine alone cannot say "nothing relevant": e5's cosines sit between 0.75 and 0.94 for
everything, and off-topic questions overlap the correct answers (docs/retrieval.md, "Off-topic
queries"). Two pieces of evidence are combined instead, both independent of the fused score
(which moves with every ranking change):

- the result's dense cosine, against a centre measured on the shipped model;
- its lexical coverage: the chunk's BM25 score for the query's distinct tokens (each capped at the
  token's idf) over the idf the query could reach, with idf and mean length taken from the anchored
  boxes the calibration was made on (CoverageReference) (a token the site never uses counts with the
  highest idf), in the field where it is highest (lemma, reading or kana bigrams), so that
  kana-only, romaji and English queries that the dense model reads poorly still count. BM25
  saturates: a chunk holding each token once in a chunk of average length reaches about 0.4.

A result's own evidence is a logistic of both; its relevance is the mean of that and the best
evidence among the query's first few candidates, so an off-topic query marks every result low and
a weaker answer to an on-topic query is not judged alone. Every constant is in SearchSettings.
"""

from __future__ import annotations

import math

import numpy as np


def idf(df: int, n_docs: int) -> float:
    """BM25 (Lucene) idf of a token found in `df` of `n_docs` documents."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


class CoverageReference:
    """The population lexical coverage is measured against: the chunks of the kinds relevance was
    calibrated on (anchored boxes; every chunk when there is none). Its document frequencies and
    mean length are those of that population, and any chunk's term frequencies are scored against
    them with the BM25 (Lucene) the lexical channel uses: adding sections and tables to an index
    (long texts, 700 more documents) then leaves a box's coverage what it was without them, and a
    long section is saturated by its length against the boxes' mean length, not a mean it raised."""

    K1, B = 1.5, 0.75  # bm25s's defaults, which search.bm25_models uses

    def __init__(self, fields: dict[str, list[list[str]]], reference: list[bool]):
        self._docs = fields
        self._rows = [row for row, in_reference in enumerate(reference) if in_reference] or list(range(len(reference)))
        self._stats: dict[str, tuple[dict[str, int], float]] = {}

    @property
    def size(self) -> int:
        return len(self._rows)

    def stats(self, name: str) -> tuple[dict[str, int], float]:
        """(document frequency per token, mean length) of the reference chunks in this field."""
        if name not in self._stats:
            df: dict[str, int] = {}
            total = 0
            for row in self._rows:
                tokens = _tokens(self._docs[name][row])
                total += max(1, len(tokens))  # bm25s indexes an empty document as one placeholder token
                for token in set(tokens):
                    df[token] = df.get(token, 0) + 1
            self._stats[name] = (df, total / max(1, len(self._rows)))
        return self._stats[name]

    def saturation(self, name: str, row: int, tokens: list[str]) -> dict[str, float]:
        """BM25 (Lucene) term-frequency part of each token in this chunk, against the reference length."""
        doc = _tokens(self._docs[name][row])
        counts = {t: 0 for t in tokens}
        for token in doc:
            if token in counts:
                counts[token] += 1
        norm = self.K1 * (1 - self.B + self.B * max(1, len(doc)) / self.stats(name)[1])
        return {t: tf / (tf + norm) for t, tf in counts.items() if tf}  # bm25s's Lucene: no (k1 + 1)


def _tokens(doc: list[str]) -> list[str]:
    return [t for t in doc if t and t != "\x00"]  # as search._bm25 indexes them


def lexical_coverage(reference: CoverageReference, fields: dict[str, list[str]], rows: list[int]) -> np.ndarray:
    """Per row: the highest, over fields, of the chunk's BM25 score for the query's distinct tokens
    (each capped at the token's idf) over the sum of those tokens' idfs; idf and length are the
    reference population's (a token it never uses counts with the highest idf)."""
    best = np.zeros(len(rows))
    n_docs = reference.size
    for name, tokens in fields.items():
        distinct = [t for t in dict.fromkeys(tokens) if t]
        if name not in reference._docs or not distinct:
            continue
        df = reference.stats(name)[0]
        weights = {t: idf(df.get(t, 0), n_docs) for t in distinct}
        total = sum(weights.values())
        if not total:
            continue
        found = np.array([sum(weights[t] * min(1.0, sat) for t, sat in reference.saturation(name, row, distinct).items())
                          for row in rows])
        best = np.maximum(best, found / total)
    return best


def relevances(cosines: list[float | None], coverage: np.ndarray, settings,
               query_best: float | None = None, parts: list[bool] | None = None) -> tuple[list[float], float]:
    """Relevance of each candidate, in ranked order, and the query's best evidence (taken from the
    first `relevance_window` candidates unless given: later batches pass it back). A missing cosine
    (no query vector: the lexical channel answered alone) is taken at the centre, so coverage decides.
    `parts` marks section/table candidates, whose cosine is read against their own centre."""
    evidence = []
    parts = parts or [False] * len(cosines)
    for cosine, covered, part in zip(cosines, coverage, parts):
        z = settings.relevance_coverage_slope * (float(covered) - settings.relevance_coverage_centre)
        if cosine is not None:
            centre = settings.relevance_part_cosine_centre if part else settings.relevance_cosine_centre
            z += settings.relevance_cosine_slope * (cosine - centre)
        evidence.append(1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))))
    if query_best is None:
        query_best = max(evidence[:max(1, settings.relevance_window)], default=0.0)
    return [round((own + query_best) / 2, 6) for own in evidence], query_best
