"""Sections on the reference corpus: every page without anchored boxes yields parts, every link lands,
keys are unique (bench/data/check_sections_corpus.py, which also prints counts and timings)."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.corpus


def test_every_unanchored_corpus_page_yields_parts_and_every_section_link_lands(corpus_dir, capsys):
    path = Path(__file__).resolve().parents[1] / "bench" / "data" / "check_sections_corpus.py"
    spec = importlib.util.spec_from_file_location("check_sections_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.check(corpus_dir) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "pages without a rule/method/def/tip anchor: 22, yielding parts: 22" in out
