"""A real `jekyll build` of site/: the built _site indexes to the same chunks as the source."""

import shutil
import subprocess

import pytest

from knowledge_build import build, extract, load_config

from .conftest import FakeEmbedder


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    if shutil.which("jekyll") is None:
        pytest.fail("jekyll is not installed; `make test` installs Debian's jekyll package")
    from .conftest import SITE

    root = tmp_path_factory.mktemp("jekyll") / "site"
    shutil.copytree(SITE, root, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    subprocess.run(["jekyll", "build", "--quiet"], cwd=root, check=True, capture_output=True, timeout=300)
    return root


def _comparable(chunks):
    return [{k: v for k, v in c.to_dict().items() if k not in ("line",)} for c in chunks]


def test_built_site_yields_the_same_chunks_as_the_source(built_site):
    from_source = extract(load_config(site=built_site, env={}))
    from_built = extract(load_config(site=built_site / "_site", env={}))
    assert from_built.site.kind == "built" and from_built.site.baseurl == "/math-note"
    assert _comparable(from_built.chunks) == _comparable(from_source.chunks)
    assert not [d for d in from_built.diagnostics if d.severity == "error"]


def test_artifacts_built_from_source_survive_a_later_jekyll_build(built_site):
    result = build(load_config(site=built_site, env={}), embedder=FakeEmbedder())
    subprocess.run(["jekyll", "build", "--quiet"], cwd=built_site, check=True, capture_output=True, timeout=300)
    assert (result.output / "manifest.json").is_file()
    assert (built_site / "_site" / "junior" / "二次方程式.html").is_file()
