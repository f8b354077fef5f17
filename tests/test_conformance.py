"""The conformance corpus (knowledge_build/ranking/conformance) through the Python engines: the artifacts (search/,
text/ja.py) and the search box's Python mirror (browser/analysis.py, browser/search.py). The box's own
JavaScript runs the same cases under node (tests/test_conformance_js.py)."""

import pytest

from knowledge_build.browser import analysis, bundle
from knowledge_build.browser import search as box_search
from knowledge_build.kinds import TYPES
from knowledge_build.ranking import fusion, priors
from knowledge_build.ranking.settings import SearchSettings
from knowledge_build.ranking.facets import default_facets
from knowledge_build.ranking.places import by_place
from knowledge_build.ranking.relevance import relevances
from knowledge_build.text import ja

from knowledge_build.ranking.conformance import ENGINES, RULE_ENGINES, cases_for, expected_for, load, matches


def _katakana(text: str) -> str:
    return "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in text)


def _rows(scores: dict) -> dict:
    return {str(row): value for row, value in sorted(scores.items())}


def _fusion(case: dict) -> dict:
    channels = {name: {int(r): v for r, v in scores.items()} for name, scores in case["channels"].items()}
    if case["method"] == "rrf":
        return _rows(fusion.rrf(channels, case["weights"], case["k"]))
    return _rows(fusion.dbsf(channels, case["weights"]))


def _relevance(case: dict) -> dict:
    found, best = relevances(case["cosines"], case["coverage"], SearchSettings(), parts=case["parts"])
    return {"relevance": found, "best": best}


ARTIFACTS = {
    "romaji": lambda text: _katakana("".join(ja.expansions(text, {}))),
    "fold": ja.normalize,
    "lemmas": lambda text: ja.analyze(text)["lemma"],
    "type_weight": lambda case: priors.type_weights(case["query"], SearchSettings())[case["type"]],
    "fusion": _fusion,
    "relevance": _relevance,
    "places": lambda case: [lead[0] for lead, _ in by_place(case["ranked"], lambda item: item[1], case["k"])],
    "facet_defaults": lambda case: default_facets({"version": case["version"], "language": case["language"]},
                                                  case["query"], case["versions"], case["languages"]),
}
BOX_PYTHON = {
    "romaji": analysis.romaji_kana,
    "fold": analysis.fold,
    "numerals": analysis.fold,
    "query_texts": lambda case: analysis.query_texts(case["query"], case["thesaurus"], case["english"]),
    "type_weight": lambda case: box_search.type_weights(case["query"], {"types": bundle.type_entries(list(TYPES))})[
        TYPES.index(case["type"])],
    "places": lambda case: [item[0] for item in box_search.leads_by_place(case["ranked"], lambda item: item[1], case["k"])],
    "fusion": _fusion,  # the box's mirror (browser/search.py) fuses with ranking/fusion.py's functions
    "facet_defaults": ARTIFACTS["facet_defaults"],  # the box's mirror (browser/search.py) calls default_facets
}
RUNNERS = {"artifacts": ARTIFACTS, "box": BOX_PYTHON}


def test_the_corpus_holds_at_least_250_cases_and_every_rule():
    cases = load()
    assert len(cases) >= 250
    assert {c["rule"] for c in cases} == set(RULE_ENGINES)


def test_every_case_names_each_engine_of_its_rule_or_declares_its_difference():
    """An engine left out of a case would be a difference nobody declared."""
    for case in load():
        engines, differs = set(case["engines"]), set(case.get("differs", {}))
        assert engines and engines <= set(ENGINES) and not engines & differs, case["where"]
        assert engines | differs == set(RULE_ENGINES[case["rule"]]), case["where"]
        assert all(d.get("reason") for d in case.get("differs", {}).values()), case["where"]


def test_the_three_drifts_of_issue_39_are_cases():
    drifts = {(c["rule"], str(c["input"])) for c in load() if c.get("drift")}
    assert {("romaji", "tanni"), ("numerals", "二十三"), ("lemmas", "二十三")} <= drifts
    assert any(c["rule"] == "type_weight" and c["input"] == {"type": "example", "query": "たすき掛けの例題"}
               and c["expected"] == 1.0 and c.get("drift") for c in load())


@pytest.mark.parametrize("engine", ["artifacts", "box"])
def test_the_python_engines_pass_the_corpus(engine):
    runner, failed = RUNNERS[engine], []
    cases = cases_for(engine)
    for case in cases:
        got = runner[case["rule"]](case["input"])
        if not matches(got, expected_for(case, engine)):
            failed.append(f"{case['where']} {case['rule']} {case['input']!r}: got {got!r}, "
                          f"expected {expected_for(case, engine)!r}")
    assert not failed, f"{len(failed)} of {len(cases)} cases:\n" + "\n".join(failed)


def test_the_sql_renderings_hold_the_same_tables():
    """What the database receives (romaji_sql_values, type_priors_sql_values) is the tables Python reads."""
    import json

    from knowledge_build.text.romaji import hiragana, romaji_sql_values, syllables

    rendered = romaji_sql_values()
    assert rendered.startswith("'") and rendered.endswith("'::jsonb")
    value = json.loads(rendered[1:-len("'::jsonb")].replace("''", "'"))
    assert value["syllables"] == {k: hiragana(v) for k, v in syllables().items()} and value["n"] == "ん"
    assert value["sokuon"] == "っ" and value["vowels"] == "aiueo"
    rows = priors.type_priors_sql_values(SearchSettings())
    assert rows.count("(") == len(TYPES) and "('example', 0.5, 1.0)" in rows and "('rule', 1.0, 1.2)" in rows
