"""Type priors and intent: THE table of how much each kind of chunk weighs, as data, and the words by
which a query names a kind. The artifacts apply it (type_weights), the box receives it in its bundle, the
database's knowledge_type_weight receives it rendered (type_priors_sql_values)."""

from __future__ import annotations

from ..kinds import KINDS
from .settings import SearchSettings

# Words by which a query asks for one kind of box: the same words that name a box's kind.
_INTENT_WORDS = {k.type: k.words for k in KINDS}


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
