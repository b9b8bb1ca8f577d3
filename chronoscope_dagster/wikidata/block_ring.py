"""The shared-memory ring that carries blocks of a dump to the extraction's workers.

The ring is a file mapped by the parent and by every worker. It must not outlive
its run, however the run ends: the parent removes it on exit; workers end with
their parent (``die_with_parent``) and remove it when the parent died without
doing so (``kill -9``); and a new ring sweeps the rings whose owner is gone (no
process left to remove them: the parent killed before it started workers, or
the workers killed with it). A ring is named after its owner's pid and the owner
holds an exclusive ``flock`` on it while it lives, so a ring is stale only when
that pid is not running and nobody holds the lock (the lock covers an owner in
another pid namespace that shares the directory).
"""

from __future__ import annotations

import fcntl
import functools
import mmap
import os
import tempfile
from pathlib import Path

from chronoscope_dagster.processes import die_with_parent

PREFIX = "chronoscope-blocks-"
SHARED_MEMORY = "/dev/shm"


class BlockRing:
    """A file of ``size`` bytes mapped in ``memory``, removed on exit: in ``/dev/shm`` where it
    has room for it twice over (a container's is often 64 MB, and writing past a full tmpfs
    kills the process), else in the temporary directory."""

    def __init__(self, size: int):
        sweep_stale_rings()
        directory = SHARED_MEMORY if _free_bytes(SHARED_MEMORY) >= 2 * size else None
        self._descriptor, self.path = tempfile.mkstemp(
            prefix=f"{PREFIX}{os.getpid()}-", dir=directory
        )
        try:
            fcntl.flock(self._descriptor, fcntl.LOCK_EX)
            os.ftruncate(self._descriptor, size)
            self.memory = mmap.mmap(self._descriptor, size)
        except BaseException:
            os.unlink(self.path)
            os.close(self._descriptor)
            raise

    def __enter__(self) -> BlockRing:
        return self

    def __exit__(self, *_: object) -> None:
        self.memory.close()
        Path(self.path).unlink(missing_ok=True)
        os.close(self._descriptor)


def attach_ring(path: str, parent: int) -> mmap.mmap:
    """The ring at ``path`` mapped in a worker of process ``parent``, the worker made to end
    with its parent and to remove the ring if the parent could not."""
    die_with_parent(parent, functools.partial(_remove, path))
    with open(path, "r+b") as file:
        return mmap.mmap(file.fileno(), 0)


def sweep_stale_rings() -> list[Path]:
    """Remove the rings, in the places a ring is made, whose owner is gone; return them."""
    removed = []
    for place in {Path(SHARED_MEMORY), Path(tempfile.gettempdir())}:
        try:
            rings = list(place.glob(f"{PREFIX}*"))
        except OSError:
            continue
        for ring in rings:
            owner = ring.name.removeprefix(PREFIX).partition("-")[0]
            if owner.isdigit() and not _running(int(owner)) and _remove_unlocked(ring):
                removed.append(ring)
    return removed


def _remove(path: str) -> None:
    Path(path).unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _remove_unlocked(ring: Path) -> bool:
    """Remove ``ring`` if no process holds its lock."""
    try:
        descriptor = os.open(ring, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        ring.unlink()
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return True


def _free_bytes(directory: str) -> int:
    try:
        stat = os.statvfs(directory)
    except OSError:
        return 0
    return stat.f_bavail * stat.f_frsize if os.access(directory, os.W_OK) else 0
