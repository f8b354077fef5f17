"""Which part of a page is its content, and what around it is the site's chrome: one decision for the
site's own pages and for crawled pages, taken from HTML structure, ARIA roles and class/id names that
many generators share (never from one site's names).

- `main_content(root)`: the main landmark (`[role=main]`, `<main>`; the innermost when they nest),
  narrowed to the `<article>` inside it when there is one (or one holding most of the articles'
  text); without a landmark the article of the body, else a container named like content
  (`.md-content`, Sphinx's `.body` in `.document`, `.document`, `#main-content`, `#content`,
  `.post-content`, `.entry-content`, `.page-content`, `.main-content`, `.content`) holding at least a
  third of the body's text, else the body (a Jekyll source page is a fragment: lxml wraps it in a body).
- `in_main_area(el, main)`: inside the main content and in no chrome there: where a box may be.
- `is_chrome(el)`: navigation and frame rather than content: `nav`, `header`, `footer`, `search`;
  roles navigation, banner, contentinfo, search, complementary, doc-toc, menubar; class or id tokens
  (split at spaces, `-` and `_`, so `toc` is not `stock`) naming sidebars, tables of contents,
  breadcrumbs, pagers, navigation, menus, skip links, edit links; `rel=prev|next|edit` links, Sphinx
  and Material `headerlink`s and any `¶`/`#` link of a heading; GitHub/GitLab edit links; links that
  read only 前へ / 次へ / Previous / Next (or one of these, a colon and a page's title),
  このページを編集 / Edit this page, Skip to content (and the like: NAV_LINK_TEXTS). An `<aside>` is chrome only by such a role or name (`<aside class="note">` is
  content).
- `page_language`, `generator_meta`, `meta_site_name`, `breadcrumbs`: what the page says about itself.
- `site_name_suffix`, `strip_site_name`: the site's name at the end of page titles;
  `is_placeholder_title`: a title a generator writes for a page without one (Sphinx's `<no title>`);
  `first_heading`: the first heading of the main content, the title such a page shows.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

__all__ = ["breadcrumbs", "first_heading", "generator_meta", "in_main_area", "is_placeholder_title", "is_chrome", "main_content", "meta_site_name",
           "page_language", "site_name_suffix", "strip_site_name"]

CHROME_TAGS = frozenset({"nav", "header", "footer", "search"})
CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "doc-toc", "menubar"})
# Roles of content widgets: Bootstrap's `nav nav-tabs` is a tab list of the content, not navigation.
_WIDGET_ROLES = frozenset({"tablist", "tab", "tabpanel"})
# One token of a class or id that names chrome.
CHROME_TOKENS = frozenset({
    "sidebar", "sidebars", "sidenav", "sidemenu", "toc", "tableofcontents", "breadcrumb", "breadcrumbs",
    "pager", "pagination", "paginator", "paginav", "pagenav", "nav", "navbar", "navigation", "menu",
    "headerlink", "anchorjs", "sphinxsidebar", "sphinxsidebarwrapper", "skiplink", "skiplinks", "editlink",
})
# Words that make a nav/menu name a content wrapper (Read the Docs: div.wy-nav-content holds the page).
_NAV_WORDS = frozenset({"nav", "navigation", "menu"})
_CONTENT_WORDS = frozenset({"content", "main", "body"})
# Two tokens that name chrome together (edit-this-page, skip-to-content, prev-next, table-of-contents …).
_CHROME_PAIRS = (
    ("edit", frozenset({"link", "page", "this", "github", "gitlab", "button", "source", "url"})),
    ("skip", frozenset({"link", "links", "to", "content", "main", "nav"})),
    ("prev", frozenset({"next"})),
    ("previous", frozenset({"next"})),
    ("contents", frozenset({"table"})),
    ("anchor", frozenset({"link", "heading", "header"})),
    ("hash", frozenset({"link"})),
    ("permalink", frozenset({"heading", "header", "link"})),
)
# Whole class names of MkDocs Material's frame whose tokens alone say nothing (md-footer: md, footer).
CHROME_CLASSES = frozenset({"md-header", "md-footer", "md-tabs", "md-source", "md-source-file",
                            "md-content__button", "md-skip", "md-search", "md-dialog"})
_CHROME_RELS = frozenset({"prev", "next", "previous", "edit"})
# What a link reads when it only turns the page, edits it or skips to it (arrows and punctuation
# taken off, lower-cased).
NAV_LINK_TEXTS = frozenset({
    "前", "次", "前へ", "次へ", "前のページ", "次のページ", "前のページへ", "次のページへ", "前の記事", "次の記事",
    "前の章", "次の章", "prev", "previous", "next", "previous page", "next page", "older", "newer",
    "older post", "newer post", "older posts", "newer posts",
    "このページを編集", "ページを編集", "編集する", "edit this page", "edit page", "edit on github", "edit on gitlab",
    "improve this page", "suggest an edit", "view page source", "ページのソースを表示",
    "skip to content", "skip to main content", "skip to navigation", "コンテンツにスキップ", "本文へスキップ",
    "本文へ移動", "メインコンテンツへスキップ",
})
# A pager link that names the page it turns to: 「前へ: インストール」, "Next: Usage".
_PAGER_WORDS = ("前", "次", "前へ", "次へ", "前のページ", "次のページ", "prev", "previous", "next", "older", "newer")
_PAGER_PREFIX = re.compile("(?:" + "|".join(sorted(_PAGER_WORDS, key=len, reverse=True)) + r")\s*[:：]\s*\S",
                           re.IGNORECASE)
# An edit link of GitHub or GitLab (…/edit/main/docs/page.md, …/-/edit/…): the page's source, not its text.
_EDIT_HREF = re.compile(r"^https?://[^/]*(?:github|gitlab)[^/]*/.+/edit/", re.IGNORECASE)
_LINK_STRIP = " \t\n\r\u3000\u00a0\u200b←→«»‹›<>|:：・-–—⇐⇒◀▶◁▷"
_SELF_LINK_TEXTS = frozenset({"", "¶", "#", "§", "🔗", "link", "permalink"})  # a heading's own-link marks
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_SPLIT = re.compile(r"[\s_-]+")
# Screen-reader-only classes: such a link to "#…" is a skip link.
_SR_ONLY = frozenset({"sr-only", "visually-hidden", "visuallyhidden", "screen-reader-text", "screen-reader-only"})

_FRAME = frozenset({"html", "body"})  # never chrome, whatever their classes say (RTD: body.wy-body-for-nav)
# Every chrome token or pair holds one of these: names without any (most) are settled by one search.
_HINTS = re.compile("nav|sidebar|toc|contents|breadcrumb|pager|paginat|menu|headerlink|anchor|skip|edit|hash|"
                    "permalink|md-|prev")


def is_chrome(el, keys: list | None = None) -> bool:
    """Whether the element is the site's chrome rather than content (see the module docstring).
    `keys`: the element's attribute names (`el.keys()`) when the caller has them. An element without
    attributes is chrome only by its tag: a walk over every element may skip asking about the others."""
    tag = el.tag
    if tag in CHROME_TAGS:
        return True
    if tag.__class__ is not str or tag in _FRAME:
        return False
    if keys is None:
        keys = el.keys()
    if "role" in keys:
        role = el.get("role").split()
        first = role[0].lower() if role else ""
        if first in CHROME_ROLES:
            return True
        if first in _WIDGET_ROLES:
            return False
    classes = el.get("class") if "class" in keys else None
    if tag == "a" and _chrome_link(el, classes):
        return True
    if classes is not None and _chrome_classes(classes):
        return True
    if "id" not in keys or tag in _HEADINGS or tag == "section":
        return False  # a section's id comes from its heading's text (Sphinx: <section id="navigation">)
    ident = el.get("id").lower()
    return _HINTS.search(ident) is not None and "section" not in (classes or "").split() and _chrome_tokens(ident)


def _chrome_link(el, classes: str | None) -> bool:
    rel = el.get("rel")
    if rel and _CHROME_RELS.intersection(rel.lower().split()):
        return True
    href = (el.get("href") or "").strip()
    if not href:
        return False
    if href.startswith("#"):
        if classes and _SR_ONLY.intersection(classes.lower().split()):
            return True  # a skip link ("Skip to content"), shown only to screen readers
        parent = el.getparent()
        if parent is not None and parent.tag in _HEADINGS and (
                "".join(el.itertext()).strip(" \t\n\u00a0\u200b\ufe0e\ufe0f").lower() in _SELF_LINK_TEXTS):
            return True  # the heading's own link mark (¶, #, an icon)
    elif _EDIT_HREF.match(href):
        return True
    text = "".join(el.itertext())
    if len(text) > 80:
        return False
    words = " ".join(text.strip(_LINK_STRIP).lower().split())
    return words in NAV_LINK_TEXTS or _PAGER_PREFIX.match(words) is not None


@lru_cache(maxsize=8192)
def _chrome_classes(classes: str) -> bool:
    lowered = classes.lower()
    if _HINTS.search(lowered) is None:
        return False
    return bool(CHROME_CLASSES.intersection(lowered.split())) or _chrome_tokens(lowered)


def _chrome_tokens(value: str) -> bool:
    tokens = set(_SPLIT.split(value))
    found = CHROME_TOKENS.intersection(tokens)
    if found and not (found <= _NAV_WORDS and not _CONTENT_WORDS.isdisjoint(tokens)):
        return True
    return any(word in tokens and not others.isdisjoint(tokens) for word, others in _CHROME_PAIRS)


# -- the main content ------------------------------------------------------------------------------

# Containers named like the content, most specific first: (attribute, value, inside an element of class).
_NAMED = (
    ("class", "md-content", None), ("class", "body", "document"), ("class", "document", None),
    ("id", "main-content", None), ("id", "main_content", None), ("id", "maincontent", None), ("id", "content", None),
    ("class", "post-content", None), ("class", "entry-content", None), ("class", "article-content", None),
    ("class", "page-content", None), ("class", "main-content", None), ("class", "content", None),
)
_NAMED_IDS = {value: rank for rank, (kind, value, _) in enumerate(_NAMED) if kind == "id"}
_NAMED_SHARE = 1 / 3  # a named container holding less of the body's text is a box, not the content
_CONTAINERS = ("div", "section", "main", "article")  # the tags main landmarks and named containers have


def main_content(root):
    """The element holding the page's main content (see the module docstring)."""
    body = root if root.tag == "body" else root.find("body")  # lxml puts body under html
    if body is None:
        body = next(root.iter("body"), root)
    landmarks, articles, named = [], [], []
    for el in root.iter(*_CONTAINERS):  # libxml2 picks the tags; most have a class at most
        tag, keys = el.tag, el.keys()
        if tag == "main" or ("role" in keys and el.get("role") == "main"):
            landmarks.append(el)
        if tag == "article":
            articles.append(el)
        rank = _named_class_rank(el.get("class")) if "class" in keys else 99
        if "id" in keys:
            rank = min(rank, _NAMED_IDS.get(el.get("id"), 99))
        if rank < 99:
            named.append((rank, el))
    landmark = _landmark([el for el in landmarks if el.get("hidden") is None and not _in_chrome_structure(el)])
    scope = landmark if landmark is not None else body
    article = _article([el for el in articles if _visible_in(el, scope)])
    if article is not None:
        return article
    if landmark is not None:
        return landmark
    chosen = _named([(rank, el) for rank, el in named if _visible_in(el, body)], body)
    return chosen if chosen is not None else body


