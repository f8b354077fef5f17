"""One small Japanese documentation site (a fictional task runner, Tsumiki), written once as data and
built by real generators inside the tests (issue 24: the tool reads any site as its owner built it).

- content.py, pages.py: the site as generator-neutral data (pages of headings, paragraphs, tables,
  code, admonitions, definition lists) and the theme's fixed strings;
- render_markdown.py, render_rst.py, render_html.py: that data as each generator's source;
- site_jekyll.py, site_hugo.py, site_mkdocs.py, site_sphinx.py: each generator's configuration,
  layouts and command; build.py: `build_site(generator, workdir) -> BuiltSite`;
- fixtures.py: the session fixtures `generated_site` and `generated_index`;
- queries.jsonl, hits.py: labelled questions and `is_hit`; chrome.py: the theme text a chunk must not hold.
"""
