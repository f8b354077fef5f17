"""`knowledge-build install-search`: the Jekyll include written (never over a different file without
--force), and the plain HTML snippet with the site's baseurl for other generators (README, "Search box
on the site"). The box itself runs in a real browser in test_search_box_browser.py."""

import json
from pathlib import Path

from click.testing import CliRunner

from knowledge_build.browser.install import include_text
from knowledge_build.cli import main

SNIPPET = ('<div class="knowledge-search" data-bundle="{base}/knowledge/v2/"></div>\n'
           '<script type="module" src="{base}/knowledge/v2/knowledge-search-ui.js"></script>\n')


def _run(*args):
    return CliRunner().invoke(main, ["install-search", *args])


def test_a_jekyll_site_gets_the_include_and_the_line_to_add(site_dir):
    result = _run("--site", str(site_dir))
    include = site_dir / "_includes" / "knowledge_search.html"
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"Wrote {include}.\n"
        "Add this line to a layout (e.g. _layouts/default.html) where the box should appear:\n"
        "  {% include knowledge_search.html %}\n"
        "The box searches the bundle `knowledge-build build` writes into the site "
        "(<output_dir>/, default knowledge/v2/).\n")
    text = include.read_text(encoding="utf-8")
    assert text == include_text()
    # Only the empty container and the module: without JavaScript the page shows no box.
    assert '<div class="knowledge-search" data-bundle="{{ knowledge_bundle | relative_url }}"' in text
    # The gap report's attributes only when the site's settings turn it on (tests/test_gaps_box.py builds one).
    assert "{%- if knowledge_gaps %} data-gap-report=" in text and "site.knowledge_build.gap_log" in text
    assert '<script type="module" src="{{ knowledge_bundle | append: \'knowledge-search-ui.js\' | relative_url }}">' \
        in text
    assert "site.knowledge_build.output_dir" in text


def test_installing_again_writes_nothing_and_says_so(site_dir):
    _run("--site", str(site_dir))
    include = site_dir / "_includes" / "knowledge_search.html"
    before = include.stat().st_mtime_ns
    result = _run("--site", str(site_dir))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"{include} is already the search box include; nothing was written."
    assert include.stat().st_mtime_ns == before


def test_a_different_include_of_that_name_is_refused_unless_forced(site_dir):
    include = site_dir / "_includes" / "knowledge_search.html"
    include.write_text("<form>the site's own search</form>\n", encoding="utf-8")
    refused = _run("--site", str(site_dir))
    assert refused.exit_code == 1
    assert refused.stderr == (f"Error: '{include}' already exists and is not the search box include; nothing was "
                              "written. Fix: pass --force to replace it, or rename that file and run again.\n")
    assert include.read_text(encoding="utf-8") == "<form>the site's own search</form>\n"
    forced = _run("--site", str(site_dir), "--force")
    assert forced.exit_code == 0, forced.output
    assert forced.stdout.splitlines()[0] == f"Replaced {include}."
    assert include.read_text(encoding="utf-8") == include_text()


def test_snippet_prints_the_html_with_the_sites_baseurl_and_writes_nothing(site_dir):
    result = _run("--site", str(site_dir), "--snippet")
    assert result.exit_code == 0, result.output
    assert result.stdout == SNIPPET.format(base="/math-note")
    assert "paste this HTML where the search box should appear" in result.stderr
    assert not (site_dir / "_includes" / "knowledge_search.html").exists()


def _hugo_site(root: Path) -> Path:
    (root / "content").mkdir(parents=True)
    (root / "content" / "a.md").write_text("---\ntitle: A\n---\n# A\n", encoding="utf-8")
    (root / "hugo.toml").write_text('baseURL = "https://example.org/docs/"\ntitle = "Docs"\n', encoding="utf-8")
    (root / "public").mkdir()
    (root / "public" / "index.html").write_text("<html><body><h1>A</h1></body></html>", encoding="utf-8")
    return root


def test_a_site_that_is_not_jekyll_gets_the_snippet_with_the_baseurl_of_its_config(tmp_path):
    site = _hugo_site(tmp_path / "hugo")
    result = _run("--site", str(site))
    assert result.exit_code == 0, result.output
    assert result.stdout == SNIPPET.format(base="/docs")
    assert result.stderr.startswith("hugo site: paste this HTML where the search box should appear")
    assert not (site / "_includes").exists()


def test_baseurl_option_and_json_output_for_a_plain_folder(tmp_path):
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "index.html").write_text("<html><body>x</body></html>", encoding="utf-8")
    plain = _run("--site", str(tmp_path / "html"))
    assert plain.stdout == SNIPPET.format(base="")
    result = _run("--site", str(tmp_path / "html"), "--baseurl", "/course/", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "generator": "plain", "bundle_url": "/course/knowledge/v2/", "status": "snippet", "include": None,
        "include_tag": None, "snippet": SNIPPET.format(base="/course")}


def test_no_site_is_one_line_with_the_fix(tmp_path):
    result = _run()
    assert result.exit_code == 1
    assert result.stderr == ("Error: no site given. Provide a --site flag, a KB_SITE environment variable, "
                             "or a 'site' key in knowledge.yml.\n")
    missing = _run("--site", str(tmp_path / "nowhere"))
    assert missing.exit_code == 1 and missing.stderr.startswith(f"Error: site directory '{tmp_path / 'nowhere'}' "
                                                                "does not exist.")


def test_help_says_what_the_command_writes():
    result = _run("--help")
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: main install-search [OPTIONS]")
    for phrase in ("_includes/knowledge_search.html", "--snippet", "--force", "--baseurl", "Without JavaScript"):
        assert phrase in " ".join(result.stdout.split()), phrase


def test_the_box_module_is_small():
    import gzip

    from knowledge_build.browser import install

    module = Path(install.__file__).parent / "static" / "knowledge-search-ui.js"
    assert len(gzip.compress(module.read_bytes(), 9)) <= 7168  # docs/guide/search-box.md: about 7 KB gzipped


def test_the_box_reads_a_page_as_japanese_by_the_same_kana_share_as_the_build():
    """The box's words follow the page's language (knowledge-search-ui.js pageInJapanese); a page that declares
    another language is Japanese when its kana reach the share html/main_content.py's written_in_japanese uses."""
    from knowledge_build.browser import install
    from knowledge_build.html.main_content import _KANA, JAPANESE_KANA_SHARE

    module = (Path(install.__file__).parent / "static" / "knowledge-search-ui.js").read_text(encoding="utf-8")
    assert f"const KANA_SHARE = {JAPANESE_KANA_SHARE};" in module
    assert f"/{_KANA.pattern}/g" in module
