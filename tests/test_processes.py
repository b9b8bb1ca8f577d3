"""A step's peak memory is its own, not the peak of what ran before it in the process."""

import resource
import sys
from functools import partial

import pytest

from chronoscope_dagster.processes import (
    PeakMemory,
    cores_for_a_step,
    in_own_process,
    measured,
    usable_cores,
)

MB = 1 << 20


def hold(megabytes: int) -> int:
    block = bytearray(megabytes * MB)
    block[::4096] = b"x" * len(block[::4096])
    return len(block) // MB


def _peaks_around_a_reset() -> tuple[int, int, bool]:
    """The lifetime peak after holding 400 MB, then the peak after a reset and holding 40 MB,
    and whether the reset took."""
    hold(400)
    lifetime_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    peak = PeakMemory(children=False)
    hold(40)
    return lifetime_mb, peak.mb(), peak.reset


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reset is Linux's")
def test_the_peak_starts_again_with_each_piece_of_work():
    """In a new process: the test session's may stay near its lifetime peak after freeing the
    400 MB (it has held the embedded model and the sample home), so the reset would show
    nothing."""
    lifetime_mb, after_reset_mb, reset = in_own_process(_peaks_around_a_reset)
    assert reset
    assert after_reset_mb < lifetime_mb - 300


def test_a_process_made_for_the_work_reports_the_works_peak():
    result, peak_mb = in_own_process(partial(measured, partial(hold, 200)))
    assert result == 200
    assert 200 <= peak_mb < 600


def test_a_step_uses_every_core_only_where_steps_run_one_at_a_time(monkeypatch):
    """The in-process executor (the default and the command line's) runs one step at a time,
    so a step may start a process per core; the multiprocess and celery executors run steps
    side by side, and each of them gets one."""
    monkeypatch.delenv("CHRONOSCOPE_EXECUTOR", raising=False)
    assert cores_for_a_step() == usable_cores() >= 1
    monkeypatch.setenv("CHRONOSCOPE_EXECUTOR", "in_process")
    assert cores_for_a_step() == usable_cores()
    for executor in ("multiprocess", "celery"):
        monkeypatch.setenv("CHRONOSCOPE_EXECUTOR", executor)
        assert cores_for_a_step() == 1
