"""How many processes a step may start where it runs."""

from __future__ import annotations

import multiprocessing


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
