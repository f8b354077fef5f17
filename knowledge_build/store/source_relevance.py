"""Relevance of web-source results: the site's calibrated 0..1 (ranking/relevance.py `relevances`),
with the lexical coverage measured against the source store's own chunks.

The site's coverage reads its postings; the store keeps its chunks' tokens (a JSON column) and, per
backend, how many chunks hold each token (SQLite: knowledge_source_terms; Postgres: its GIN index
over the field-marked lexemes). So the same BM25 coverage is computed here in Python over the
candidates' own tokens, with idf from the store's document frequencies and the field's mean length
over every stored chunk: the store is its own reference population, as a site's index is its own.
Web chunks are sections and tables, so their cosines are read against the parts' centre.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..ranking.relevance import field_coverage, idf, relevances


@dataclass(frozen=True)
class StoreStatistics:
    """What coverage needs of the store: chunks, mean tokens per field, chunks holding each token."""
    chunks: int
    mean_length: dict[str, float]
    df: dict[tuple[str, str], int] = field(default_factory=dict)  # (field, token) -> chunks


def coverage(query: dict[str, list[str]], candidates: list[dict], stats: StoreStatistics) -> np.ndarray:
    """Per candidate (its tokens by field): the highest, over the query's fields, of the chunk's BM25
    score for the query's distinct tokens, each capped at the token's idf, over the sum of those idfs
    (relevance.lexical_coverage's measure; a token the store never holds counts with the highest idf)."""
    best = np.zeros(len(candidates))
    for name, tokens in query.items():
        distinct = [t for t in dict.fromkeys(tokens) if t]
        mean = stats.mean_length.get(name) or 0.0
        if not distinct or not candidates or not mean:
            continue
        weights = {t: idf(stats.df.get((name, t), 0), stats.chunks) for t in distinct}
        counts = [Counter(candidate.get(name) or []) for candidate in candidates]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        found = field_coverage(weights, lengths, mean,
                               lambda token: np.array([c[token] for c in counts], dtype=np.float64))
        best = np.maximum(best, found)
    return best


def scored(order: list, rows: dict, cosine: dict, query: dict[str, list[str]], statistics, settings):
    """(row id, relevance) for the ranked candidate ids `order`, a window at a time (the first window
    holds the candidates the query's relevance is judged on, relevance.relevances). `statistics(query)`
    gives the store's StoreStatistics, asked for once, when the first window is scored."""
    own = {name: tokens for name, tokens in query.items() if name in settings.relevance_fields}
    step = max(settings.relevance_window, 20)
    stats, query_best = None, None
    for start in range(0, len(order), step):
        batch = order[start:start + step]
        stats = stats or statistics(own)
        found = coverage(own, [_tokens(rows[i]["tokens"]) for i in batch], stats)
        sims = [float(np.clip(cosine[i], 0.0, 1.0)) for i in batch]
        scores, query_best = relevances(sims, found, settings, query_best, [True] * len(batch))
        yield from zip(batch, scores)


def _tokens(stored) -> dict[str, list[str]]:
    """A candidate's tokens by field: SQLite hands over its JSON text unread, since only the
    candidates that get scored (usually the first window of the ~200) need it; Postgres, a dict."""
    return json.loads(stored) if isinstance(stored, str) else stored