@lru_cache(maxsize=4096)
def _named_class_rank(classes: str | None) -> int:
    if not classes:
        return 99
    names = set(classes.split())
    return min((rank for rank, (kind, value, _) in enumerate(_NAMED) if kind == "class" and value in names),
               default=99)


def in_main_area(el, main) -> bool:
    """Whether `el` is content of the main area `main` (main_content's): `main` itself or inside it,
    with no chrome between them (a sidebar or a pager inside `<main>`), as the section walk reads it
    (blocks.py). The element's own names are not asked: a box's class is the site's choice."""
    return el is main or _reaches(el, main)


def _in_chrome_structure(el) -> bool:
    """Inside a nav/header/footer or an element whose role is chrome: a main landmark's ancestors are
    not judged by their class names (Read the Docs wraps its main in `wy-nav-content`)."""
    for node in el.iterancestors():
        role = (node.get("role") or "").split()
        if node.tag in CHROME_TAGS or (role and role[0].lower() in CHROME_ROLES):
            return True
    return False


def _visible_in(el, scope) -> bool:
    """Inside `scope`, not hidden, and neither chrome nor inside chrome below `scope`."""
    return el.get("hidden") is None and not is_chrome(el) and _reaches(el, scope)


def _reaches(el, scope) -> bool:
    """Whether `scope` is an ancestor of `el` with no chrome between them."""
    for node in el.iterancestors():
        if node is scope:
            return True
        if is_chrome(node):
            return False
    return False


