"""The Jekyll source: `_config.yml` (pretty permalinks, a `docs` collection), Markdown pages with front
matter, and a layout of our own in the shape of a documentation theme.

The home page and the FAQ are ordinary pages (`/`, `/faq/`); everything under guide/ and reference/
is in the `docs` collection (`_docs/guide/setup.md` → `/docs/guide/setup/`), whose folder index pages
set their own permalink (`/docs/guide/`), as theme users do. The site is served under the baseurl
`/tsumiki`. The layout writes the generator meta tag as jekyll-seo-tag does (`{% seo %}` is not used:
it is a gem beyond Debian's jekyll package).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import render_markdown
from .content import FOOTER_TEXT, HEADER_TAGLINE, NAV_LABEL, NEXT_LABEL, PREV_LABEL, SITE_DESCRIPTION, SITE_TITLE
from .pages import PAGES, Page

BASE_PATH = "/tsumiki/"

CONFIG = f"""\
title: {SITE_TITLE}
description: {SITE_DESCRIPTION}
url: "https://example.org"
baseurl: "/tsumiki"
lang: ja
permalink: pretty
markdown: kramdown
collections:
  docs:
    output: true
    permalink: /docs/:path/
defaults:
  - scope:
      path: ""
    values:
      layout: default
"""

# Liquid: the pages in nav_order, the current one's neighbours for the pager.
LAYOUT = """\
<!DOCTYPE html>
<html lang="ja">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="generator" content="Jekyll v{{ jekyll.version }}">
  <title>{{ page.title }} | {{ site.title }}</title>
  <meta name="description" content="{{ site.description }}">
  <link rel="canonical" href="{{ page.url | absolute_url }}">
</head>
<body>
  <header class="site-header">
    <a class="site-title" href="{{ '/' | relative_url }}">{{ site.title }}</a>
    <p class="site-tagline">@TAGLINE@</p>
  </header>
  {%- assign all = site.pages | concat: site.docs | where_exp: "p", "p.nav_order" | sort: "nav_order" %}
  <div class="page-wrapper">
    <nav class="side-bar" aria-label="@NAV@">
      <p class="nav-title">@NAV@</p>
      <ul class="nav-list">
      {%- for p in all %}
        <li class="nav-list-item{% if p.url == page.url %} active{% endif %}"><a href="{{ p.url | relative_url }}">{{ p.title }}</a></li>
        {%- if p.url == page.url %}{% assign i = forloop.index0 %}{% endif %}
      {%- endfor %}
      </ul>
    </nav>
    <main class="main-content">
      <h1>{{ page.title }}</h1>
{{ content }}
      <nav class="pager">
        {%- if i > 0 %}{% assign j = i | minus: 1 %}
        <a class="pager-prev" href="{{ all[j].url | relative_url }}">@PREV@: {{ all[j].title }}</a>
        {%- endif %}
        {%- assign j = i | plus: 1 %}{% if j < all.size %}
        <a class="pager-next" href="{{ all[j].url | relative_url }}">@NEXT@: {{ all[j].title }}</a>
        {%- endif %}
      </nav>
    </main>
  </div>
  <footer class="site-footer"><p>@FOOTER@</p></footer>
</body>
</html>
"""


def _in_collection(page: Page) -> bool:
    return page.path.startswith(("guide/", "reference/"))


def file_of(page: Page) -> str:
    """Where the page is written in _site/."""
    if page.path == "index":
        return "index.html"
    if not _in_collection(page):
        return f"{page.path}/index.html"
    if page.name == "index":
        return f"docs/{page.folder}/index.html"
    return f"docs/{page.path}/index.html"


def write_source(src: Path) -> None:
    (src / "_layouts").mkdir(parents=True)
    (src / "_config.yml").write_text(CONFIG, encoding="utf-8")
    layout = LAYOUT
    for key, value in {"TAGLINE": HEADER_TAGLINE, "NAV": NAV_LABEL, "PREV": PREV_LABEL, "NEXT": NEXT_LABEL,
                       "FOOTER": FOOTER_TEXT}.items():
        layout = layout.replace(f"@{key}@", value)
    (src / "_layouts" / "default.html").write_text(layout, encoding="utf-8")
    for order, page in enumerate(PAGES, start=1):
        front = [f"title: {page.title}", f"nav_order: {order}"]
        if _in_collection(page):
            path = src / "_docs" / f"{page.path}.md"
            if page.name == "index":
                front.append(f"permalink: /docs/{page.folder}/")
        else:
            path = src / f"{page.path}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "---\n" + "\n".join(front) + "\n---\n\n" + render_markdown.body(page.blocks, "kramdown")
        path.write_text(text, encoding="utf-8")


def build(src: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """`jekyll build` in the source folder (offline: Debian's gems only); the output is `_site/`."""
    from .build import run

    return src / "_site", run(["jekyll", "build"], cwd=src)


def version() -> str:
    from .build import run

    return run(["jekyll", "--version"]).stdout.strip()
