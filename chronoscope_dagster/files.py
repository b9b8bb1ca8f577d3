"""Writing a file so that a reader sees the old one or the new one, never half of one."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


@contextmanager
def atomic_write(
    path: str | Path, *, fsync: bool = False, keep_mode: bool = True
) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; renamed over ``path`` when the block succeeds,
    removed when it fails. The file keeps the mode of the one it replaces (a new one, or any
    with ``keep_mode=False``, follows the umask). ``fsync`` makes the new contents and the
    rename durable before returning.

    The temporary is ``.<name>.<pid>.<random>.tmp``: ``remove_dead_temporaries`` finds those
    of writers killed before they could remove them."""
    path = Path(path)
    handle, name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp"
    )
    temporary = Path(name)
    try:
        mode = 0o666 & ~_umask()
        if keep_mode:
            with suppress(FileNotFoundError):
                mode = path.stat().st_mode & 0o7777
        os.fchmod(handle, mode)
        os.close(handle)
        handle = -1
        yield temporary
        if fsync:
            with temporary.open("rb") as written:
                os.fsync(written.fileno())
        os.replace(temporary, path)
        if fsync:
            directory = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
    finally:
        if handle != -1:
            os.close(handle)
        temporary.unlink(missing_ok=True)


def remove_dead_temporaries(path: str | Path) -> None:
    """Remove the temporaries ``atomic_write`` left beside ``path`` whose writer (the pid in
    the name) is no longer running, and those with no pid in their name."""
    path = Path(path)
    prefix = f".{path.name}."
    for leftover in path.parent.iterdir():
        name = leftover.name
        if name.startswith(prefix) and name.endswith(".tmp") and _writer_is_gone(leftover):
            leftover.unlink(missing_ok=True)


@contextmanager
def exclusive_lock(path: str | Path) -> Iterator[Path]:
    """Hold an exclusive ``flock`` on ``.<name>.lock`` beside ``path`` for the block, waiting for
    it. The lock file itself stays: removing it would let two writers lock different files."""
    path = Path(path)
    lock_path = path.with_name(f".{path.name}.lock")
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield lock_path
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _writer_is_gone(temporary: Path) -> bool:
    """Whether a temporary file's writer (the pid in its name) is no longer running."""
    parts = temporary.name.split(".")
    pid = parts[-3] if len(parts) >= 5 and parts[-3].isdigit() else None
    if pid is None:
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _umask() -> int:
    """The process's umask, read without setting it where Linux tells it (setting it, even back,
    races with threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask
