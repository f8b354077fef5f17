"""How rankings become one result list: settings, reciprocal rank fusion, type priors.

Every number here was chosen on the dev set (../shared/eval/dev_queries.jsonl over the
reference corpus); docs/retrieval.md has the ablation behind each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..kinds import KINDS

# Words by which a query asks for one kind of box: the same words that name a box's kind.
_INTENT_WORDS = {k.type: k.words for k in KINDS}


FUSIONS = ("dbsf", "rrf")
SECTION_WEIGHT = 0.7
TABLE_WEIGHT = 0.9  # docs/retrieval.md: table_weight sweep with candidates per kind


@dataclass(frozen=True)
class SearchSettings:
    # dbsf: each channel's scores normalised by their own spread (mean ± 3 sd), then a weighted sum;
    # rrf: weighted reciprocal rank fusion. Equal on the dev set; dbsf is better on JSQuAD, where
    # BM25 alone beats rank fusion (docs/retrieval.md).
    fusion: str = "dbsf"
    rrf_k: int = 60
    candidates: int = 100  # how deep each channel's ranking goes into the fusion
    channel_weights: dict = field(default_factory=lambda: {"dense": 1.0, "lexical": 1.5})
    # BM25 fields: readings only help where lemmas differ; kana bigrams catch kana/romaji spellings;
    # page and heading (page + box title, each word once) favour a box whose titles cover the query.
    # kana_terms: readings of nouns and noun runs, matched by the longest known stretches of a
    # query's kana (はんべつしき -> 判別式's ハンベツシキ).
    field_weights: dict = field(default_factory=lambda: {"lemma": 1.0, "reading": 0.15, "kana2": 0.2,
                                                         "kana_terms": 1.0, "page": 0.2, "heading": 0.2})
    # Examples illustrate a rule; a tutor links the rule itself first. Not applied when the
    # query or the type filter asks for examples.
    example_weight: float = 0.5
    # A section or table holds what no box does; when a box and a section both match, the box is
    # what the section merely mentions, so the box comes first. Not applied when the type filter
    # asks for sections or tables (docs/retrieval.md, "Sections and tables").
    section_weight: float = SECTION_WEIGHT
    # A table row that holds the cell a query names has no box competing for it (the box that
    # explains the numbers holds no table of them): tables weigh less lightly than prose sections.
    table_weight: float = TABLE_WEIGHT
    # Where boxes and page parts mix, the best section or table is among the first this many places
    # (places.py; 0: off): the weights above keep a box first when both match, this keeps the prose
    # that may alone hold the answer in view (docs/retrieval.md, "A page part among the first places").
    part_place: int = 3
    # A query that names a kind of box (「公式で解きたい」) lifts that kind among near-ties
    # (no dev metric moves between 1.0 and 1.2).
    intent_boost: float = 1.2
    expand_romaji: bool = True
    expand_english: bool = True
    # Student wording -> textbook terms (knowledge_build/data/thesaurus.yml, plus a site's own file) at query time.
    expand_thesaurus: bool = True
    thesaurus_file: object = None  # a Path of the site's extra thesaurus, or None
    min_similarity: float | None = None  # drop results whose dense cosine is lower (off by default)
    # Relevance (relevance.py): logistic of the dense cosine and the lexical coverage, centred where
    # off-topic questions and correct answers part on the shipped model (multilingual-e5-small);
    # chosen on data/eval/offtopic_queries.jsonl + corpus_queries.jsonl, checked on the held-out
    # off-topic file and the dev set (docs/retrieval.md). Another embedder needs its own centre.
    relevance_cosine_centre: float = 0.84
    # Sections and tables (long page text) reach higher cosines for questions they do not answer
    # (a trivia paragraph that names サッカー): their centre, chosen on the off-topic tuning file
    # and the section queries (docs/retrieval.md, "Relevance with sections"). Another embedder
    # needs its own, like the centre above.
    relevance_part_cosine_centre: float = 0.865
    relevance_cosine_slope: float = 50.0
    relevance_coverage_centre: float = 0.30
    relevance_coverage_slope: float = 10.0
    relevance_window: int = 5  # the query's relevance is its best evidence among this many candidates
    # Lexical coverage is read in the chunk's own text fields: the title fields (page, heading) are
    # a few words long, so one shared word would look like full coverage.
    relevance_fields: tuple = ("lemma", "reading", "kana2", "kana_terms")
    relevance_threshold: float = 0.5  # `relevant` is relevance >= this
    min_relevance: float | None = None  # drop results whose relevance is lower (off by default)


def fuse(channels: dict[str, dict[int, float]], settings: SearchSettings) -> dict[int, float]:
    """One score per candidate row from each channel's {row: score}."""
    if settings.fusion == "rrf":
        return rrf(channels, settings.channel_weights, settings.rrf_k)
    return dbsf(channels, settings.channel_weights)


