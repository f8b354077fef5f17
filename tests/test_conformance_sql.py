"""The conformance corpus (knowledge_build/ranking/conformance) through the database's own SQL functions on the test
PostgreSQL server, migrated and never published: each rule the database implements is run by the function
that implements it in search_knowledge (knowledge_build/ranking/conformance's docstring names them), not by a Python copy of it."""

import psycopg
import pytest

from knowledge_build.store.postgres import connect, migrate

from knowledge_build.ranking.conformance import SQL_ELSEWHERE, cases_for, expected_for, matches

pytestmark = pytest.mark.db

DIM = 64


def _katakana(text: str) -> str:
    return "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in text)


def _romaji(conn, text: str) -> str:
    """Each [a-z]+ word of the folded text read by knowledge_romaji, together (as knowledge_query_terms reads
    a query's romaji words; a word it does not read adds nothing)."""
    kana = conn.execute("select coalesce(string_agg(knowledge_romaji(w[1]), '' order by o), '')"
                        " from regexp_matches(knowledge_fold(%s), '[a-z]+', 'g') with ordinality as m(w, o)",
                        (text,)).fetchone()[0]
    return _katakana(kana)


def _fold(conn, text: str) -> str:
    return conn.execute("select knowledge_fold(%s)", (text,)).fetchone()[0]


def _type_weight(conn, case: dict) -> float:
    return conn.execute("select knowledge_type_weight(%s, knowledge_intended_type(%s), false)",
                        (case["type"], case["query"])).fetchone()[0]


def _fusion(conn, case: dict) -> dict:
    """knowledge_fused per channel, summed as search_knowledge sums them."""
    parts = " union all ".join(
        "select f.num, f.value from knowledge_fused(%s, %s, %s, %s::int[], %s::float8[]) as f" for _ in case["channels"])
    params = []
    for name, scores in case["channels"].items():
        rows = sorted(scores, key=int)
        params += [case["method"], float(case["weights"].get(name, 1.0)), int(case["k"]), [int(r) for r in rows],
                   [float(scores[r]) for r in rows]]
    found = conn.execute(f"select x.num, sum(x.value) from ({parts}) as x group by x.num order by x.num",
                         params).fetchall()
    return {str(num): value for num, value in found}


def _relevance(conn, case: dict) -> dict:
    """knowledge_evidence per candidate, knowledge_best_evidence of them in ranked order, knowledge_relevance."""
    found = conn.execute(
        "with e as (select o, knowledge_evidence(c, v, p) as own"
        "           from unnest(%s::float8[], %s::float8[], %s::boolean[]) with ordinality as u(c, v, p, o)),"
        " b as (select knowledge_best_evidence(array(select e.own from e order by e.o)) as best)"
        " select array_agg(knowledge_relevance(e.own, b.best) order by e.o), min(b.best) from e, b",
        (case["cosines"], case["coverage"], case["parts"])).fetchone()
    return {"relevance": found[0] or [], "best": found[1] if found[1] is not None else 0.0}


SQL = {"romaji": _romaji, "fold": _fold, "numerals": _fold, "type_weight": _type_weight, "fusion": _fusion,
       "relevance": _relevance}


@pytest.fixture
def functions_db(fresh_db):
    """A database migrated (its function files applied) and never published."""
    with connect(fresh_db) as conn:
        migrate(conn, DIM)
    return fresh_db


def test_the_database_passes_the_corpus(functions_db):
    cases = [c for c in cases_for("database") if c["rule"] not in SQL_ELSEWHERE]
    assert len(cases) > 300 and {c["rule"] for c in cases} == set(SQL)
    failed = []
    with psycopg.connect(functions_db, autocommit=True) as conn:
        for case in cases:
            try:
                got = SQL[case["rule"]](conn, case["input"])
            except psycopg.Error as exc:
                got = f"error: {str(exc).strip().splitlines()[0]}"
            if not matches(got, expected_for(case, "database")):
                failed.append(f"{case['where']} {case['rule']} {case['input']!r}: got {got!r}, "
                              f"expected {expected_for(case, 'database')!r}")
    assert not failed, f"{len(failed)} of {len(cases)} cases:\n" + "\n".join(failed)


def test_search_knowledge_weighs_its_rows_by_knowledge_type_weight(published_db):
    """The runner's functions are the ones the RPC ranks with: replaced in a copy of a published database,
    knowledge_type_weight changes search_knowledge's scores (examples to 0, the rest unweighted)."""
    call = "select id, type, score from search_knowledge(query_text => %s, match_count => 200)"
    with psycopg.connect(published_db, autocommit=True) as conn:
        before = {i: (t, s) for i, t, s in conn.execute(call, ("たすき掛けの例題",))}
        conn.execute("create or replace function knowledge_type_weight(chunk_type text, intended text, filtered boolean)"
                     " returns float8 language sql immutable as $$ select (chunk_type <> 'example')::int::float8 $$")
        after = {i: (t, s) for i, t, s in conn.execute(call, ("たすき掛けの例題",))}
    examples = [i for i, (t, _) in before.items() if t == "example"]
    rules = [i for i, (t, _) in before.items() if t == "rule" and i in after]
    assert examples and rules
    assert any(i in after for i in examples) and all(after[i][1] == 0 for i in examples if i in after)
    assert all(after[i][1] == pytest.approx(before[i][1], abs=2e-6) for i in rules)
