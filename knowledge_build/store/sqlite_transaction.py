"""One SQLite transaction as a context manager, shared by the notes store and the web sources store."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def sqlite_transaction(conn, write: bool):
    """A cursor inside one transaction on an autocommit connection (isolation_level=None): BEGIN
    IMMEDIATE for a writer (it takes the write lock at once), BEGIN for a reader (it sees one
    committed state throughout); commit at the end, rollback on any exception."""
    cur = conn.cursor()
    cur.execute("begin immediate" if write else "begin")
    try:
        yield cur
    except BaseException:
        cur.execute("rollback")
        raise
    cur.execute("commit")
