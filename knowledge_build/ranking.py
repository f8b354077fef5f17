"""How rankings become one result list: settings, reciprocal rank fusion, type priors.

Every number here was chosen on the dev set (../shared/eval/dev_queries.jsonl over the
reference corpus); docs/retrieval.md has the ablation behind each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPES = ("rule", "method", "definition", "example", "tip")
# Words by which a query asks for one kind of box (the same cues as the id prefixes).
_INTENT_WORDS = {
    "rule": ("公式", "定理", "法則", "性質"),
    "method": ("解き方", "やり方", "方法", "手順"),
    "definition": ("とは", "意味", "定義"),
    "tip": ("コツ", "ポイント", "注意", "間違"),
    "example": ("例題", "例を"),
}


@dataclass(frozen=True)
class SearchSettings:
    rrf_k: int = 60
    candidates: int = 100  # how deep each channel's ranking goes into the fusion
    channel_weights: dict = field(default_factory=lambda: {"dense": 1.0, "lexical": 1.0})
    # BM25 fields: readings only help where lemmas differ; kana bigrams catch kana/romaji spellings.
    field_weights: dict = field(default_factory=lambda: {"lemma": 1.0, "reading": 0.15, "kana2": 0.2})
    # Examples illustrate a rule; a tutor links the rule itself first. Not applied when the
    # query or the type filter asks for examples.
    example_weight: float = 0.5
    # A query that names a kind of box (「公式で解きたい」) lifts that kind among near-ties.
    intent_boost: float = 1.1
    expand_romaji: bool = True
    expand_english: bool = True
    min_similarity: float | None = None  # drop results whose dense cosine is lower (off by default)


def rrf(rankings: dict[str, list[int]], weights: dict[str, float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: sum over channels of weight / (k + rank)."""
    fused: dict[int, float] = {}
    for channel, ranking in rankings.items():
        weight = weights.get(channel, 1.0)
        for rank, row in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + weight / (k + rank)
    return fused


def intended_type(query: str) -> str | None:
    hits = [t for t, words in _INTENT_WORDS.items() if any(w in query for w in words)]
    return hits[0] if len(hits) == 1 else None


def type_weights(query: str, settings: SearchSettings) -> dict[str, float]:
    """Multipliers of the fused score by chunk type for this query."""
    weights = dict.fromkeys(TYPES, 1.0)
    wanted = intended_type(query)
    if wanted != "example":
        weights["example"] = settings.example_weight
    if wanted not in (None, "example"):
        weights[wanted] = settings.intent_boost
    return weights
