"""Calibrated relevance: how likely a result answers the query at all, 0..1.

The dense cosine alone cannot say "nothing relevant": e5's cosines sit between 0.75 and 0.94 for
everything, and off-topic questions overlap the correct answers (docs/retrieval.md, "Off-topic
queries"). Two pieces of evidence are combined instead, both independent of the fused score
(which moves with every ranking change):

- the result's dense cosine, against a centre measured on the shipped model;
- its lexical coverage: the chunk's BM25 score for the query's distinct tokens (each capped at the
  token's idf) over the idf the query could reach (a token the site never uses counts with the
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


def lexical_coverage(models: dict, fields: dict[str, list[str]], rows: list[int], n_docs: int) -> np.ndarray:
    """Per row: the highest, over fields, of the chunk's BM25 score for the query's distinct tokens
    (each capped at the token's idf) over the sum of those tokens' idfs."""
    best = np.zeros(len(rows))
    where = {row: i for i, row in enumerate(rows)}
    for name, tokens in fields.items():
        model = models.get(name)
        distinct = [t for t in dict.fromkeys(tokens) if t]
        if model is None or not distinct:
            continue
        found, total = np.zeros(len(rows)), 0.0
        indptr, indices, data = model.scores["indptr"], model.scores["indices"], model.scores["data"]
        for token in distinct:
            column = model.vocab_dict.get(token)
            if column is None or column + 1 >= len(indptr):
                total += idf(0, n_docs)
                continue
            start, end = int(indptr[column]), int(indptr[column + 1])
            weight = idf(end - start, n_docs)
            total += weight
            for doc, score in zip(indices[start:end], data[start:end]):
                i = where.get(int(doc))
                if i is not None:
                    found[i] += min(float(score), weight)
        if total:
            best = np.maximum(best, found / total)
    return best


def relevances(cosines: list[float | None], coverage: np.ndarray, settings,
               query_best: float | None = None) -> tuple[list[float], float]:
    """Relevance of each candidate, in ranked order, and the query's best evidence (taken from the
    first `relevance_window` candidates unless given: later batches pass it back). A missing cosine
    (no query vector: the lexical channel answered alone) is taken at the centre, so coverage decides."""
    evidence = []
    for cosine, covered in zip(cosines, coverage):
        z = settings.relevance_coverage_slope * (float(covered) - settings.relevance_coverage_centre)
        if cosine is not None:
            z += settings.relevance_cosine_slope * (cosine - settings.relevance_cosine_centre)
        evidence.append(1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))))
    if query_best is None:
        query_best = max(evidence[:max(1, settings.relevance_window)], default=0.0)
    return [round((own + query_best) / 2, 6) for own in evidence], query_best
