"""How many processes a step may start where it runs, and how much memory its work took."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

Result = TypeVar("Result")

PR_SET_PDEATHSIG = 1
PARENT_DEATH_SIGNAL = signal.SIGUSR1
"""Sent by nothing but the kernel, so that a worker told to stop (SIGTERM) stops at once."""
PARENT_POLL_SECONDS = 1.0
PARENT_EXIT_SECONDS = 2.0


def step_workers(requested: int | None, what: str) -> tuple[int | None, str | None]:
    """``requested`` processes for ``what`` (None: the callee's default), or 1 with the reason
    where the step runs in a daemonic process (a celery prefork worker's child), which may not
    start processes of its own."""
    if requested == 1 or may_start_processes():
        return requested, None
    return 1, (
        f"{what} runs in 1 process, not {requested or 'one per core'}: this step runs in a "
        "daemonic process (a celery prefork worker), which may not start processes; start "
        "celery workers with `-P solo` (one step per worker process) to use more"
    )


def executor_name() -> str:
    """The Dagster executor named by ``CHRONOSCOPE_EXECUTOR`` (``in_process`` by default)."""
    return os.environ.get("CHRONOSCOPE_EXECUTOR", "in_process")


def usable_cores() -> int:
    """The CPUs this process may run on (a container's cpuset), where the OS says."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cores_for_a_step() -> int:
    """The cores one step may use: every usable one where steps run one at a time (the
    in-process executor), else 1, since an executor that runs steps side by side gives the
    cores to the concurrent steps."""
    return usable_cores() if executor_name() == "in_process" else 1


def may_start_processes() -> bool:
    """Whether this process may start processes: not a daemonic one (a celery prefork
    worker's child)."""
    return not multiprocessing.current_process().daemon


def in_own_process(work: Callable[[], Result]) -> Result:
    """``work()`` (picklable) in a new process where this one may start processes, else here.
    Python returns little of the memory it frees to the system, so a process that builds one
    large index after another (an in-process executor running shard steps) would otherwise
    peak higher with each."""
    if not may_start_processes():
        return work()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        1, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),)
    ) as pool:
        return pool.submit(work).result()


def die_with_parent(parent: int, cleanup: Callable[[], object] | None = None) -> None:
    """Make this process, a worker started by process ``parent``, end when its parent ends,
    however it ends (``kill -9`` too), after ``cleanup()``: a pool worker otherwise outlives
    it, blocked on a pipe nobody will read or write again. Call it first thing in the worker
    (a pool's initializer). On Linux the kernel sends ``PARENT_DEATH_SIGNAL`` when the thread
    that started the worker ends (``PR_SET_PDEATHSIG``; the pools here are driven by the
    thread that makes them); elsewhere a thread looks at the parent pid every second."""

    def orphaned(*_: object) -> None:
        _wait_for_parent_exit(parent)
        if cleanup is not None and os.getppid() != parent:
            cleanup()
        os._exit(1)

    signal.signal(PARENT_DEATH_SIGNAL, orphaned)
    if not _set_parent_death_signal(PARENT_DEATH_SIGNAL):
        threading.Thread(target=_watch_parent, args=(parent, orphaned), daemon=True).start()
    if os.getppid() != parent:
        orphaned()


def _wait_for_parent_exit(parent: int) -> None:
    """Wait until ``parent`` is no longer this process's parent, for at most
    ``PARENT_EXIT_SECONDS``: the kernel signals the death of the thread that started this
    process, and the parent's other threads may live a few moments more."""
    deadline = time.monotonic() + PARENT_EXIT_SECONDS
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.01)


def _set_parent_death_signal(signum: int) -> bool:
    """Whether the kernel will send ``signum`` to this process when its parent ends."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    args = (ctypes.c_ulong(signum), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    return prctl(ctypes.c_int(PR_SET_PDEATHSIG), *args) == 0


def _watch_parent(parent: int, orphaned: Callable[[], None]) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    orphaned()


class PeakMemory:
    """The peak resident memory of the work done in this process since this object was made,
    and with ``children`` of the processes it started and waited for. On Linux the kernel's
    high-water mark is reset first (``/proc/self/clear_refs``), so a long-lived process (the
    in-process executor running one step after another) reports each step's own peak rather
    than its lifetime's; elsewhere it is the lifetime's. The children's figure is the largest
    child this process ever waited for: ask for it only in a process made for the work."""

    def __init__(self, children: bool = True) -> None:
        self.children = children
        self.reset = _reset_high_water()

    def mb(self) -> int:
        own = _high_water_kb() if self.reset else None
        if own is None:
            own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if self.children else 0
        return max(own, workers) // 1024


def measured(work: Callable[[], Result]) -> tuple[Result, int]:
    """``work()`` (picklable) and the peak resident memory in MB it took (``PeakMemory``)."""
    peak = PeakMemory()
    result = work()
    return result, peak.mb()


def _reset_high_water() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _high_water_kb() -> int | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None
