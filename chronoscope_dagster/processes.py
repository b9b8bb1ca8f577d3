"""How many processes a step may start where it runs, and how much memory its work took."""

from __future__ import annotations

import multiprocessing
import resource
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

Result = TypeVar("Result")


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
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(work).result()


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
