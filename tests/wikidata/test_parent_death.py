"""A killed parent (SIGKILL) leaves no worker process and no shared-memory ring behind."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

ENTITIES = 60_000
EXTRACTION = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from chronoscope_dagster.wikidata.reader import extract_dump

    dump, out, started = (Path(arg) for arg in sys.argv[1:])

    def slow_reader(report):
        started.touch()
        time.sleep(0.2)

    if __name__ == "__main__":
        extract_dump(
            dump, out / "claims.parquet", out / "labels.parquet",
            workers=2, block_bytes=64 << 10, progress=slow_reader,
        )
    """
)


def _write_dump(path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        out.write("[\n")
        for n in range(1, ENTITIES + 1):
            label = f'{{"en": {{"language": "en", "value": "entity {n}"}}}}'
            out.write(f'{{"type": "item", "id": "Q{n}", "labels": {label}, "claims": {{}}}},\n')
        out.write('{"type": "property", "id": "P1", "claims": {}}\n]\n')


def _session(sid: int) -> dict[int, str]:
    """The live processes of session ``sid`` (zombies aside), pid to state."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, session = fields[0], int(fields[3])
        if session == sid and state != "Z":
            found[int(entry.name)] = state
    return found


def _rings_mapped_by(pid: int) -> set[Path]:
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {Path(line.split()[-1]) for line in maps if "chronoscope-blocks-" in line}


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_parent_killed_during_multi_worker_extraction_leaves_no_worker_and_no_ring(tmp_path):
    dump = tmp_path / "dump.json.gz"
    _write_dump(dump)
    script = tmp_path / "extract.py"
    script.write_text(EXTRACTION)
    started = tmp_path / "started"
    rings: set[Path] = set()
    parent = subprocess.Popen(
        [sys.executable, str(script), str(dump), str(tmp_path), str(started)],
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_for(started.exists, 60), "the extraction never produced a result"
        workers = set(_session(parent.pid)) - {parent.pid}
        assert len(workers) >= 2
        rings = _rings_mapped_by(parent.pid)
        assert rings and all(ring.exists() for ring in rings)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait_for(lambda: not _session(parent.pid), 5), _session(parent.pid)
        assert _wait_for(lambda: not any(ring.exists() for ring in rings), 5), rings
    finally:
        _stop_session(parent.pid)
        for ring in rings:
            ring.unlink(missing_ok=True)


def _stop_session(sid: int) -> None:
    """SIGTERM first, so the session's resource tracker outlives the workers and removes their
    semaphores; SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(sid, sig)
        except ProcessLookupError:
            return
        _wait_for(lambda: not _session(sid), 5)


LEAVE_A_RING = textwrap.dedent(
    """
    import os, sys
    from chronoscope_dagster.wikidata.block_ring import BlockRing

    with BlockRing(1 << 20) as ring:
        print(ring.path, flush=True)
        if sys.argv[1] == "die":
            os._exit(0)
        sys.stdin.read()
    """
)


def test_ring_of_a_run_killed_before_its_workers_is_removed_by_the_next_run(tmp_path):
    from chronoscope_dagster.wikidata.block_ring import BlockRing, sweep_stale_rings

    def ring_of(how: str) -> tuple[subprocess.Popen, Path]:
        process = subprocess.Popen(
            [sys.executable, "-c", LEAVE_A_RING, how],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        return process, Path(process.stdout.readline().strip())

    alive, live = ring_of("live")
    dead, stale = ring_of("die")
    dead.wait(timeout=30)
    try:
        assert stale.exists() and live.exists()
        with BlockRing(1 << 20) as ring:
            assert not stale.exists()
            assert live.exists() and Path(ring.path).exists()
            assert str(os.getpid()) in Path(ring.path).name
            assert sweep_stale_rings() == []
    finally:
        alive.communicate("", timeout=30)
        stale.unlink(missing_ok=True)
    assert not live.exists()


IN_OWN_PROCESS = textwrap.dedent(
    """
    import time
    from functools import partial
    from chronoscope_dagster.processes import in_own_process

    if __name__ == "__main__":
        in_own_process(partial(time.sleep, 600))
    """
)


def test_parent_killed_during_in_own_process_leaves_no_child(tmp_path):
    script = tmp_path / "own.py"
    script.write_text(IN_OWN_PROCESS)
    parent = subprocess.Popen(
        [sys.executable, str(script)], start_new_session=True, stderr=subprocess.DEVNULL
    )
    try:
        assert _wait_for(lambda: len(_session(parent.pid)) >= 2, 60)
        time.sleep(1)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait_for(lambda: not _session(parent.pid), 5), _session(parent.pid)
    finally:
        _stop_session(parent.pid)
