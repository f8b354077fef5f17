"""The reference corpus (../shared/corpus/school_asset) builds and yields every anchored element."""

import collections
from pathlib import Path
from urllib.parse import unquote

import pytest

from knowledge_build import KnowledgeIndex, build, load_config

from .conftest import FakeEmbedder

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus_build(corpus_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    config = load_config(site=corpus_dir, output=out / "v1", cache_dir=out / "cache", env={})
    return build(config, embedder=FakeEmbedder())


def test_corpus_builds_without_error_and_yields_all_1046_elements(corpus_build):
    assert not [d for d in corpus_build.diagnostics if d.severity == "error"]
    counts = collections.Counter(c.type for c in corpus_build.chunks)
    assert counts == {"rule": 305, "tip": 115, "method": 33, "definition": 24, "example": 569}
    assert corpus_build.artifacts.manifest["counts"]["chunks"] == 1046


def test_every_corpus_url_points_at_an_existing_page_and_anchor(corpus_build, corpus_dir):
    pages: dict[Path, str] = {}
    for chunk in corpus_build.chunks:
        path, anchor = chunk.url.split("#")
        assert path.startswith("/school_asset/"), chunk.url
        page = corpus_dir / unquote(path.removeprefix("/school_asset/"))
        if page not in pages:
            pages[page] = page.read_text(encoding="utf-8")
        assert f'id="{anchor}"' in pages[page], chunk.url


def test_corpus_chunks_take_learns_from_its_learns_yml(corpus_build):
    sources = collections.Counter(c.learns_source for c in corpus_build.chunks)
    assert sources["yaml"] >= 300
    chunk = next(c for c in corpus_build.chunks if c.id == "二次方程式の解き方_教材#rule-quadratic-formula")
    assert chunk.learns_source == "yaml" and chunk.title == "解の公式" and chunk.level == "標準"


def test_corpus_index_loads_and_answers(corpus_build):
    index = KnowledgeIndex.open(corpus_build.output, embedder=FakeEmbedder())
    assert len(index) == 1046
    assert index.search("解の公式", k=5, mode="lexical")
