"""The database's functions as repeatable files (store/functions/*.sql), apart from the frozen migrations.

A versioned migration runs once and is recorded by name, so a function written in one never changes in a
database that applied an earlier text. Every function therefore lives in a repeatable file, rendered with
the same placeholders as the migrations (`render`), and `apply` runs a file again whenever the
sha256 of its rendered text differs from the one `knowledge_functions` (migration 010) records: inside the
caller's transaction, its functions' existing overloads dropped first (a changed signature or return type
cannot be replaced), then created, with the file's own grants. `outdated` is what `health` and
`validate --database-url` report.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources

from .common import DatabaseError

DIM_TOKEN = "__DIM__"

TABLE = "knowledge_functions"
_CREATE = re.compile(r"^create or replace function (\w+)\s*\(", re.MULTILINE)
_TOUCHES = re.compile(r"create or replace function", re.IGNORECASE)


def render(text: str, dim: int) -> str:
    """A migration's or a function file's SQL with its placeholders filled in from Python: the vector
    dimension, the public functions' input limits (the CLI's, migration 009) and the search settings."""
    from ..ranking.settings import MAX_MATCH_COUNT, MAX_QUERY_CHARS
    from ..ranking.settings import SearchSettings
    from .lexical import sql_tokens

    tokens = {DIM_TOKEN: str(int(dim)), "__MAX_QUERY_CHARS__": str(int(MAX_QUERY_CHARS)),
              "__MAX_MATCH_COUNT__": str(int(MAX_MATCH_COUNT)), **sql_tokens(SearchSettings())}
    for token, value in tokens.items():
        text = text.replace(token, value)
    return text


def table_dimension(conn) -> int | None:
    row = conn.execute("select a.atttypmod from pg_attribute a where a.attrelid = to_regclass('knowledge_chunks')"
                       " and a.attname = 'embedding'").fetchone()
    return int(row[0]) if row else None


def fix(dim: int | None) -> str:
    """The line that says how to bring a database's functions up to this version."""
    return (f"run 'knowledge-build db migrate --dim {dim or 'N'}' or 'knowledge-build publish' as the database's "
            "owner: either applies this version's functions in one transaction")


@dataclass(frozen=True)
class FunctionFile:
    name: str  # the file's stem: `search` for functions/search.sql
    sql: str  # rendered
    functions: tuple[str, ...]  # the names it creates

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()

    def apply_sql(self) -> str:
        """The file as it runs: its functions' existing overloads dropped first (by name, whatever their
        signature or return type: `create or replace` cannot change those), then the file, grants included."""
        names = ", ".join(f"'{name}'" for name in self.functions)
        return ("do $$\ndeclare\n    f regprocedure;\nbegin\n"
                "    for f in select p.oid::regprocedure from pg_proc as p\n"
                "             where p.pronamespace = current_schema()::regnamespace\n"
                f"               and p.proname in ({names}) loop\n"
                "        execute format('drop function %s', f);\n    end loop;\nend\n$$;\n\n" + self.sql)


def touches_functions(sql: str) -> bool:
    """Whether a versioned migration creates functions (003, 006, 009)."""
    return bool(_TOUCHES.search(sql))


def function_files(dim: int) -> list[FunctionFile]:
    """Every repeatable file, in name order (a file may use the functions of the files before it)."""
    folder = resources.files("knowledge_build.store").joinpath("functions")
    out = []
    for entry in sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name):
        sql = render(entry.read_text(encoding="utf-8"), dim)
        out.append(FunctionFile(entry.name.removesuffix(".sql"), sql, tuple(dict.fromkeys(_CREATE.findall(sql)))))
    return out


def recorded(conn) -> dict[str, str] | None:
    """name -> sha256 the database records; None when this role may not read them."""
    if conn.execute(f"select to_regclass('{TABLE}')").fetchone()[0] is None:
        return {}
    if not conn.execute(f"select has_table_privilege('{TABLE}', 'select')").fetchone()[0]:
        return None
    return dict(conn.execute(f"select name, sha256 from {TABLE}").fetchall())


def outdated(conn, dim: int | None = None) -> list[str] | None:
    """The files whose functions in the database are older than this version's (recorded hash differs, or
    none recorded), by name; None when it cannot tell (no published table, or this role may not read the
    record)."""
    dim = dim or table_dimension(conn)
    if dim is None:
        return None
    record = recorded(conn)
    if record is None:
        return None
    return [f.name for f in function_files(dim) if record.get(f.name) != f.sha256]


def report(conn) -> dict:
    """What `health` and `validate --database-url` say of the database's functions: `functions` is
    "current", "outdated" or None (cannot tell), `outdated` the files, `fix` the line to run."""
    dim = table_dimension(conn)
    files = outdated(conn, dim)
    state = None if files is None else ("outdated" if files else "current")
    return {"functions": state, "outdated": files or [], "fix": fix(dim) if files else None}


def message(found: dict) -> str:
    """One sentence naming the outdated files."""
    names = ", ".join(f"functions/{name}.sql" for name in found["outdated"])
    return (f"the database's functions are older than this version of knowledge-build ({names}): it ranks and "
            "checks queries by an older rule")


def apply(conn, dim: int, every: bool = False, progress: bool = False) -> list[str]:
    """Apply the files whose rendered text the database has not recorded (all of them when `every`: after
    a versioned migration, which may have replaced a function), inside the caller's transaction. Returns
    `functions/<name>` of each applied. DatabaseError, and nothing applied, when this role may not."""
    import sys

    import psycopg

    record = {} if every else (recorded(conn) or {})
    applied = []
    for file in function_files(dim):
        if record.get(file.name) == file.sha256:
            continue
        if progress:
            print(f"migrating: applying functions/{file.name}", file=sys.stderr, flush=True)
        try:
            conn.execute(file.apply_sql())
            conn.execute(f"insert into {TABLE} (name, sha256) values (%s, %s) on conflict (name) do update"
                         " set sha256 = excluded.sha256, applied_at = now()", (file.name, file.sha256))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseError(
                f"the database's functions (functions/{file.name}.sql) are older than this version of "
                f"knowledge-build, and this role may not replace them ({first_line(exc)}). "
                f"Fix: ask the database's owner to run 'knowledge-build db migrate --dim {dim}', then publish "
                "again") from exc
        except psycopg.Error as exc:
            raise DatabaseError(
                f"functions/{file.name}.sql failed in the database ({first_line(exc)}); nothing was applied: the "
                "migrations and the functions are one transaction. Fix: correct the file (or the constants it "
                "renders), then migrate again") from exc
        applied.append(f"functions/{file.name}")
    return applied


def first_line(exc: Exception) -> str:
    """A database error's first line (its detail and hint lines are for a log, not for one error line)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
