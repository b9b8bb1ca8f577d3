"""How many processes a step may start where it runs."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
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
