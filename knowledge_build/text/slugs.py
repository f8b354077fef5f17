"""ASCII slugs of Japanese titles and headings: glossary terms in English, other words romanised
from their reading in context. Anchor ids (ids.py) and section keys (sections.py) are named with it."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import ConfigError
from ..yamlfile import load as load_yaml
from ..yamlfile import load_file as load_yaml_file
from .ja import strip_label
from .tex import without_math

MAX_SLUG_WORDS = 4
MAX_SLUG_CHARS = 40


def load_glossary(extra: Path | None = None) -> dict[str, str]:
    text = resources.files("knowledge_build.data").joinpath("glossary.yml").read_text(encoding="utf-8")
    glossary = dict(load_yaml(text, "glossary.yml").data)
    if extra is not None:
        doc = load_yaml_file(extra)
        if not isinstance(doc.data or {}, dict):
            raise ConfigError(f"{extra}:{doc.line()}: the glossary must map terms to slugs. "
                              "Fix: write it as 'term: slug' lines.")
        glossary.update(doc.data or {})
    return {unicodedata.normalize("NFKC", str(k)): _slugify_ascii(str(v)) for k, v in glossary.items()}


@lru_cache(maxsize=1)
def english_terms() -> dict[str, str]:
    """English slug -> Japanese terms, from the glossary that names anchors: what an English query word
    expands to (the artifacts' query analyser and the box's bundle both read it)."""
    terms: dict[str, list[str]] = {}
    for term, slug in load_glossary().items():
        terms.setdefault(slug, []).append(term)
    return {slug: " ".join(found) for slug, found in terms.items()}


def slug_for(title: str, glossary: dict[str, str], topic: str = "") -> str:
    """An ASCII slug from the title: glossary terms in English, other nouns romanised, in title
    order; never TeX. A title with no words of its own (「練習1」) takes the words of `topic`
    (the page's title) and keeps its number: a slug is never a bare number."""
    text = unicodedata.normalize("NFKC", title)
    words = _slug_words(without_math(strip_label(text)), glossary)
    if not words or all(w.isdigit() for w in words):
        number = "-".join(re.findall(r"[0-9]+", text))
        words = _slug_words(without_math(strip_label(unicodedata.normalize("NFKC", topic))), glossary)
        head = _limit("-".join([w for w in words if not w.isdigit()][:MAX_SLUG_WORDS - 1]), len(number) + 1)
        return "-".join(w for w in (head, number) if w)
    return _limit("-".join(words))


def _slug_words(text: str, glossary: dict[str, str]) -> list[str]:
    text = text.replace("\\", " ").strip()
    if not text:
        return []
    spans = list(_segments(text, glossary))
    for nouns_only in (True, False):  # verbs only when the title has no noun at all
        # Words are read in the context of the whole title (正 of 正多角形 is sei, not tadashi),
        # then each takes its place among the glossary terms.
        context = romanized_words(text, nouns_only)
        pieces: list[str] = []
        for is_term, value, start, end in spans:
            words = [value] if is_term else [w for w, at in context if start <= at < end]
            for word in words:
                if word not in pieces:
                    pieces.append(word)
        if pieces:
            return pieces[:MAX_SLUG_WORDS]
    return []


def _segments(text: str, glossary: dict[str, str]):
    """Split text into glossary slugs (True, slug, start, end) and the stretches between them
    (False, "", start, end)."""
    longest = max((len(k) for k in glossary), default=0)
    i = start = 0
    while i < len(text):
        for size in range(min(longest, len(text) - i), 0, -1):
            slug = glossary.get(text[i:i + size])
            if slug:
                if text[start:i].strip():
                    yield False, "", start, i
                yield True, slug, i, i + size
                i = start = i + size
                break
        else:
            i += 1
    if text[start:].strip():
        yield False, "", start, len(text)


# Words that say what kind of box it is; the prefix already says so.
_KIND_WORDS = {"コツ", "ポイント", "注意", "まとめ"}


def romanized_words(text: str, nouns_only: bool = True) -> list[tuple[str, int]]:
    """(romaji, offset) of the nouns (or all content words) of a Japanese text, romanised from
    their reading in context (Hepburn, long vowels dropped)."""
    import jaconv

    from .ja import content_words

    words = []
    for surface, kana, at in content_words(text, nouns_only):
        if surface in _KIND_WORDS:
            continue
        romaji = jaconv.kata2alphabet(jaconv.hira2kata(kana)).replace("-", "")  # ー is a long vowel
        romaji = re.sub(r"ou|oo", "o", _slugify_ascii(romaji)).replace("uu", "u")
        if romaji:
            words.append((romaji, at))
    return words


def _slugify_ascii(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _limit(slug: str, room: int = 0) -> str:
    """At most MAX_SLUG_CHARS - room characters, cut at a hyphen when there is one."""
    size = MAX_SLUG_CHARS - room
    if len(slug) <= size:
        return slug
    return slug[:size].rsplit("-", 1)[0] or slug[:size]
