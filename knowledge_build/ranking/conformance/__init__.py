"""The conformance corpus: ranking/conformance/*.jsonl, one case a line, that every engine passes.

A case: {"rule": …, "input": …, "expected": …, "engines": [the engines `expected` holds for]}, and when an
engine deliberately differs, "differs": {engine: {"expected": what it gives, "reason": why}}. Every engine
that implements the rule (RULE_ENGINES) is named in one or the other, so a difference nobody declared fails.
"drift" marks a case that an engine failed before issue 39 made the rule one; "note" says more.

Engines: "artifacts" (Python: search/, ranking/, text/ja.py), "box" (knowledge-search.js, run by node in
tests/test_conformance_js.py, and its Python mirror browser/analysis.py, browser/search.py) and "database"
(the SQL functions). Runners: tests/test_conformance.py (artifacts and the box's mirror),
tests/test_conformance_js.py (the box under node), tests/test_conformance_sql.py (the database: migrated on the
test server, never published), which runs `cases_for("database")` through the SQL function that implements
each rule (store/functions/*.sql): romaji: knowledge_romaji per [a-z]+ word of knowledge_fold, read together;
fold and numerals: knowledge_fold (its knowledge_numerals); type_weight: knowledge_type_weight with
knowledge_intended_type; fusion: knowledge_fused per channel, summed; relevance: knowledge_evidence,
knowledge_best_evidence, knowledge_relevance; places and facet_defaults: none in SQL (SQL_ELSEWHERE says which engine serves them).

Rules and inputs:
- romaji: text -> the katakana of its romaji words read together ("" when none);
- fold: text -> the engine's folded text; numerals: text of kanji numerals -> the same with each run as
  its number; lemmas: text -> the artifacts' lemma tokens; query_texts: {query, thesaurus, english} -> the
  box's query texts;
- type_weight: {type, query} -> the multiplier of a chunk's score (priors.type_priors);
- fusion: {method (dbsf | rrf), channels {name: {row: score}}, weights, k} -> {row: fused score};
- relevance: {cosines (null: no vector), coverage, parts} -> {relevance: per candidate, best: the query's};
- places: {ranked: [[item, place], …] best first, k} -> the items that lead the first k places;
- facet_defaults: {query, versions (newest first), languages, version, language (null: not given)} -> the
  {version, language} the question is answered from (null: no filter; ranking/facets.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

HERE = Path(__file__).parent
ENGINES = ("artifacts", "box", "database")
RULE_ENGINES = {
    "romaji": ENGINES, "fold": ENGINES, "numerals": ("box", "database"), "lemmas": ("artifacts",),
    "query_texts": ("box",), "type_weight": ENGINES, "fusion": ENGINES,
    "relevance": ("artifacts", "database"), "places": ENGINES, "facet_defaults": ENGINES,
}

# The database's rules that no SQL function of its own serves, each with the engine that serves it there:
# the database runner (tests/test_conformance_sql.py) leaves them out and says so.
SQL_ELSEWHERE = {
    "places": "search_knowledge returns ranked rows; one result per place is SearchService's (ranking/places.py, "
              "the artifacts' function), run on the database's rows",
    "facet_defaults": "search_knowledge filters by the version and language it is given; SearchService resolves "
                      "the defaults (ranking/facets.py default_facets) before it calls the function",
}


def load() -> list[dict]:
    """Every case, with `where` (file:line) added."""
    cases = []
    for path in sorted(HERE.glob("*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                cases.append({**json.loads(line), "where": f"{path.name}:{number}"})
    return cases


def expected_for(case: dict, engine: str):
    """What `engine` must give for `case`: its declared difference, else the case's expected value."""
    declared = case.get("differs", {}).get(engine)
    return declared["expected"] if declared else case["expected"]


def cases_for(engine: str) -> list[dict]:
    """The cases an engine runs: those of the rules it implements."""
    return [c for c in load() if engine in RULE_ENGINES[c["rule"]]]


def matches(got, expected) -> bool:
    """Equal, numbers to 1e-9 (relative) at any depth."""
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and isinstance(got, (int, float)):
        return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, dict) and isinstance(got, dict):
        return got.keys() == expected.keys() and all(matches(got[k], expected[k]) for k in expected)
    if isinstance(expected, list) and isinstance(got, list):
        return len(got) == len(expected) and all(map(matches, got, expected))
    return got == expected
