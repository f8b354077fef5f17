"""The ranking's settings and limits: every number the engines rank with, in one place.

Every number here was chosen on the dev set (../shared/eval/dev_queries.jsonl over the reference corpus);
docs/retrieval.md has the ablation behind each. The artifacts engine (search/) reads SearchSettings as it is;
the database (store/) receives the same numbers rendered into its functions (store/lexical.py's sql_tokens);
the search box (browser/) receives them in its bundle's entry point. Where an engine reads the text through
fields of its own, its field weights are here too, each with why it differs (DATABASE_* and BOX_* below).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import QueryTooLong

FUSIONS = ("dbsf", "rrf")
SECTION_WEIGHT = 0.7
TABLE_WEIGHT = 0.9  # docs/retrieval.md: table_weight sweep with candidates per kind
# A question, not a document: longer queries are refused (QueryTooLong) before any work is done, by every
# engine (the database's functions receive the number; the box's MAX_QUERY is held to it by a test).
MAX_QUERY_CHARS = 2_000
# The most rows one call of the database's hybrid RPC returns (the functions refuse more).
MAX_MATCH_COUNT = 200
K1, B = 1.5, 0.75  # BM25 (Lucene), bm25s's defaults: every engine's lexical channel and relevance's coverage


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


def check_query(query: str | None) -> str:
    """The stripped query; QueryTooLong over MAX_QUERY_CHARS."""
    query = (query or "").strip()
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLong(len(query), MAX_QUERY_CHARS)
    return query


# Each engine's lexical fields and their BM25 weights. The artifacts read words (SearchSettings.field_weights:
# lemmas, readings, kana bigrams, kana terms, titles); the two engines that cannot run the tokenizer at query
# time read other fields, so their weights are their own, chosen on the dev set through that engine
# (docs/retrieval.md):
# - the database (SQL alone at query time): character bigrams of the folded text `t`, of the titles `h`, of
#   the kana reading `k`, the noun readings `r`, the site's words `w` (store/lexical.py);
#   its lexical channel weighs DATABASE_LEXICAL_WEIGHT in the fusion (the artifacts' 1.5: bigrams are not words);
# - the box (the student's browser, no tokenizer): the body's vocabulary pieces, its reading and the titles
#   (browser/bundle.py; docs/retrieval.md, "The search box").
DATABASE_FIELD_WEIGHTS = {"t": 0.7, "h": 0.4, "k": 0.8, "r": 1.0, "w": 1.0}
DATABASE_LEXICAL_WEIGHT = 1.0
DATABASE_FUSION = "dbsf"  # or "rrf" (fusion.py's two; docs/retrieval.md compares them through the RPC)
# Relevance's lexical coverage read in the bigram fields (whose coverage of a matching chunk differs from the
# word fields'): its centre, chosen on the off-topic tuning file (docs/retrieval.md).
DATABASE_COVERAGE_CENTRE = 0.30
MAX_WORD = 8  # the longest stretch of a query looked up as one of the site's words (field w)
# A query term held by more than COMMON_SHARE of the chunks, and by more than COMMON_FLOOR of them, is
# not scored (unless it is among the MIN_TERMS rarest of the query): its posting list is most of the
# RPC's work on a large site (docs/benchmarks.md, "The database at 100,000 chunks"). The floor leaves a
# site of up to COMMON_FLOOR chunks (the reference corpus, JSQuAD) scored in full.
COMMON_SHARE = 0.05
COMMON_FLOOR = 5000
MIN_TERMS = 3
# not k: the reading bigrams of a query's particles and endings cover anything
DATABASE_COVERAGE_FIELDS = ("t", "w", "r")
BOX_FIELD_WEIGHTS = {"body": 1.0, "reading": 1.0, "title": 0.5}
