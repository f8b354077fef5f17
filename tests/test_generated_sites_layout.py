"""A project's built output is found where its generator's configuration or its owner's command put
it (issue 40): the Tsumiki site of tests/generated_sites built by the real generators into the
folders owners use (`sphinx-build -b html . html`, `mkdocs build -d public`, Hugo's `publishDir` in
its configuration folder …), then `detect` on the project folder. Without output, the error names the
page format the folder holds.

Marked `generators`; a generator that is not installed skips, unless KB_REQUIRE_GENERATORS is set.
"""

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from knowledge_build.cli import main
from knowledge_build.site.generators import SiteNeedsBuild, detect

from .generated_sites import site_hugo, site_mkdocs, site_sphinx
from .generated_sites.build import run
from .generated_sites.fixtures import require

pytestmark = pytest.mark.generators


def _sphinx_project(src: Path, *outputs: str) -> Path:
    """The Sphinx source in `src`, built with `sphinx-build -b html` into each of `outputs` in turn."""
    site_sphinx.write_source(src)
    for output in outputs:
        run([sys.executable, "-m", "sphinx", "-b", "html", "-q", ".", output], cwd=src)
    return src


@pytest.mark.parametrize("output", ["html", "_build/html", "build/html"])
def test_a_sphinx_project_is_read_through_the_output_its_owner_built(tmp_path, output):
    require("sphinx-html")
    src = _sphinx_project(tmp_path / "docs", output)
    found = detect(src)
    assert (found.generator, found.kind, found.pages_root) == ("sphinx", "built", (src / output).resolve())
    assert found.note == f"Sphinx project: reading its built output '{(src / output).resolve()}'"


def test_a_sphinx_project_beside_its_build_folder_is_read_through_it(tmp_path):
    """sphinx-quickstart's separate folders: `source/conf.py` and `build/html`."""
    require("sphinx-html")
    site_sphinx.write_source(tmp_path / "source")
    run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "source", "build/html"], cwd=tmp_path)
    found = detect(tmp_path / "source")
    assert found.pages_root == (tmp_path / "build" / "html").resolve()


def test_of_two_sphinx_outputs_the_newest_is_read_and_the_note_names_the_other_and_the_flag(tmp_path):
    require("sphinx-html")
    src = _sphinx_project(tmp_path / "docs", "_build/html", "html")
    found = detect(src)
    newest, older = (src / "html").resolve(), (src / "_build" / "html").resolve()
    assert found.pages_root == newest
    assert found.note == (f"Sphinx project: reading its built output '{newest}'; 2 built outputs were found, this "
                          f"one is the newest (also '{older}'): pass --site <the output folder> to read another")


def test_a_sphinx_project_without_output_is_named_by_its_restructuredtext_pages(tmp_path):
    """The source as written (no sphinx-build), with a README.md beside it as repositories have."""
    src = tmp_path / "docs"
    site_sphinx.write_source(src)
    (src / "README.md").write_text("# docs\n", encoding="utf-8")
    (src / "_templates").mkdir()
    (src / "_templates" / "notes.md").write_text("# not a page\n", encoding="utf-8")
    pages = len(list(src.rglob("*.rst")))
    with pytest.raises(SiteNeedsBuild) as caught:
        detect(src)
    assert (f"is a sphinx source folder with {pages + 1} source page(s) ({pages} reStructuredText, 1 Markdown) "
            "(e.g. index.rst), which sphinx turns into HTML") in str(caught.value)
    result = CliRunner().invoke(main, ["build", "--site", str(src)])
    assert result.exit_code == 1 and "reStructuredText" in result.output and "Traceback" not in result.output


def _mkdocs_project(src: Path, site_dir: str | None, flag: str | None) -> Path:
    site_mkdocs.write_source(src)
    if site_dir is not None:
        config = yaml.safe_load((src / "mkdocs.yml").read_text(encoding="utf-8"))
        (src / "mkdocs.yml").write_text(yaml.safe_dump({**config, "site_dir": site_dir}, allow_unicode=True,
                                                       sort_keys=False), encoding="utf-8")
    run([sys.executable, "-m", "mkdocs", "build", "-q", *(["--site-dir", flag] if flag else [])], cwd=src)
    return src


@pytest.mark.parametrize("site_dir, flag, output", [("html", None, "html"), (None, "public", "public"),
                                                    ("site", "build/site", "build/site")])
