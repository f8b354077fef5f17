"""File-system primitives that never leave a half-written file or delete what is not ours.

`atomic_write` replaces one file (temp file + rename). `swap_in` puts a staged directory in
place of another with one atomic exchange (Linux renameat2), so readers see the old
directory or the new one. `remove_owned` deletes only files whose names a caller owns and
leaves a directory that still holds anything else. `claimed` marks a directory as in use by this
process (an flock the kernel drops when the process dies, however it dies).
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace one file atomically (temp file + rename), keeping its mode (0644 for a new file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_files(directory: Path, files: dict[str, bytes]) -> None:
    """Write every file and make it durable, then the directory entry list itself. Where Linux's
    syncfs is there, one call flushes them all (a set holds hundreds of small files of the search box's
    bundle, and an fsync each took seconds); elsewhere, or if it fails, each file is fsynced."""
    for name, data in sorted(files.items()):
        with open(directory / name, "wb") as handle:
            handle.write(data)
    if not syncfs(directory):
        for name in sorted(files):
            with open(directory / name, "rb+") as handle:
                os.fsync(handle.fileno())
    fsync_dir(directory)


def syncfs(directory: Path) -> bool:
    """Flush the file system that holds `directory` (Linux syncfs); False where it cannot be done."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.syncfs
    except (OSError, AttributeError):
        return False
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        return call(fd) == 0
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make renames inside `directory` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def swap_in(staging: Path, target: Path, backup: Path) -> Path | None:
    """Put `staging` where `target` is. Returns the directory now holding the previous
    `target` (for the caller to remove), or None when there was none.

    With renameat2 the exchange is one atomic step. Elsewhere `target` is first renamed to
    `backup`: a kill between the two renames leaves no `target`, but the previous set is
    whole in `backup`."""
    if not target.exists():
        os.rename(staging, target)
        return None
    if rename_exchange(staging, target):
        return staging
    os.rename(target, backup)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(backup, target)
        raise
    return backup


def rename_exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two directories (Linux renameat2 RENAME_EXCHANGE)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange) == 0


def only_owned(directory: Path, owned: set[str]) -> bool:
    """Whether `directory` is a real directory holding nothing but regular files named in `owned`."""
    if directory.is_symlink() or not directory.is_dir():
        return False
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return False
    return all(e.name in owned and e.is_file(follow_symlinks=False) for e in entries)


def remove_owned(directory: Path, owned: set[str]) -> bool:
    """Delete the regular files named in `owned`, then the directory if nothing else is left.
    Returns whether the directory is gone; anything not ours stays where it was."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return False
    for entry in entries:
        if entry.name in owned and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except OSError:
                pass
    try:
        os.rmdir(directory)
    except OSError:
        return False
    return True


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (a staging directory named for it may be in use)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def claimed(directory: Path):
    """Yields True while this process holds an exclusive flock on `directory`, False when another
    process holds one (the directory is in use). The kernel releases the lock when the holder exits,
    also by SIGKILL, so a lock that can be taken means nobody is using the directory; unlike a process
    id, that also holds for a build in another PID namespace (a container) on the same machine.
    Where there is no flock (Windows), yields True."""
    try:
        import fcntl
    except ImportError:
        yield True
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)