def _inside(el, scope) -> bool:
    return el is scope or any(node is scope for node in el.iterancestors())


def _landmark(found: list):
    """The main landmark: the only one, the innermost of nested ones, else the first."""
    if not found:
        return None
    chosen = found[0]
    for el in found[1:]:
        if not _inside(el, chosen):
            return chosen
        chosen = el
    return chosen


def _article(articles: list):
    """The one outermost article, or of several the one holding more than half of their text."""
    outer = [a for a in articles if not any(other is not a and _inside(a, other) for other in articles)]
    if len(outer) <= 1:
        return outer[0] if outer else None
    sizes = [_text_size(a) for a in outer]
    best = max(range(len(outer)), key=sizes.__getitem__)
    return outer[best] if sizes[best] * 2 > sum(sizes) else None


def _named(named: list, body):
    """The most specific named container holding at least _NAMED_SHARE of the body's text."""
    ranked = [(rank, el) for rank, el in named if _NAMED[rank][2] is None or any(
        _NAMED[rank][2] in (a.get("class") or "").split() for a in el.iterancestors())]
    if not ranked:
        return None
    total = _text_size(body)
    for _, el in sorted(ranked, key=lambda pair: pair[0]):  # stable: document order within a rank
        if _text_size(el) >= total * _NAMED_SHARE:
            return el
    return None


