"""The warehouse's files: temporary leftovers, permissions, and the home's path."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from chronoscope_dagster.warehouse import Warehouse


def test_tmp_files_left_by_a_killed_run_are_cleaned_when_the_partition_is_written(tmp_path):
    store = Warehouse(tmp_path)
    directory = store.partition_dir("claims", snapshot_year="2025")
    directory.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        killed = directory / f".data.parquet.{dead.pid}.k1ll3d_x.tmp"
        older = directory / ".data.parquet.abc_defg.tmp"
        running = directory / f".data.parquet.{alive.pid}.wr1t1ng_.tmp"
        for path in (killed, older, running):
            path.write_bytes(b"half a file")
        store.write_table("claims", pa.table({"a": [1]}), snapshot_year="2025")
        assert sorted(p.name for p in directory.iterdir()) == sorted(["data.parquet", running.name])
    finally:
        alive.kill()
        alive.wait()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_parquet_files_respect_the_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        path = Warehouse(tmp_path).write_table("present_day", pa.table({"a": [1]}))
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == mode


def test_home_with_glob_characters_is_refused(tmp_path):
    with pytest.raises(ValueError, match="glob character"):
        Warehouse(tmp_path / "h*")


def test_duckdb_threads_and_memory_bound_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CHRONOSCOPE_DUCKDB_THREADS", "1")
    monkeypatch.setenv("CHRONOSCOPE_DUCKDB_MEMORY_LIMIT", "300MB")
    store = Warehouse(tmp_path)
    for connection in (store.connect(), store.reader()):
        with connection:
            [(threads, limit, spill)] = connection.execute(
                "SELECT current_setting('threads'), current_setting('memory_limit'), "
                "current_setting('temp_directory')"
            ).fetchall()
        assert (threads, spill) == (1, str(tmp_path.resolve() / ".duckdb_spill"))
        assert limit in ("286.1 MiB", "300.0 MB")
    monkeypatch.setenv("CHRONOSCOPE_DUCKDB_THREADS", "two")
    with pytest.raises(ValueError, match="CHRONOSCOPE_DUCKDB_THREADS='two'"):
        store.connect()


def test_a_column_added_later_is_null_in_partitions_written_before(tmp_path):
    store = Warehouse(tmp_path)
    store.write_table("predictions", pa.table({"chain_id": ["a"]}), model="m", setting="s1")
    store.write_table(
        "predictions", pa.table({"chain_id": ["b"], "raw_output": ["x"]}), model="m", setting="s2"
    )
    sql = "SELECT setting, chain_id, raw_output FROM predictions ORDER BY setting"
    expected = [("s1", "a", None), ("s2", "b", "x")]
    with store.connect(views=True) as connection:
        assert connection.execute(sql).fetchall() == expected
    with store.reader() as connection:
        assert connection.execute(sql).fetchall() == expected
