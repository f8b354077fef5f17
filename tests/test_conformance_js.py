"""The conformance corpus (knowledge_build/ranking/conformance) through the search box's own JavaScript
(knowledge_build/browser/static/knowledge-search.js), imported by a real `node` (no browser): the cases of
the rules the box implements, with the romaji table and the type-prior table the bundle ships it."""

import json
import os
import subprocess

from knowledge_build.browser import bundle
from knowledge_build.kinds import TYPES
from knowledge_build.text.romaji import table

from knowledge_build.ranking.conformance import HERE, RULE_ENGINES, cases_for, expected_for, matches
from .conftest import ROOT
from .test_js_example import node  # noqa: F401  (the fixture: node 18+, a failure when missing)

MODULE = ROOT / "knowledge_build" / "browser" / "static" / "knowledge-search.js"


def test_the_box_javascript_passes_the_corpus(node, tmp_path):  # noqa: F811
    shipped = tmp_path / "bundle.json"
    shipped.write_text(json.dumps({"types": bundle.type_entries(list(TYPES)), "romaji": table()}, ensure_ascii=False),
                       encoding="utf-8")
    done = subprocess.run([node, str(HERE / "run.mjs"), str(MODULE), str(shipped)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "RULE_ENGINES": json.dumps(RULE_ENGINES)})
    assert done.returncode == 0, done.stderr
    got = {line["where"]: line["got"] for line in map(json.loads, done.stdout.splitlines())}
    cases = cases_for("box")
    assert len(got) == len(cases) > 200
    failed = [f"{c['where']} {c['rule']} {c['input']!r}: got {got[c['where']]!r}, expected {expected_for(c, 'box')!r}"
              for c in cases if not matches(got[c["where"]], expected_for(c, "box"))]
    assert not failed, f"{len(failed)} of {len(cases)} cases:\n" + "\n".join(failed)


def test_the_box_refuses_queries_at_the_length_every_engine_does(node):  # noqa: F811
    """The box's own limit (its MAX_QUERY export) is ranking/settings.py's MAX_QUERY_CHARS, read from the
    module as a browser imports it."""
    from knowledge_build.ranking.settings import MAX_QUERY_CHARS

    code = f"import({json.dumps(MODULE.as_uri())}).then(m => console.log(m.MAX_QUERY))"
    done = subprocess.run([node, "--input-type=module", "-e", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) == MAX_QUERY_CHARS
