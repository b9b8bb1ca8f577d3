"""The one atomic-write helper (``chronoscope_dagster.files``) and its cleanup of dead writers."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronoscope_dagster.files import atomic_write, exclusive_lock, remove_dead_temporaries


def test_atomic_write_replaces_the_file_only_when_the_block_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with atomic_write(target) as temporary:
        assert temporary.parent == tmp_path and temporary != target
        temporary.write_text("new")
        assert target.read_text() == "old"
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_write_failure_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(target, fsync=True) as temporary:
        temporary.write_text("half")
        raise RuntimeError("writer died")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_write_keeps_an_existing_mode_and_follows_the_umask_for_a_new_file(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept.txt"
    kept.write_text("x")
    kept.chmod(0o640)
    with atomic_write(kept) as temporary:
        temporary.write_text("y")
    assert kept.stat().st_mode & 0o777 == 0o640
    previous = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "new.txt", fsync=True) as temporary:
            temporary.write_text("z")
    finally:
        os.umask(previous)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640


def test_exclusive_lock_is_held_for_the_block(tmp_path: Path) -> None:
    target = tmp_path / "models.yaml"
    with exclusive_lock(target) as lock_path:
        assert lock_path.parent == tmp_path
        with lock_path.open("a") as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with lock_path.open("a") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_atomic_write_without_keep_mode_follows_the_umask_over_an_existing_mode(
    tmp_path: Path,
) -> None:
    target = tmp_path / "data.parquet"
    target.write_text("x")
    target.chmod(0o600)
    previous = os.umask(0o022)
    try:
        with atomic_write(target, keep_mode=False) as temporary:
            temporary.write_text("y")
    finally:
        os.umask(previous)
    assert target.stat().st_mode & 0o777 == 0o644


def test_remove_dead_temporaries_keeps_those_of_running_writers_and_other_files(
    tmp_path: Path,
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    target = tmp_path / "out[1].txt"
    with atomic_write(target) as running:
        leftovers = [
            tmp_path / f".out[1].txt.{dead.pid}.k1ll3d_x.tmp",
            tmp_path / ".out[1].txt.n0_p1d0.tmp",
        ]
        others = [tmp_path / f".other.txt.{dead.pid}.k1ll3d_x.tmp", tmp_path / "out[1].txt.tmp"]
        for path in leftovers + others:
            path.write_text("half")
        remove_dead_temporaries(target)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [running.name] + [p.name for p in others]
        )
        running.write_text("whole")
    assert target.read_text() == "whole"