def test_an_mkdocs_project_is_read_through_its_site_dir_or_the_folder_it_was_built_into(tmp_path, site_dir, flag,
                                                                                          output):
    require("mkdocs")
    src = _mkdocs_project(tmp_path / "docs", site_dir, flag)
    found = detect(src)
    assert (found.generator, found.pages_root) == ("mkdocs", (src / output).resolve())
    assert found.note.startswith(f"mkdocs project: reading its built output '{(src / output).resolve()}'")


def _hugo_project(src: Path, config_folder: bool, publish_dir: str | None, flag: str | None) -> Path:
    site_hugo.write_source(src)
    if publish_dir is not None:
        config = src / "hugo.toml"
        config.write_text(f'publishDir = "{publish_dir}"\n' + config.read_text(encoding="utf-8"), encoding="utf-8")
    if config_folder:
        (src / "config" / "_default").mkdir(parents=True)
        (src / "hugo.toml").rename(src / "config" / "_default" / "hugo.toml")
    run(["hugo", "--source", str(src), *(["--destination", flag] if flag else [])], cwd=src)
    return src


@pytest.mark.parametrize("config_folder, publish_dir, flag, output", [
    (False, "docs", None, "docs"), (True, "docs", None, "docs"), (False, None, "dist", "dist"),
])
def test_a_hugo_project_is_read_through_its_publish_dir_or_the_folder_it_was_built_into(tmp_path, config_folder,
                                                                                       publish_dir, flag, output):
    require("hugo")
    src = _hugo_project(tmp_path / "site", config_folder, publish_dir, flag)
    assert (src / output / "index.html").is_file()
    found = detect(src)
    assert (found.generator, found.pages_root) == ("hugo", (src / output).resolve())
    assert found.note.startswith(f"hugo project: reading its built output '{(src / output).resolve()}'")


def test_an_mkdocs_site_published_in_two_versions_as_mike_does_answers_from_the_newest(tmp_path):
    """mike's layout: each version's build in its own folder, `versions.json` at the root (newest first,
    with aliases). The facets come from the site (issue 40): versions in the manifest, the newest answered
    by default, the alias accepted as a filter, each chunk linking its place in the other version."""
    import json

    from knowledge_build import KnowledgeIndex, build, load_config

    from .conftest import FakeEmbedder

    require("mkdocs")
    published = tmp_path / "gh-pages"
    for version in ("1.0", "2.0"):
        _mkdocs_project(tmp_path / f"src-{version}", None, str(published / version))
    (published / "versions.json").write_text(json.dumps([
        {"version": "2.0", "title": "2.0", "aliases": ["latest"]},
        {"version": "1.0", "title": "1.0", "aliases": []}]), encoding="utf-8")
    out = build(load_config(site=published, output=tmp_path / "out", cache_dir=tmp_path / "cache", env={}),
                embedder=FakeEmbedder()).output
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["site"]["facets"] == {"versions": ["2.0", "1.0"], "version_aliases": {"latest": "2.0"}}
    index = KnowledgeIndex.open(out, embedder=FakeEmbedder())
    newest = index.search("展開", k=5)
    assert newest and {r.version for r in newest} == {"2.0"}
    assert all([o["version"] for o in r.other_versions] == ["1.0"] for r in newest)
    assert {r.version for r in index.search("展開", k=5, version="latest")} == {"2.0"}
    assert {r.version for r in index.search("展開", k=5, version="1.0")} == {"1.0"}


def test_a_mike_alias_folder_written_as_a_copy_is_named_as_skipped_not_indexed_twice(tmp_path):
    """`mike deploy --alias-type copy 2.0 latest`: latest/ holds the same pages as 2.0/."""
    import json
    import shutil

    from knowledge_build import build, load_config

    from .conftest import FakeEmbedder

    require("mkdocs")
    published = tmp_path / "gh-pages"
    for version in ("1.0", "2.0"):
        _mkdocs_project(tmp_path / f"src-{version}", None, str(published / version))
    shutil.copytree(published / "2.0", published / "latest")
    (published / "versions.json").write_text(json.dumps([
        {"version": "2.0", "title": "2.0", "aliases": ["latest"]},
        {"version": "1.0", "title": "1.0", "aliases": []}]), encoding="utf-8")
    result = build(load_config(site=published, output=tmp_path / "out", cache_dir=tmp_path / "cache", env={}),
                   embedder=FakeEmbedder())
    copies = [s for s in result.pages["skipped"] if s["path"].startswith("latest/")]
    assert copies and all(s["reason"] == "a copy of version 2.0 under its alias folder 'latest' (versions.json)"
                          for s in copies)
    assert not any(c.source_path.startswith("latest/") for c in result.chunks)
    assert {c.version for c in result.chunks} == {"1.0", "2.0"}
