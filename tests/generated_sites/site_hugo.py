"""The Hugo source: `hugo.toml`, content as Markdown with front matter (a folder's index page is its
`_index.md`, a section list page), and layouts of our own (no theme is installed): `baseof.html`
with the theme shape, `single.html` and `list.html`, and an `admonition` shortcode.

Hugo writes pretty URLs by default (`guide/setup/index.html`), and its own list pages for the default
taxonomies (`tags/`, `categories/`) and the home page's RSS. baseURL puts the site under `/tsumiki/`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import render_markdown
from .content import FOOTER_TEXT, HEADER_TAGLINE, NAV_LABEL, NEXT_LABEL, PREV_LABEL, SITE_DESCRIPTION, SITE_TITLE
from .pages import PAGES, Page

BASE_PATH = "/tsumiki/"

CONFIG = f"""\
baseURL = "https://example.org/tsumiki/"
languageCode = "ja"
defaultContentLanguage = "ja"
hasCJKLanguage = true
title = "{SITE_TITLE}"

[params]
description = "{SITE_DESCRIPTION}"
"""

# The pager is outside <main> here (inside it in the Jekyll and plain layouts). Hugo's
# .PrevInSection runs against the weight order (it is the page after this one), so, as themes do,
# the "previous" link takes .NextInSection.
BASEOF = """\
<!DOCTYPE html>
<html lang="{{ .Site.LanguageCode }}">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  {{ hugo.Generator }}
  <title>{{ .Title }} | {{ .Site.Title }}</title>
  <meta name="description" content="{{ .Site.Params.description }}">
  <link rel="canonical" href="{{ .Permalink }}">
</head>
<body>
  <header class="site-header">
    <a class="site-title" href="{{ .Site.Home.RelPermalink }}">{{ .Site.Title }}</a>
    <p class="site-tagline">@TAGLINE@</p>
  </header>
  <div class="container">
    <nav class="sidebar" aria-label="@NAV@">
      <p class="nav-title">@NAV@</p>
      <ul>
      {{- $current := . }}
      {{- range .Site.Pages.ByWeight }}{{ if .Weight }}
        <li{{ if eq . $current }} class="active"{{ end }}><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>
      {{- end }}{{ end }}
      </ul>
    </nav>
    <main id="content">
      <h1>{{ .Title }}</h1>
      {{ block "main" . }}{{ end }}
    </main>
  </div>
  <nav class="pager">
    {{- with .NextInSection }}
    <a class="pager-prev" href="{{ .RelPermalink }}">@PREV@: {{ .Title }}</a>
    {{- end }}
    {{- with .PrevInSection }}
    <a class="pager-next" href="{{ .RelPermalink }}">@NEXT@: {{ .Title }}</a>
    {{- end }}
  </nav>
  <footer class="site-footer"><p>@FOOTER@</p></footer>
</body>
</html>
"""

MAIN = '{{ define "main" }}\n{{ .Content }}\n{{ end }}\n'

SHORTCODE = """\
{{- $kind := .Get "kind" -}}
{{- $titles := dict "tip" "ヒント" "note" "メモ" "warning" "注意" -}}
<div class="admonition {{ $kind }}">
<p class="admonition-title">{{ .Get "title" | default (index $titles $kind) }}</p>
{{ .Inner | .Page.RenderString (dict "display" "block") }}
</div>
"""


def content_file(page: Page) -> str:
    if page.path == "index":
        return "_index.md"
    return f"{page.folder}/_index.md" if page.name == "index" else f"{page.path}.md"


def file_of(page: Page) -> str:
    if page.path == "index":
        return "index.html"
    return f"{page.folder}/index.html" if page.name == "index" else f"{page.path}/index.html"


def write_source(src: Path) -> None:
    layouts = src / "layouts"
    (layouts / "_default").mkdir(parents=True)
    (layouts / "shortcodes").mkdir()
    (src / "hugo.toml").write_text(CONFIG, encoding="utf-8")
    baseof = BASEOF
    for key, value in {"TAGLINE": HEADER_TAGLINE, "NAV": NAV_LABEL, "PREV": PREV_LABEL, "NEXT": NEXT_LABEL,
                       "FOOTER": FOOTER_TEXT}.items():
        baseof = baseof.replace(f"@{key}@", value)
    (layouts / "_default" / "baseof.html").write_text(baseof, encoding="utf-8")
    (layouts / "_default" / "single.html").write_text(MAIN, encoding="utf-8")
    (layouts / "_default" / "list.html").write_text(MAIN, encoding="utf-8")
    (layouts / "shortcodes" / "admonition.html").write_text(SHORTCODE, encoding="utf-8")
    for weight, page in enumerate(PAGES, start=1):
        path = src / "content" / content_file(page)
        path.parent.mkdir(parents=True, exist_ok=True)
        front = f'---\ntitle: "{page.title}"\nweight: {weight}\n---\n\n'
        path.write_text(front + render_markdown.body(page.blocks, "goldmark"), encoding="utf-8")


def build(src: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """`hugo` in the source folder; the output is `public/`."""
    from .build import run

    return src / "public", run(["hugo", "--source", str(src)], cwd=src)


def version() -> str:
    from .build import run

    return " ".join(run(["hugo", "version"]).stdout.split()[:2])