def rrf(channels: dict[str, dict[int, float]], weights: dict[str, float], k: int) -> dict[int, float]:
    """Weighted reciprocal rank fusion: sum over channels of weight / (k + rank)."""
    fused: dict[int, float] = {}
    for channel, scores in channels.items():
        weight = weights.get(channel, 1.0)
        for rank, row in enumerate(_ranked(scores), start=1):
            fused[row] = fused.get(row, 0.0) + weight / (k + rank)
    return fused


def dbsf(channels: dict[str, dict[int, float]], weights: dict[str, float]) -> dict[int, float]:
    """Distribution-based score fusion: each channel's scores mapped through mean ± 3 sd to 0..1."""
    fused: dict[int, float] = {}
    for channel, scores in channels.items():
        if not scores:
            continue
        values = list(scores.values())
        mean = sum(values) / len(values)
        spread = 6 * (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        low = mean - spread / 2
        weight = weights.get(channel, 1.0)
        for row, value in scores.items():
            fused[row] = fused.get(row, 0.0) + weight * ((value - low) / spread if spread else 1.0)
    return fused


def _ranked(scores: dict[int, float]) -> list[int]:
    return sorted(scores, key=lambda row: (-scores[row], row))


def intended_type(query: str) -> str | None:
    hits = [t for t, words in _INTENT_WORDS.items() if any(w in query for w in words)]
    return hits[0] if len(hits) == 1 else None


def type_priors(settings: SearchSettings) -> dict[str, tuple[float, float]]:
    """THE type-prior table, {type: (weight, weight_when_named)}: the multiplier of a chunk's fused score by
    its type, and the one it gets when the query names its kind (intended_type). Every engine ranks by it:
    the artifacts (type_weights), the box (the bundle carries it, bundle.py) and the database.

    A kind the query names (「公式で解きたい」) is lifted by intent_boost among near-ties. Examples weigh
    example_weight (a tutor links the rule an example illustrates first); a query that asks for examples
    (「たすき掛けの例題」) lifts that demotion to 1 and adds no boost, as docs/retrieval.md states the priors
    (the boosted kinds are 公式/定理, 解き方/手順, とは/定義, コツ/注意) and as the artifacts and the box
    ranked: the database's ×1.2 for a named example was its CASE falling through to its intent branch.
    Sections and tables are named by no words (kinds.py): their weight holds either way."""
    boost = settings.intent_boost
    table = {kind.type: (1.0, boost if kind.words else 1.0) for kind in KINDS}
    table.update(example=(settings.example_weight, 1.0),
                 section=(settings.section_weight, settings.section_weight),
                 table=(settings.table_weight, settings.table_weight))
    return table


def type_weights(query: str, settings: SearchSettings) -> dict[str, float]:
    """Multipliers of the fused score by chunk type for this query (type_priors; a type missing here weighs 1)."""
    wanted = intended_type(query)
    return {type_: named if type_ == wanted else weight for type_, (weight, named) in type_priors(settings).items()}


def type_priors_sql_values(settings: SearchSettings) -> str:
    """The type-prior table as the rows of an SQL VALUES list, `('rule', 1.0, 1.2), …` (type, weight,
    weight_when_named): what the database's priors read, rendered from type_priors as the other constants are."""
    return ", ".join(f"('{type_}', {float(weight)!r}, {float(named)!r})"
                     for type_, (weight, named) in type_priors(settings).items())