def _text_size(el) -> int:
    """Characters of text (whitespace aside) under the element, scripts and styles left out."""
    def size(node) -> int:
        return sum(len(text.strip()) for text in node.itertext())

    return size(el) - sum(size(node) for node in el.iter("script", "style"))


# -- what the page says about itself ---------------------------------------------------------------


def page_language(root) -> str:
    """The primary language subtag of `<html lang>` (or `xml:lang`), lower-cased ("ja", "en"); ""."""
    html = root if root.tag == "html" else next(root.iter("html"), None)
    if html is None:
        return ""
    value = html.get("lang") or html.get("xml:lang") or html.get("{http://www.w3.org/XML/1998/namespace}lang") or ""
    return re.split(r"[-_]", value.strip(), maxsplit=1)[0].lower()


# A page whose main area's letters are at least this share kana is written in Japanese, whatever its `<html lang>` says:
# themes declare their own default (MkDocs' readthedocs theme writes lang="en" on a site written in Japanese),
# while an English page that names a Japanese term or two stays far below it.
JAPANESE_KANA_SHARE = 0.05
_KANA = re.compile(r"[\u3041-\u3096\u30a1-\u30fa]")


def written_in_japanese(main) -> bool:
    """Whether the text of a page's main area (main_content) is Japanese by its kana: its content's text, the
    chrome inside it (breadcrumbs, pagers, edit links: is_chrome) and scripts and styles left out."""
    pieces = [main.text or ""]
    stack = list(reversed(main))  # no recursion: a page may nest thousands of elements deep
    while stack:
        el = stack.pop()
        pieces.append(el.tail or "")  # the tail is the parent's text, whatever the element is
        if el.tag.__class__ is not str or el.tag in ("script", "style") or is_chrome(el):
            continue
        pieces.append(el.text or "")
        stack.extend(reversed(el))
    text = "".join(pieces)
    letters = sum(ch.isalpha() for ch in text)
    return bool(letters) and len(_KANA.findall(text)) >= JAPANESE_KANA_SHARE * letters


def text_language(root, main=None) -> str:
    """The page's language: `<html lang>`'s primary subtag (page_language), or "ja" when the page declares
    another but the text of its main area (`main`, else main_content's) is Japanese (written_in_japanese)."""
    declared = page_language(root)
    if declared in ("", "ja"):
        return declared
    main = main if main is not None else main_content(root)
    return "ja" if main is not None and written_in_japanese(main) else declared


def generator_meta(root) -> str:
    """The content of `<meta name="generator">` ("Hugo 0.111.3", "Jekyll v4.3.1", …), or ""."""
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() == "generator" and (meta.get("content") or "").strip():
            return meta.get("content").strip()
    return ""


def meta_site_name(root) -> str:
    """The content of `<meta property="og:site_name">`, or ""."""
    for meta in root.iter("meta"):
        if (meta.get("property") or meta.get("name") or "").strip().lower() == "og:site_name":
            return " ".join((meta.get("content") or "").split())
    return ""


_TRAIL_SEPARATORS = " \t\n\r\u00a0\u200b»›>/|・:→"
_CURRENT = frozenset({"active", "current", "nav-item-this"})
_ASIDE = frozenset({"aside", "right"})  # RTD's "View page source", Sphinx's "next | previous | index"


def breadcrumbs(root) -> tuple[str, ...]:
    """The texts of the page's breadcrumb trail, outermost first, without the page itself; () when
    the page has none. The trail is an element labelled breadcrumb (aria-label), a schema.org
    BreadcrumbList, an element whose class tokens say breadcrumb(s), or Sphinx's related bar."""
    trails = [el for el in root.iter() if el.tag.__class__ is str and _is_trail(el)]
    for trail in trails:
        items = _trail_items(trail)
        if items:
            return _without_current(items, root)
    return ()


