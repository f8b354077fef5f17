"""The id workflow on a copy of the reference corpus: check, suggest-ids --write, check, build."""

import re
import shutil
from pathlib import Path

import pytest

from knowledge_build import extract, load_config
from knowledge_build.checks.lint import check_site, plans_for, write_suggestions
from knowledge_build.checks.report import coverage
from knowledge_build.kinds import PART_TYPES

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus_copy(corpus_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("ids") / "school_asset"
    shutil.copytree(corpus_dir, root)
    return root


def test_check_then_write_then_check_on_the_corpus(corpus_copy):
    originals = {p: p.read_bytes() for p in corpus_copy.rglob("*.html")}
    config = load_config(site=corpus_copy, env={})
    before = check_site(config)
    missing = [d for d in before.diagnostics if d.rule == "missing-id"]
    assert len(missing) == 654 and all('add id="' in d.fix or "rename it to" in d.fix for d in missing)

    plans = plans_for(config)
    written, files = write_suggestions(plans)
    assert written == 654 and files == 93
    after = check_site(config)
    assert [d for d in after.diagnostics if d.rule == "missing-id"] == []
    assert not [d for d in after.diagnostics if d.rule in ("id-format", "duplicate-id", "prefix-mismatch")
                and d not in before.diagnostics]

    chunks = [c for c in extract(config).chunks if c.type not in PART_TYPES]  # the boxes
    assert len(chunks) == 1044 + 654  # two of the 1,046 ids are on headings, not boxes
    # Practice problems (練習N) are examples, not rules crowding the top results.
    practice = [c for c in chunks if c.label.startswith("練習")]
    assert len(practice) >= 231 and {c.type for c in practice} == {"example"}
    assert coverage(config)["totals"]["example"] == sum(c.type == "example" for c in chunks)
    assert not [c for c in chunks if re.match(r"(コツ|ルール|練習)\s*[0-9①-⑳]*\s*[:：]", c.title) or "\\(" in c.title]

    # Every file differs from its original by exactly the inserted attributes.
    inserted = {plan.path: [s.id for s in plan.suggestions] for plan in plans}
    for path, original in originals.items():
        data = path.read_bytes()
        for new_id in inserted.get(path, []):
            attribute = f' id="{new_id}"'.encode()
            assert data.count(attribute) == 1 and original.count(attribute) == 0
            data = data.replace(attribute, b"", 1)
        assert data == original, path


GLOSSARY = Path(__file__).parents[1] / "knowledge_build" / "data" / "glossary.yml"  # the glossary of this checkout
BARE = re.compile(r"^(rule|method|def|ex|tip)-\d+$")


@pytest.fixture(scope="module")
def corpus_suggestions(corpus_dir):
    config = load_config(site=corpus_dir, env={}).with_overrides(glossary=GLOSSARY)
    return [s for plan in plans_for(config) for s in plan.suggestions]


def test_corpus_suggestions_have_no_bare_numbers_and_no_tex(corpus_suggestions):
    assert len(corpus_suggestions) == 654
    assert [s.id for s in corpus_suggestions if BARE.match(s.id)] == []
    for s in corpus_suggestions:
        commands = {c.lower() for c in re.findall(r"\\([A-Za-z]+)", s.title)}
        assert not commands & set(s.id.split("-")), (s.title, s.id)


def test_corpus_practice_boxes_are_suggested_as_examples(corpus_suggestions):
    practice = [s for s in corpus_suggestions if re.match(r"(練習|演習)", s.title)]
    assert len(practice) >= 231
    assert {s.id.split("-")[0] for s in practice} == {"ex"} and all("label" in s.reason for s in practice)


def test_corpus_slugs_match_the_golden_file_for_30_real_titles(corpus_suggestions, corpus_dir):
    """The golden file holds file:line -> id only; the titles are read from the corpus here."""
    golden = Path(__file__).parent / "test_ids" / "corpus_slugs.txt"
    expected = dict(line.split(" -> ") for line in golden.read_text(encoding="utf-8").splitlines() if line)
    found = {f"{Path(s.path).relative_to(corpus_dir.resolve()).as_posix()}:{s.line}": s.id for s in corpus_suggestions}
    assert len(expected) == 30
    assert {where: found.get(where) for where in expected} == expected
