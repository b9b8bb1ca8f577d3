"""One writer per home: an exclusive lock file naming its holder.

``<home>/run.lock`` holds the pid, command and start time of the process that
writes the home. The lock itself is an ``flock`` on that file, so it goes with
its process: a holder killed without cleaning up leaves only its note, which the
next writer takes over and reports. Readers (``chronoscope sql``, the UI) do not
take it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "run.lock"


class HomeLocked(RuntimeError):
    """Another process is writing the home."""


@contextmanager
def home_lock(
    home: Path, command: str | None = None, echo: Callable[[str], None] = print
) -> Iterator[None]:
    """Hold the home's write lock for the block, or fail at once naming the holder."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / LOCK_FILE
    handle = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HomeLocked(
                f"{home} is being written by {_describe(_read(handle))}; wait for it to finish "
                f"(or stop it), then run again"
            ) from None
        if previous := _read(handle):
            echo(f"taking over the lock of {_describe(previous)}, which is no longer running")
        note = {
            "pid": os.getpid(),
            "command": command or shlex.join(sys.argv),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(note) + "\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def _read(handle) -> dict[str, object]:
    handle.seek(0)
    text = handle.read().strip()
    if not text:
        return {}
    try:
        note = json.loads(text)
    except json.JSONDecodeError:
        return {"command": text[:200]}
    return note if isinstance(note, dict) else {}


def _describe(note: dict[str, object]) -> str:
    if not note:
        return "another process"
    return (
        f"pid {note.get('pid', '?')} ({str(note.get('command', '?'))[:200]}, "
        f"started {note.get('started', '?')})"
    )
