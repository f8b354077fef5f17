"""The theme's text around a page's content ("chrome"), per generator: what a chunk must not hold.

Three kinds of evidence, each found in the built HTML of that generator (see the README of this
folder for where each theme puts it):
- sentinel strings: the header tagline, the nav's label, the footer sentence, the themes' own words
  ("Made with Material for MkDocs", alabaster's "Powered by", "Related Topics");
- the pager: a pager label followed by a page title (「次へ →: 最初のタスクを書く」, Material's 「次 最初の…」,
  alabaster's "Next: 最初の…");
- the sidebar's page list: two pages' titles one after the other, in navigation order, with only
  whitespace between (the content never lists two titles that way);
- the permalink mark `¶` that Material and Sphinx put after every heading.
"""

from __future__ import annotations

import re
from itertools import pairwise

from .content import FOOTER_TEXT, HEADER_TAGLINE, NAV_LABEL, NEXT_LABEL, PREV_LABEL
from .pages import PAGES

FOOTER_SENTENCE = "CC BY 4.0 で提供されています"  # in every generator's footer (MkDocs: copyright, Sphinx: copyright)
assert FOOTER_SENTENCE in FOOTER_TEXT

_OWN_LAYOUT = (HEADER_TAGLINE, NAV_LABEL, PREV_LABEL, NEXT_LABEL)
SENTINELS = {
    "jekyll": _OWN_LAYOUT,
    "hugo": _OWN_LAYOUT,
    "plain": _OWN_LAYOUT,
    # Material: skip link, TOC label, search box, footer credit.
    "mkdocs": ("コンテンツにスキップ", "目次", "検索を初期化", "Made with", "Material for MkDocs"),
    # alabaster: sidebar headings and relations, footer credit and source link.
    "sphinx-html": ("ナビゲーション", "Related Topics", "Documentation overview", "Powered by", "Page source"),
}
SENTINELS["sphinx-dirhtml"] = SENTINELS["sphinx-html"]

PAGER_LABELS = {
    "jekyll": (PREV_LABEL, NEXT_LABEL), "hugo": (PREV_LABEL, NEXT_LABEL), "plain": (PREV_LABEL, NEXT_LABEL),
    "mkdocs": ("前", "次"),  # md-footer__direction, then the page's title
    "sphinx-html": ("Previous:", "Next:"), "sphinx-dirhtml": ("Previous:", "Next:"),
}


def chrome_in(text: str, generator: str) -> list[str]:
    """The pieces of `generator`'s chrome found in `text` (a chunk's content or title)."""
    found = [s for s in (FOOTER_SENTENCE, "¶", *SENTINELS[generator]) if s in text]
    titles = "|".join(re.escape(p.title) for p in PAGES)
    for label in PAGER_LABELS[generator]:
        found += [f"pager: {m.group(0)!r}" for m in re.finditer(rf"{re.escape(label)}\s*:?\s*(?:{titles})", text)]
    for before, after in pairwise(PAGES):
        if re.search(rf"{re.escape(before.title)}\s+{re.escape(after.title)}", text):
            found.append(f"page list: {before.title!r} then {after.title!r}")
    return found