def _is_trail(el) -> bool:
    if "breadcrumb" in (el.get("aria-label") or "").lower() or "BreadcrumbList" in (el.get("itemtype") or ""):
        return True
    tokens = set(_SPLIT.split((el.get("class") or "").lower()))
    return bool(tokens & {"breadcrumb", "breadcrumbs"}) or (
        "related" in tokens and (el.get("role") or "").lower() == "navigation")  # Sphinx's related bar


def _trail_items(trail) -> list[tuple[str, bool]]:
    """(text, is the current page) of each entry: its list items, else its links."""
    items = []
    for entry in list(trail.iter("li")) or list(trail.iter("a")):
        tokens = set(_SPLIT.split((entry.get("class") or "").lower())) | set((entry.get("class") or "").split())
        if tokens & _ASIDE:
            continue
        text = " ".join("".join(entry.itertext()).split()).strip(_TRAIL_SEPARATORS)
        if not text:
            text = next((a.get("aria-label").strip() for a in entry.iter("a") if a.get("aria-label")), "")
        current = bool(tokens & _CURRENT) or entry.get("aria-current") is not None
        if text:
            items.append((text, current))
    return items


def _without_current(items: list[tuple[str, bool]], root) -> tuple[str, ...]:
    texts = [text for text, current in items if not current]
    heading = next((" ".join("".join(h.itertext()).split()).strip("¶ ") for h in root.iter("h1")), "")
    if texts and heading and texts[-1] == heading:
        texts.pop()
    return tuple(texts)


# -- the site's name in page titles ----------------------------------------------------------------

SEPARATORS = (" | ", " - ", " — ", " – ", " · ", " :: ", "｜")
_DOCUMENTATION = re.compile(r"(?:\s+v?[\w.]+)?\s+(?:documentation|docs|ドキュメント)$", re.IGNORECASE)


def site_name_suffix(titles: list[str]) -> str:
    """The site name that most of one site's page titles end with after a separator (` | `, ` - `,
    ` — `, ` – `, ` · `, ` :: `, `｜`): "" unless at least 2 titles and more than half of them end
    with it (a title that is the name alone counts). Of equally shared suffixes the longest wins."""
    titles = [" ".join(t.split()) for t in titles if t and t.strip()]
    counts: Counter = Counter()
    for title in titles:
        counts.update(set(_suffixes(title)))
    best, support = "", 0
    for suffix, with_separator in counts.items():
        total = with_separator + sum(title == suffix for title in titles)
        if with_separator >= 2 and total * 2 > len(titles) and (total, len(suffix)) > (support, len(best)):
            best, support = suffix, total
    return best


def _suffixes(title: str) -> list[str]:
    found = []
    for separator in SEPARATORS:
        start = title.find(separator)
        while start > 0:
            suffix = title[start + len(separator):].strip()
            if suffix:
                found.append(suffix)
            start = title.find(separator, start + 1)
    return found


def strip_site_name(title: str, site_name: str) -> str:
    """The title without `<separator> site_name` at its end (Sphinx's `— Name 1.0 documentation` too,
    given the project name); a title that is the site name alone, or has no such end, stays as is."""
    title, name = " ".join(title.split()), " ".join(site_name.split())
    if not name or title == name:
        return title
    for separator in SEPARATORS:
        head, found, tail = title.rpartition(separator)
        if found and head.strip() and (tail.strip() == name or _names_documentation(tail.strip(), name)):
            return head.strip()
    return title


def _names_documentation(tail: str, name: str) -> bool:
    return tail.startswith(name) and bool(_DOCUMENTATION.fullmatch(tail[len(name):]))


# What a generator writes as the <title> of a page that has none: Sphinx renders a file without a
# section title (a fragment written to be included) as a page titled "<no title>", in every language.
PLACEHOLDER_TITLES = frozenset({"<no title>"})


def is_placeholder_title(title: str) -> bool:
    """Whether the page's <title>, the site's name after a separator aside, is a generator's placeholder."""
    head = " ".join(title.split())
    for separator in SEPARATORS:
        head = head.partition(separator)[0]
    return head.strip().lower() in PLACEHOLDER_TITLES


def first_heading(main) -> str:
    """The text of the first h1–h6 with words in `main` (a heading's own ¶ mark left out), or ""."""
    for heading in main.iter(*_HEADINGS):
        text = " ".join("".join(heading.itertext()).split()).strip("¶#§ ")
        if text:
            return text
    return ""
