"""Reading one of the user's files without hanging or a traceback.

Only regular files are read: a FIFO, socket or device named like a page would block or never
end, so the file is opened non-blocking and checked with fstat before any byte is read. Every
failure is an `UnreadableFile` that says why and what to do.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .errors import KnowledgeBuildError


class UnreadableFile(KnowledgeBuildError):
    """A file the tool needs cannot be read; `reason` and `fix` are shown to the user."""

    def __init__(self, path, reason: str, fix: str):
        self.path, self.reason, self.fix = Path(path), reason, fix
        super().__init__(f"{path}: cannot be read ({reason}). Fix: {fix}.")


def read_regular_file(path, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file; anything else (or too large) is an `UnreadableFile`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _unreadable(path, exc) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(path, f"it is a {file_kind(info.st_mode)}, not a regular file",
                                 "replace it with a regular file or remove it")
        if max_bytes is not None and info.st_size > max_bytes:
            raise UnreadableFile(path, f"{info.st_size} bytes, more than the limit of {max_bytes}",
                                 "split the file into smaller ones")
        try:
            return handle.read()
        except OSError as exc:
            raise _unreadable(path, exc) from None


def file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "named pipe (FIFO)"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def _unreadable(path, exc: OSError) -> UnreadableFile:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return UnreadableFile(path, "permission denied", f"make it readable (chmod a+r '{path}')")
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return UnreadableFile(path, f"it is a symlink to '{os.readlink(path)}', which does not exist",
                                  "point the link at an existing file or remove it")
        return UnreadableFile(path, "it does not exist", "check the path")
    if exc.errno == errno.ELOOP:
        return UnreadableFile(path, "it is a symlink loop", "point the link at a regular file or remove it")
    if exc.errno == errno.EISDIR:
        return UnreadableFile(path, "it is a directory, not a regular file", "rename it or remove it")
    return UnreadableFile(path, exc.strerror or str(exc), "check the file and its permissions")
