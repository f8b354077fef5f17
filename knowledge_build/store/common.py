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


class DatabaseError(KnowledgeBuildError):
    """The database cannot be used as asked; the message says how to fix it."""


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


# The roles a hosted Postgres (Supabase) gives its public API keys. Its default privileges grant them
# every right on each new table and sequence, and row-level security does not hold TRUNCATE back.
HOSTED_ROLES = ("anon", "authenticated")


def revoke_hosted_roles(conn, tables: tuple[str, ...], sequences: tuple[str, ...] = ()) -> None:
    """Take every right on the store's own tables (and the sequences they own, and `sequences`) from
    the hosted roles that exist: the notes and sources are the tutor's own, not the public's
    (migration 009 does the same for the published tables). `conn` is inside the schema transaction."""
    roles = [row[0] for row in conn.execute("select rolname from pg_roles where rolname = any(%s) order by 1",
                                            (list(HOSTED_ROLES),))]
    if not roles:
        return
    owned = [row[0] for row in conn.execute(
        "select s.relname from pg_depend d join pg_class s on s.oid = d.objid where d.classid = 'pg_class'::regclass"
        " and s.relkind = 'S' and d.refobjid = any(select to_regclass(t) from unnest(%s::text[]) t)", (list(tables),))]
    who = ", ".join(roles)  # names from HOSTED_ROLES, never from input
    for table in tables:
        conn.execute(f"revoke all on table {table} from {who}")
    for sequence in (*owned, *sequences):
        conn.execute(f'revoke all on sequence "{sequence}" from {who}')
