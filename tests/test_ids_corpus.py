"""The id workflow on a copy of the reference corpus: check, suggest-ids --write, check, build."""

import shutil

import pytest

from knowledge_build import extract, load_config
from knowledge_build.lint import check_site, plans_for, write_suggestions

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

    chunks = extract(config).chunks
    assert len(chunks) == 1046 + 654

    # Every file differs from its original by exactly the inserted attributes.
    inserted = {plan.path: [s.id for s in plan.suggestions] for plan in plans}
    for path, original in originals.items():
        data = path.read_bytes()
        for new_id in inserted.get(path, []):
            attribute = f' id="{new_id}"'.encode()
            assert data.count(attribute) == 1 and original.count(attribute) == 0
            data = data.replace(attribute, b"", 1)
        assert data == original, path
