"""Blocks → HTML, and the hand-written site (`plain`): a folder of HTML5 files with the same theme
shape as the Jekyll and Hugo layouts (header, nav sidebar, main, pager, footer), relative links.

A hand-written site marks things its own way: h2 headings carry ids (`id="s1"`, `s2` …), h3 headings
none; admonitions are `<aside class="callout callout-tip">` with a `<p class="callout-title">`;
tables have a `<caption>`; definition lists are `<dl>`.
"""

from __future__ import annotations

import html
import posixpath

from .content import (
    FOOTER_TEXT,
    HEADER_TAGLINE,
    NAV_LABEL,
    NEXT_LABEL,
    PREV_LABEL,
    SITE_TITLE,
    Admonition,
    Block,
    BulletList,
    Code,
    DefinitionList,
    Heading,
    Page,
    Paragraph,
    Table,
    inline_parts,
)

DEFAULT_TITLES = {"tip": "ヒント", "note": "メモ", "warning": "注意"}


def inline(text: str) -> str:
    return "".join(f"<code>{html.escape(part)}</code>" if code else html.escape(part)
                   for code, part in inline_parts(text))


def body(blocks: tuple[Block, ...]) -> str:
    out, h2 = [], 0
    for block in blocks:
        if isinstance(block, Heading) and block.level == 2:
            h2 += 1
            out.append(f'<h2 id="s{h2}">{html.escape(block.text)}</h2>')
        else:
            out.append(_block(block))
    return "\n".join(out)


def _block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return f"<p>{inline(block.text)}</p>"
    if isinstance(block, BulletList):
        return "<ul>\n" + "\n".join(f"  <li>{inline(i)}</li>" for i in block.items) + "\n</ul>"
    if isinstance(block, Table):
        head = "".join(f"<th>{inline(c)}</th>" for c in block.header)
        rows = "\n".join("  <tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in block.rows)
        return (f"<table>\n  <caption>{html.escape(block.caption)}</caption>\n  <thead><tr>{head}</tr></thead>\n"
                f"  <tbody>\n{rows}\n  </tbody>\n</table>")
    if isinstance(block, Code):
        return f'<pre><code class="language-{block.language}">{html.escape(block.text)}</code></pre>'
    if isinstance(block, DefinitionList):
        items = "\n".join(f"  <dt>{inline(t)}</dt>\n  <dd>{inline(d)}</dd>" for t, d in block.items)
        return f"<dl>\n{items}\n</dl>"
    if isinstance(block, Admonition):
        title = block.title or DEFAULT_TITLES[block.kind]
        return (f'<aside class="callout callout-{block.kind}">\n  <p class="callout-title">{html.escape(title)}</p>\n'
                f"  <p>{inline(block.text)}</p>\n</aside>")
    raise TypeError(f"no HTML for {block!r}")


def file_of(page: Page) -> str:
    """The page's file in the plain site: `guide/setup.html`, `guide/index.html`."""
    return page.path + ".html"


def document(page: Page, pages: tuple[Page, ...]) -> str:
    """The whole file: the theme around the page's body, every link relative to this file."""
    here = posixpath.dirname(file_of(page))

    def href(target: Page) -> str:
        return html.escape(posixpath.relpath(file_of(target), here or "."))

    current = ' class="current"'
    nav = "\n".join(f'      <li{current if p is page else ""}><a href="{href(p)}">{html.escape(p.title)}</a></li>'
                    for p in pages)
    i = pages.index(page)
    pager = []
    if i > 0:
        pager.append(f'<a class="pager-prev" href="{href(pages[i - 1])}">{PREV_LABEL}: '
                     f"{html.escape(pages[i - 1].title)}</a>")
    if i + 1 < len(pages):
        pager.append(f'<a class="pager-next" href="{href(pages[i + 1])}">{NEXT_LABEL}: '
                     f"{html.escape(pages[i + 1].title)}</a>")
    home = href(pages[0])
    return f"""<!DOCTYPE html>
<html lang="ja">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{html.escape(page.title)} | {SITE_TITLE}</title>
</head>
<body>
  <header class="site-header">
    <a class="site-name" href="{home}">{SITE_TITLE}</a>
    <p class="tagline">{HEADER_TAGLINE}</p>
  </header>
  <div class="wrapper">
    <nav class="sidebar" aria-label="{NAV_LABEL}">
      <p class="nav-title">{NAV_LABEL}</p>
      <ul>
{nav}
      </ul>
    </nav>
    <main>
      <h1>{html.escape(page.title)}</h1>
{body(page.blocks)}
      <nav class="pager">{" ".join(pager)}</nav>
    </main>
  </div>
  <footer class="site-footer"><p>{FOOTER_TEXT}</p></footer>
</body>
</html>
"""
