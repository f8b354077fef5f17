"""What a build remembers of sections from earlier builds: heading slugs and each page's parts.

Sections cost more than the boxes to extract (the whole page is read as text blocks) and their chunk
ids need the Japanese tokenizer (heading slugs). A rebuild should pay for neither on pages it has
read before. Within `remembered(...)`:
- `page_parts_remembered` returns a page's parts stored under the same digest (the page's HTML as
  scanned, its line offset, whether it is a Jekyll source) and the same recipe (the slug recipe and
  a digest of this package's code: any change of the code reads every page again), else computes
  them and keeps them in `fresh_parts` to be stored;
- `remembered_slug` returns a heading's slug known from an earlier build, else computes it and keeps
  it in `fresh_slugs`.
The store itself is the token cache (lexical_cache.TokenCache); a stored entry that does not decode
is a miss, so a damaged cache costs time, never a wrong chunk.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Callable

SLUG_VERSION = "slug/1"  # bump when slug_for or MAX_KEY_CHARS changes what a heading's slug is


class SectionMemory:
    def __init__(self, known_slugs: dict[str, str], stored_parts: Callable[[str], str | None]):
        self.known_slugs = dict(known_slugs)
        self.fresh_slugs: dict[str, str] = {}
        self.stored_parts = stored_parts
        self.fresh_parts: dict[str, str] = {}  # digest -> encoded parts


_memory: SectionMemory | None = None


@contextmanager
def remembered(known_slugs: dict[str, str], stored_parts: Callable[[str], str | None] = lambda digest: None):
    """Within the block, slugs and page parts come from what an earlier build stored (see the
    module docstring); yields the SectionMemory whose fresh_* hold what was computed meanwhile."""
    global _memory
    outer, _memory = _memory, SectionMemory(known_slugs, stored_parts)
    try:
        yield _memory
    finally:
        _memory = outer


def remembered_slug(heading: str, compute: Callable[[str], str]) -> str:
    memory = _memory
    if memory is not None and heading in memory.known_slugs:
        return memory.known_slugs[heading]
    slug = compute(heading)
    if memory is not None:
        memory.fresh_slugs[heading] = slug
    return slug


def page_parts_remembered(body: str, line_offset: int, source: bool, compute: Callable[[], list],
                          boxes: str = "") -> list:
    """The page's parts: stored ones when an earlier build read this same page with the same idea of
    what a box is (`boxes`: the settings that decide which elements the sections leave out), else compute()."""
    memory = _memory
    if memory is None:
        return compute()
    key = f"{line_offset}|{int(source)}" + (f"|{boxes}" if boxes else "")
    digest = hashlib.sha256(f"{key}\n{body}".encode("utf-8", "surrogatepass")).hexdigest()
    parts = _decoded(memory.stored_parts(digest))
    if parts is None:
        parts = compute()
        memory.fresh_parts[digest] = json.dumps([asdict(p) for p in parts], ensure_ascii=False,
                                                separators=(",", ":"))
    return parts


def slug_recipe() -> str:
    """What a cached slug depends on: this code's version, the analyzer that reads the heading, and
    the shipped glossary's bytes (hashed without parsing it, so a cache hit needs neither)."""
    from importlib import resources

    from ..text.ja import ANALYZER

    glossary = resources.files("knowledge_build.data").joinpath("glossary.yml").read_bytes()
    return f"{SLUG_VERSION}|{ANALYZER}|glossary:{hashlib.sha256(glossary).hexdigest()[:16]}"


def parts_recipe() -> str:
    """What stored parts depend on besides the page: the slugs in their keys and every line of this
    package's code (parsing, blocks, fragments, tables, splitting all shape them)."""
    return f"{slug_recipe()}|code:{_code_digest()}"


@lru_cache(maxsize=1)
def _code_digest() -> str:
    package = Path(__file__).parent.parent  # the whole knowledge_build package, not html/ alone
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _decoded(stored: str | None) -> list | None:
    from ..model import Part

    if not stored:
        return None
    try:
        rows = json.loads(stored)
        return [Part(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()}) for row in rows]
    except (TypeError, ValueError, AttributeError):
        return None
