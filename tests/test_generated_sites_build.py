"""The Tsumiki site (tests/generated_sites/) built by each real generator: every page comes out where
that generator puts it, with its text, and the theme's chrome the acceptance test looks for is there.

Marked `generators`; a generator that is not installed skips, unless KB_REQUIRE_GENERATORS is set.
"""

import pytest
from lxml import html as lxml_html

from .generated_sites.chrome import FOOTER_SENTENCE, SENTINELS, chrome_in
from .generated_sites.content import Admonition, Heading, Paragraph, plain_text
from .generated_sites.fixtures import SITE_PARAMS
from .generated_sites.hits import is_hit, load_queries
from .generated_sites.pages import BY_PATH, PAGES
from knowledge_build import extract, load_config
from knowledge_build.kinds import PART_TYPES

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


@each_generator
def test_each_question_s_place_in_the_built_page_is_a_hit_for_it(generated_site):
    """is_hit on the real output: a link to the labelled heading as this generator wrote it (its id,
    on the heading or on the section around it, else a text directive) is a hit; the same link on the
    page with the same file name in the other folder is not."""
    site = generated_site
    for label in load_queries():
        url = _link_to(site, label.page, label.heading)
        assert is_hit(url, "", [], label, site), (label, url)
        twin = {"guide/setup": "reference/setup", "reference/setup": "guide/setup"}.get(label.page)
        if twin:
            assert not is_hit(site.url_of(twin) + "#" + url.partition("#")[2], "", [], label, site)


def _link_to(site, page: str, heading: str) -> str:
    from urllib.parse import quote

    from .generated_sites.content import Heading

    blocks = BY_PATH[page].blocks
    if heading not in [b.text for b in blocks if isinstance(b, Heading)]:  # an admonition: its section
        titles = [b.title for b in blocks if isinstance(b, Admonition)]
        if heading not in titles:
            return site.url_of(page)  # the page's title
        before = blocks[:[getattr(b, "title", None) for b in blocks].index(heading)]
        heading = next(b.text for b in reversed(before) if isinstance(b, Heading))
    tree = lxml_html.fromstring(site.file(page).read_bytes())
    element = next(h for h in tree.iter("h2", "h3") if " ".join(h.text_content().replace("¶", "").split()) == heading)
    id_ = element.get("id") or element.getparent().get("id")
    return site.url_of(page) + "#" + (quote(id_) if id_ else ":~:text=" + quote(heading))


@pytest.mark.parametrize("generator", list(SENTINELS))
def test_the_content_holds_none_of_a_theme_chrome(generator):
    """The chrome check finds nothing in the pages' own text, so a finding is always chrome."""
    for page in PAGES:
        assert chrome_in("\n".join(page.texts()), generator) == [], page.path


# Box chunks of each output, counted before boxes outside the main content were left out (issue 40):
# the Jekyll and plain outputs write admonitions in markup the default `boxes` does not pick (plain: an
# `<aside class="callout">`), so only their definition lists are boxes.
BOXES = {"jekyll": 2, "hugo": 11, "mkdocs": 11, "sphinx-html": 11, "sphinx-dirhtml": 11, "plain": 2}


@each_generator
def test_every_box_of_the_content_is_still_found_and_nothing_is_left_out(generated_site):
    extraction = extract(load_config(site=generated_site.output, env={}))
    boxes = [c for c in extraction.chunks if c.type not in PART_TYPES]
    assert len(boxes) == BOXES[generated_site.generator]
    assert "left_out" not in extraction.summary, extraction.summary["left_out"]
