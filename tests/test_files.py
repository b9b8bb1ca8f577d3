"""The one atomic-write helper (``chronoscope_dagster.files``)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from chronoscope_dagster.files import atomic_write, exclusive_lock


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
