"""The test workflow's parallel jobs (.github/workflows/test.yml): their selections take every test once,
the unit job's is `make test-unit`'s, and `.ci/run` still runs the whole suite with `make test`."""

import itertools
import re

import yaml
from _pytest.mark.expression import Expression

from .conftest import ROOT

WORKFLOW = yaml.safe_load((ROOT / ".github" / "workflows" / "test.yml").read_text(encoding="utf-8"))
JOBS = {job["name"]: job for job in WORKFLOW["jobs"]["test"]["strategy"]["matrix"]["include"]}
# The markers a selection may name: what a test needs (pyproject.toml), and what it costs.
MARKERS = ("model", "db", "browser", "generators", "corpus", "slow")


def _selects(expression: str, markers: set[str]) -> bool:
    return Expression.compile(expression).evaluate(lambda name, **_: name in markers)


def _makefile_unit() -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(r"^UNIT = (.+)$", makefile, flags=re.M).group(1).strip()


def test_the_jobs_are_the_five_the_issue_names():
    assert list(JOBS) == ["unit", "db", "model + corpus", "browser + generators", "packaging"]


def test_every_combination_of_markers_runs_in_exactly_one_job_unless_it_needs_the_corpus():
    """The corpus is not in the repository: every job leaves its tests out (.ci/run runs them)."""
    assert WORKFLOW["jobs"]["test"]["env"]["SELECT"] == "${{ matrix.select }} and not corpus"
    for size in range(len(MARKERS) + 1):
        for combination in itertools.combinations(MARKERS, size):
            markers = set(combination)
            taken = [name for name, job in JOBS.items() if _selects(f"({job['select']}) and not corpus", markers)]
            assert len(taken) == (0 if "corpus" in markers else 1), (markers, taken)


def test_the_unit_job_runs_make_test_unit_whose_selection_is_the_jobs():
    steps = WORKFLOW["jobs"]["test"]["steps"]
    assert any(step.get("run") == "make test-unit" and step.get("if") == "matrix.name == 'unit'" for step in steps)
    unit = _makefile_unit()
    for size in range(len(MARKERS) + 1):
        for markers in map(set, itertools.combinations(MARKERS, size)):
            assert _selects(unit, markers) == _selects(f"({JOBS['unit']['select']}) and not corpus", markers), markers
    assert _selects(unit, set()) and not any(_selects(unit, {marker}) for marker in MARKERS)


def test_ci_run_still_runs_the_whole_suite_with_make_test():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert script.rstrip().splitlines()[-1] == "make test"
