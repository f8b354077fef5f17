"""Labelled questions and `is_hit`: whether a search result is on the labelled page, at or under the
labelled heading, whatever URL layout the generator gave the page.

A label names its place the same way for every generator: the page's source path (`guide/setup`) and
the text of a heading on it (or of an admonition's title, or the page's title for the whole page).
A result is placed on a page through the built site's files (`/tsumiki/docs/guide/setup/`,
`/guide/setup.html`, `/guide/setup/index.html` are all that page), and in the page by its title and
breadcrumb (`parents`) or, failing those, by where its URL fragment lands in the built HTML: an id
(on the heading, or on a wrapping `<section>` as Sphinx writes it) or a text directive.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import html as lxml_html

from knowledge_build.html.fragments import parse_text_directives

from .build import BuiltSite
from .content import Admonition, Heading
from .pages import BY_PATH

QUERIES = Path(__file__).with_name("queries.jsonl")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


@dataclass(frozen=True)
class Label:
    qid: str
    query: str
    page: str  # source path without extension: "guide/setup"
    heading: str  # a heading's text, an admonition's title, or the page's title


def load_queries(path: Path = QUERIES) -> list[Label]:
    with open(path, encoding="utf-8") as lines:
        return [Label(**json.loads(line)) for line in lines if line.strip()]


def is_hit(result_url: str, result_title: str, result_parents: list[str], label: Label, site: BuiltSite) -> bool:
    if page_of_url(result_url, site) != label.page:
        return False
    page = BY_PATH[label.page]
    wanted = _norm(label.heading)
    if wanted == _norm(page.title):
        return True
    title = _norm(result_title)
    names = [title, *(_norm(p) for p in result_parents)]
    fragment = urlsplit(result_url).fragment
    box_section = _admonition_section(label)
    if box_section is not None:  # the box itself, or the section it sits in (whose text holds it)
        if wanted in title or title == box_section:
            return True
        chain = location(site, label.page, fragment)
        return bool(chain) and chain[-1] == box_section
    if wanted in names:
        return True
    chain = location(site, label.page, fragment)
    return chain is not None and wanted in chain


def page_of_url(url: str, site: BuiltSite) -> str | None:
    """The page (source path) whose built file `url` names, with or without the site's base path."""
    path = unquote(urlsplit(url).path)
    base = site.base_path.rstrip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):]
    key = _page_key(path)
    return next((page for page, file in site.page_files.items() if _page_key(file) == key), None)


def location(site: BuiltSite, page: str, fragment: str) -> list[str] | None:
    """The headings enclosing the place `fragment` lands on in the built page, outermost first (the
    page's h1 first); None when there is no fragment or it lands nowhere."""
    if not fragment:
        return None
    root = _parsed(site.file(page))
    directives = parse_text_directives(fragment)
    if directives:
        target = _text_target(root, directives[0].start)
    else:
        found = root.xpath("//*[@id=$id]", id=unquote(fragment))
        target = found[0] if found else None
    return None if target is None else _chain_at(root, target)


@lru_cache(maxsize=256)
def _parsed(path: Path):
    # Every generator here writes UTF-8; a page without a charset meta would otherwise be read as Latin-1.
    return lxml_html.fromstring(path.read_bytes(), parser=lxml_html.HTMLParser(encoding="utf-8"))


def _text_target(root, start: str):
    """Where a text directive's start lands: a heading with that text, else the innermost element
    whose text holds it (the first in the page)."""
    wanted = _norm(start)
    for heading in root.iter(*_HEADINGS):
        if _norm(heading.text_content()) == wanted:
            return heading
    innermost = None
    for element in root.body.iter():
        if innermost is not None and not _within(element, innermost):
            break
        if isinstance(element.tag, str) and wanted in _norm(element.text_content()):
            innermost = element
    return innermost


def _within(element, ancestor) -> bool:
    return any(a is ancestor for a in element.iterancestors())


def _chain_at(root, target) -> list[str]:
    heading = _heading_of(target)
    stop = heading if heading is not None else target
    stack: list[tuple[int, str]] = []
    for element in root.iter():
        if element is stop and heading is None:
            break
        if isinstance(element.tag, str) and element.tag in _HEADINGS:
            level = int(element.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _norm(element.text_content())))
            if element is stop:
                break
    return [text for _, text in stack]


def _heading_of(element):
    """The heading an element stands for: itself, or the heading a wrapper (`<section id>`) opens with."""
    if element.tag in _HEADINGS:
        return element
    first = next(element.iter(*_HEADINGS), None)
    if first is not None and _norm(element.text_content()).startswith(_norm(first.text_content())):
        return first
    return None


def _admonition_section(label: Label) -> str | None:
    """When the label names an admonition by its title: the heading of the section it is in."""
    section = _norm(BY_PATH[label.page].title)
    for block in BY_PATH[label.page].blocks:
        if isinstance(block, Heading):
            section = _norm(block.text)
        elif isinstance(block, Admonition) and block.title and _norm(block.title) == _norm(label.heading):
            return section
    return None


def _page_key(path: str) -> str:
    path = "/" + path.lstrip("/")
    if path.endswith("/index.html"):
        path = path[: -len("index.html")]
    elif path.endswith(".html"):
        path = path[: -len(".html")]
    return path.strip("/")


def _norm(text: str) -> str:
    """Heading text as a reader sees it: no permalink mark (¶, #), whitespace folded."""
    return re.sub(r"\s+", " ", text.replace("¶", "")).strip().removesuffix(" #").strip()
