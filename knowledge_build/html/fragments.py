"""URL fragments that land on a section: an element id, or a text directive (`:~:text=`).

A section whose heading (or its wrapper) has an id is linked as `page#id`. Any other heading is
linked with a text directive as defined by URL Fragment Text Directives (WICG
scroll-to-text-fragment, `#:~:text=[prefix-,]start[,end][,-suffix]`), so a browser scrolls to it and
highlights it. A bare directive lands on the *first* match in the page, so a heading whose text
already occurs earlier gets context: a suffix from the text right after it, or a prefix from the text
right before it, the shortest that makes this heading the first match.

How Chromium matches (checked in Debian's headless Chromium 156, see tests/test_fragments_browser.py):
- Each term must lie inside one block-level element; a suffix or prefix may sit in the next or previous
  block (the whitespace and block boundaries between terms are skipped).
- Comparison ignores case, width and accents: `q1` matches `Ｑ１`, `例題 １` matches `例題　１` (U+3000)
  and `練習&nbsp;２`, `▶ 例題` matches `▶️ 例題` (U+FE0F is ignored). Emoji and ▶ in the DOM text match as
  they are; text made by CSS (`::before { content: "▶ " }`) is not in the page's text and never matches.
- Terms must begin and end on word boundaries (Unicode word segmentation, with a dictionary for
  Japanese): a whole heading element always matches, `三角形` matches in 「三角形の面積」, but the partial
  words `三角` and `角形` do not, and neither does the suffix `-長方` before 「長方形の…」. Context is
  therefore only ever cut at block edges, whitespace or Japanese/ASCII punctuation (`_BREAKS`).

`text_before` and `text_after` are the page's visible text as the browser sees it (DOM text of
rendered elements, no CSS-generated content), whitespace runs folded, with a newline between
block-level elements (paragraphs, list items, table cells, headings) so that context never spans two
blocks, which Chromium would not match.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple
from urllib.parse import quote, unquote

DIRECTIVE = ":~:"
# Context is cut only where a word boundary is certain: block edges, whitespace, and punctuation
# that Unicode word segmentation always separates (its MidLetter/MidNum marks . , : ' are left out,
# as are ・ and ー, which join katakana words).
_BREAKS = frozenset(" 。、，．！？!?「」『』（）()【】［］[]〈〉《》〔〕…")
# Longer context makes unreadable URLs; a heading that needs more stays a plain directive.
MAX_CONTEXT = 80
# A block holding TeX source is rendered by KaTeX/MathJax into other text, so it is never context.
_TEX = ("\\", "$")


class TextDirective(NamedTuple):
    """The decoded terms of one `text=` directive; unused terms are None."""

    start: str
    prefix: str | None = None
    end: str | None = None
    suffix: str | None = None


def encode_text_directive(text: str) -> str:
    """Percent-encode one term of a text directive (UTF-8), whitespace runs folded to one `%20`.

    The grammar requires `-`, `,` and `&` to be encoded (they delimit terms and directives). Everything
    outside RFC 3986's unreserved set is encoded too: the grammar allows a percent-encoded byte anywhere,
    and a literal `(`, `)` or `'` would break the link in Markdown, where a tutor shows it."""
    return quote(_fold_space(text), safe="").replace("-", "%2D")


def section_fragment(heading: str, *, anchor: str | None, text_before: str, text_after: str) -> str:
    """The fragment (without `#`) that lands on `heading`: `anchor` when there is one, else a text
    directive whose first match in the page is this heading.

    The heading's text becomes the directive's start term. When it also occurs in `text_before`, the
    shortest context that makes this heading the first match is added: a suffix (`,-…`, the first words
    of `text_after`'s first block), a prefix (`…-,`, the last words of `text_before`'s last block), or
    both. When no context within MAX_CONTEXT characters makes it unique (identical headings followed
    and preceded by identical text), the plain directive is returned; `lands_on_heading` tells a
    caller that wants to warn. An empty heading has no text to link to: ValueError."""
    if anchor:
        return anchor
    start = _fold_space(heading)
    if not start:
        raise ValueError("a heading without text cannot be linked by a text directive; give it an id")
    page = _Page(text_before, start, text_after)
    if page.first_match(TextDirective(start)) == page.heading_at:
        return _directive(TextDirective(start))
    for prefix, suffix in _contexts(page.before_blocks[-1:], page.after_blocks[:1]):
        candidate = TextDirective(start, prefix=prefix, suffix=suffix)
        if page.first_match(candidate) == page.heading_at:
            return _directive(candidate)
    return _directive(TextDirective(start))


def lands_on_heading(fragment: str, heading: str, *, text_before: str, text_after: str) -> bool:
    """Whether a text-directive fragment's first match is the heading between the two texts (False
    for the plain directive `section_fragment` returns when nothing made the heading unique)."""
    page = _Page(text_before, _fold_space(heading), text_after)
    directives = parse_text_directives(fragment)
    return bool(directives) and page.first_match(directives[0]) == page.heading_at


def fragment_lands(fragment: str, page_text: str) -> bool:
    """Whether every text directive in `fragment` (with or without `#`) finds its text, with its
    context, in `page_text` (the page's visible text; blocks separated by newlines as above).

    Matching follows the spec where it can be checked without a browser: terms are compared ignoring
    case, width and accents (NFKC, case folding, combining marks removed except the kana voicing marks),
    whitespace between terms is skipped, a term never spans two lines (blocks). Word boundaries are not
    modelled (a directive cut inside a Japanese word passes here but not in a browser; `section_fragment`
    never cuts there). An id fragment is not a directive: the caller checks it against the page's ids
    (ValueError here, so it cannot pass unchecked)."""
    directives = parse_text_directives(fragment)
    if not directives:
        raise ValueError(f"'{fragment}' has no text directive; check an id fragment against the page's ids")
    folded = _fold_page(page_text)
    return all(_pattern(d).search(folded) is not None for d in directives)


def parse_text_directives(fragment: str) -> list[TextDirective]:
    """The valid `text=` directives of a fragment (`#id:~:text=a&text=b` -> two), decoded; invalid
    ones are left out, as a browser ignores them."""
    _, found, directives = fragment.removeprefix("#").partition(DIRECTIVE)
    if not found:
        return []
    parsed = (_parse(d.removeprefix("text=")) for d in directives.split("&") if d.startswith("text="))
    return [d for d in parsed if d is not None]


def _parse(value: str) -> TextDirective | None:
    """The spec's "parse a text directive": up to four comma-separated terms, prefix ending and suffix
    starting with a dash."""
    tokens = value.split(",")
    prefix = suffix = None
    if tokens[0].endswith("-"):
        prefix = tokens.pop(0)[:-1]
        if not prefix or "-" in prefix or not tokens:
            return None
    if tokens and tokens[-1].startswith("-"):
        suffix = tokens.pop()[1:]
        if not suffix or "-" in suffix:
            return None
    if not 1 <= len(tokens) <= 2 or not all(tokens) or any("-" in t for t in tokens):
        return None
    end = tokens[1] if len(tokens) == 2 else None
    return TextDirective(*(unquote(t) if t is not None else None for t in (tokens[0], prefix, end, suffix)))


def _directive(d: TextDirective) -> str:
    terms = [encode_text_directive(d.prefix) + "-"] if d.prefix else []
    terms.append(encode_text_directive(d.start))
    if d.end:
        terms.append(encode_text_directive(d.end))
    if d.suffix:
        terms.append("-" + encode_text_directive(d.suffix))
    return f"{DIRECTIVE}text=" + ",".join(terms)


class _Page:
    """The page around a heading, folded for matching, with the heading's offset."""

    def __init__(self, text_before: str, heading: str, text_after: str):
        self.before_blocks = _blocks(text_before)
        self.after_blocks = _blocks(text_after)
        before = "\n".join(_fold(b) for b in self.before_blocks)
        self.heading_at = len(before) + 1 if before else 0
        self.text = "\n".join(filter(None, (before, _fold(heading), *(_fold(b) for b in self.after_blocks))))

    def first_match(self, directive: TextDirective) -> int | None:
        """Where the start term of the directive's first match begins (None: no match)."""
        found = _pattern(directive).search(self.text)
        return found.start("start") if found else None


def _pattern(d: TextDirective) -> re.Pattern[str]:
    """The directive as a regex over folded text: terms inside one line, whitespace between terms
    skipped (a newline, i.e. a block boundary, included)."""
    term = re.escape(_fold(d.start))
    if d.end:
        term += r".*?" + re.escape(_fold(d.end))
    pattern = f"(?P<start>{term})"
    if d.prefix:
        pattern = re.escape(_fold(d.prefix)) + r"\s*" + pattern
    if d.suffix:
        pattern += r"\s*" + re.escape(_fold(d.suffix))
    return re.compile(pattern, re.DOTALL)


def _contexts(before: list[str], after: list[str]):
    """(prefix, suffix) candidates, shortest first: suffixes and prefixes alone, then both together."""
    suffixes = sorted(_suffixes(after[0]), key=len) if after and not _has_tex(after[0]) else []
    prefixes = sorted(_prefixes(before[0]), key=len) if before and not _has_tex(before[0]) else []
    singles = sorted([(None, s) for s in suffixes] + [(p, None) for p in prefixes],
                     key=lambda c: len(c[0] or c[1]))
    yield from singles
    pairs = [(p, s) for p in prefixes for s in suffixes]
    yield from sorted(pairs, key=lambda c: len(c[0]) + len(c[1]))


def _has_tex(block: str) -> bool:
    return any(mark in block for mark in _TEX)


def _suffixes(block: str) -> set[str]:
    """Leading parts of a block that end on a certain word boundary, up to MAX_CONTEXT characters."""
    cuts = {block[:i].rstrip() for i in range(1, min(len(block), MAX_CONTEXT) + 1) if _cut_at(block, i)}
    return {c for c in cuts if c.strip()}


def _prefixes(block: str) -> set[str]:
    """Trailing parts of a block that begin on a certain word boundary, up to MAX_CONTEXT characters."""
    low = max(len(block) - MAX_CONTEXT, 0)
    cuts = {block[i:].lstrip() for i in range(len(block) - 1, low - 1, -1) if _cut_at(block, i)}
    return {c for c in cuts if c.strip()}


def _cut_at(block: str, i: int) -> bool:
    """A word boundary is certain at position i (between block[i-1] and block[i])."""
    return i in (0, len(block)) or block[i] in _BREAKS or block[i - 1] in _BREAKS


def _blocks(text: str) -> list[str]:
    return [b for b in (_fold_space(line) for line in text.splitlines()) if b]


def _fold_space(text: str) -> str:
    # str.split() also splits on U+3000 and NBSP, which Chromium matches as a space.
    return " ".join(text.split())


def _fold_page(text: str) -> str:
    return "\n".join(_fold(b) for b in _blocks(text))


def _fold(text: str) -> str:
    """A matching key close to the spec's base-character comparison: NFKC width folding, case folding,
    combining marks dropped (accents, U+FE0F) except the kana voicing marks, which Chromium respects."""
    kept = unicodedata.normalize("NFKD", text).translate(_MARKS)
    return _fold_space(unicodedata.normalize("NFKC", kept).casefold())


def fold_decomposed(text: str) -> str:
    """_fold without its composition and whitespace folding: compatibility decomposition, combining
    marks dropped, case folded. A third of _fold's cost (composition is most of it), and where
    folded texts contain a term, these contain it too (が decomposes to か and its voicing mark, so
    it also contains か): a search over a whole page rules matches out with it, never in."""
    return unicodedata.normalize("NFKD", text).translate(_MARKS).casefold()


class _MarkTable(dict):
    """str.translate's table for _fold: a combining mark maps to None (dropped), any other character
    to itself. Filled as characters are first seen, so a page costs one C-level pass, not a Python
    call per character (sections fold every block of every page)."""

    def __missing__(self, code: int):
        char = chr(code)
        kept = unicodedata.category(char) != "Mn" or char in "\u3099\u309a"
        self[code] = code if kept else None
        return code if kept else None


_MARKS = _MarkTable()
