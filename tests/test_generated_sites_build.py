"""The Tsumiki site (tests/generated_sites/) built by each real generator: every page comes out where
that generator puts it, with its text, and the theme's chrome the acceptance test looks for is there.

Marked `generators`; a generator that is not installed skips, unless KB_REQUIRE_GENERATORS is set.
"""

import pytest
from lxml import html as lxml_html

from .generated_sites.chrome import FOOTER_SENTENCE, SENTINELS, chrome_in
from .generated_sites.content import Admonition, Heading, Paragraph, plain_text
from .generated_sites.fixtures import SITE_PARAMS
from .generated_sites.pages import BY_PATH, PAGES

pytestmark = pytest.mark.generators
each_generator = pytest.mark.parametrize("generated_site", SITE_PARAMS, indirect=True)


def _text(path) -> str:
    return " ".join(lxml_html.fromstring(path.read_bytes()).text_content().split())


@each_generator
def test_generator_writes_a_file_for_every_page_with_its_text(generated_site, record_property):
    site = generated_site
    record_property("generator_version", site.version)
    assert len(site.page_files) >= 12 and len(set(site.page_files.values())) == len(site.page_files)
    for page in PAGES:
        text = _text(site.file(page.path))
        expected = [page.title, *(b.text for b in page.blocks if isinstance(b, Heading)),
                    *(b.title for b in page.blocks if isinstance(b, Admonition) and b.title),
                    plain_text(next(b.text for b in page.blocks if isinstance(b, Paragraph)))]
        missing = [e for e in expected if " ".join(e.split()) not in text]
        assert not missing, f"{site.generator} ({site.version}) {site.page_files[page.path]} lacks {missing}"


@each_generator
def test_output_holds_at_least_twelve_html_content_pages(generated_site):
    files = set(generated_site.html_files())
    content = files & set(generated_site.page_files.values())
    assert len(content) == len(PAGES) >= 12, sorted(files)


@each_generator
def test_pages_with_the_same_file_name_in_two_folders_are_two_pages(generated_site):
    site = generated_site
    for same_name in (("guide/setup", "reference/setup"), ("guide/index", "reference/index", "reference/cli/index")):
        files = [site.file(path) for path in same_name]
        assert len(set(files)) == len(files) and all(f.is_file() for f in files)
        for path, file in zip(same_name, files):
            others = [BY_PATH[p].title for p in same_name if p != path]
            heading = lxml_html.fromstring(file.read_bytes()).xpath("string(//h1[not(@class='logo')])")
            assert BY_PATH[path].title in heading and not any(o == heading.strip("¶ \n") for o in others)


@each_generator
def test_every_page_carries_the_theme_chrome_the_acceptance_test_looks_for(generated_site):
    """Else the chrome check of test_generated_sites.py could not fail: the footer sentence is on
    every page, and each of the theme's sentinels is on some page."""
    site = generated_site
    texts = {page.path: _text(site.file(page.path)) for page in PAGES}
    assert [p for p, t in texts.items() if FOOTER_SENTENCE not in t] == []
    assert [s for s in SENTINELS[site.generator] if not any(s in t for t in texts.values())] == []
    assert all(chrome_in(t, site.generator) for t in texts.values())


@pytest.mark.parametrize("generator", list(SENTINELS))
def test_the_content_holds_none_of_a_theme_chrome(generator):
    """The chrome check finds nothing in the pages' own text, so a finding is always chrome."""
    for page in PAGES:
        assert chrome_in("\n".join(page.texts()), generator) == [], page.path
