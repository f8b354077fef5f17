"""What the notes and the web sources, and their SQLite and Postgres backends, share: the errors
they raise, the lexical fields and their full-text spelling, the clock. Below every other module of
the store, so the façades (notes.py, sources.py) and the backends import it, not each other."""

from __future__ import annotations

import logging
import unicodedata
from datetime import UTC, datetime

from ..errors import KnowledgeBuildError

log = logging.getLogger("knowledge_build.store")

FIELDS = ("lemma", "reading", "kana2", "page", "heading")


class NotFound(KnowledgeBuildError):
    pass


class NotesUnavailable(KnowledgeBuildError):
    """The notes file cannot be created or opened for writing."""


class SourcesUnavailable(KnowledgeBuildError):
    """The sources store cannot be opened or used as asked; the message says how to fix it."""


class InvalidChunks(KnowledgeBuildError):
    """Chunks handed to replace_source do not belong to the source named."""


def fts_token(token: str) -> str:
    """A token as one FTS word: letters and digits stay; any other token (「--」, 「^2」) becomes
    a hex spelling behind 'ˣ', which analysed text never holds (NFKC makes it 'x'), so that the
    tokenizer neither splits it nor matches it to a part of another token."""
    if all(unicodedata.category(c)[0] in "LN" for c in token):
        return token
    return "ˣ" + token.encode("utf-8").hex()


def fts_document(tokens: dict) -> list[str]:
    return [" ".join(fts_token(t) for t in tokens.get(name) or [] if t) for name in FIELDS]


def fts_match(tokens: dict) -> str:
    """An FTS5 MATCH expression: any of the query's tokens, each in its own field."""
    parts = []
    for name in FIELDS:
        words = dict.fromkeys(fts_token(t) for t in tokens.get(name) or [] if t)
        if words:
            parts.append(f"{name} : ({' OR '.join(chr(34) + w + chr(34) for w in words)})")
    return " OR ".join(parts)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
