"""Calibrated relevance: how likely a result answers the query at all, 0..1.

The dense cosine alone cannot say "nothing relevant": e5's cosines sit between 0.75 and 0.94 for
everything, and off-topic questions overlap the correct answers (docs/retrieval.md, "Off-topic
queries"). Two pieces of evidence are combined instead, both independent of the fused score
(which moves with every ranking change):

- the result's dense cosine, against a centre measured on the shipped model;
- its lexical coverage: the chunk's BM25 score for the query's distinct tokens (each capped at the
  token's idf) over the idf the query could reach, with idf and mean length taken from the anchored
  boxes the calibration was made on (the postings' reference rows) (a token the site never uses counts with the
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

from .settings import B, K1


def idf(df: int, n_docs: int) -> float:
    """BM25 (Lucene) idf of a token found in `df` of `n_docs` documents."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def lexical_coverage(postings, fields: dict[str, list[str]], rows: list[int]) -> np.ndarray:
    """Per row: the highest, over fields, of the chunk's BM25 score for the query's distinct tokens
    (each capped at the token's idf) over the sum of those tokens' idfs. Idf and mean length are those
    of the reference population (`postings.reference`: the anchored boxes relevance was calibrated on,
    every chunk when there is none), so adding sections and tables (long texts, 700 more documents)
    leaves a box's coverage what it was without them; a token the site never uses counts with the
    highest idf. BM25 (Lucene) saturation, as the lexical channel's, without (k1 + 1)."""
    rows = np.asarray(rows, dtype=np.int64)
    best = np.zeros(len(rows))
    n_docs = postings.n_reference
    for name, tokens in fields.items():
        distinct = [t for t in dict.fromkeys(tokens) if t]
        if name not in postings.fields or not distinct or not len(rows):
            continue
        weights = {t: idf(postings.reference_df(name, t), n_docs) for t in distinct}
        found = field_coverage(weights, postings.row_length(name, rows), postings.reference_mean_length(name),
                               lambda token: postings.term_frequencies(name, token, rows))
        best = np.maximum(best, found)
    return best


def field_coverage(weights: dict[str, float], lengths: np.ndarray, mean_length: float, tf_of) -> np.ndarray:
    """One field's coverage of each of a few chunks (`lengths`: their token counts in the field):
    the BM25 (Lucene) saturation of each token, without (k1 + 1), weighted by its idf (`weights`,
    distinct tokens), over the sum of the weights; `tf_of(token)` is the token's count in each chunk.
    The site's index (lexical_coverage) and the web-source store (store/source_relevance.py) both
    measure with it."""
    found = np.zeros(len(lengths))
    total = sum(weights.values())
    if not total:
        return found
    norm = K1 * (1 - B + B * np.asarray(lengths, dtype=np.float64) / mean_length)
    for token, weight in weights.items():
        tf = tf_of(token)
        found += weight * np.minimum(1.0, tf / (tf + norm))
    return found / total


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
