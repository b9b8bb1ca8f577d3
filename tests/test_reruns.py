"""What a rerun on a home that already holds data plans: a changed dump source, or a partition
whose blocking check failed, is built again; one writer at a time per home."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.cli import main
from chronoscope_dagster.data import sample_dump_path
from chronoscope_dagster.home_lock import LOCK_FILE, home_lock
from chronoscope_dagster.orchestration import RunFailed, run_selection
from chronoscope_dagster.warehouse import Warehouse
from tests.pipeline_helpers import copy_home


def _run(home: Path, selection: str, lines: list[str] | None = None, **sources) -> None:
    run_selection(
        home=str(home), selection=selection, instance=dg.DagsterInstance.ephemeral(),
        echo=(lines.append if lines is not None else lambda _: None), **sources,
    )  # fmt: skip


def _claims_rows(home: Path, year: str) -> int:
    return pq.ParquetFile(Warehouse(home).data_path("claims", snapshot_year=year)).metadata.num_rows


@pytest.fixture(scope="module")
def claims_home(tmp_path_factory) -> Path:
    """A home holding the embedded sample's ingest (wikidata_dump, claims, labels)."""
    home = tmp_path_factory.mktemp("claims-home") / "home"
    _run(home, "key:claims")
    return home


@pytest.fixture
def home(claims_home, tmp_path) -> Path:
    return copy_home(claims_home, tmp_path)


@pytest.fixture
def other_dump(tmp_path) -> Path:
    """A "real" dump for 2025 that differs from the 2025 sample: the 2022 sample."""
    path = tmp_path / "real.json.gz"
    shutil.copy(sample_dump_path("2022"), path)
    return path


def test_real_dump_recipe_on_a_home_holding_the_sample(home, other_dump):
    lines: list[str] = []
    _run(home, "key:claims", lines, dumps={"2025": str(other_dump)})
    assert _claims_rows(home, "2025") == _claims_rows(home, "2022") != 0
    assert Warehouse(home).read_report("wikidata_dump", snapshot_year="2025")["source"] == str(
        other_dump
    )
    assert any("wikidata_dump [2025]" in line and "source changed" in line for line in lines)
    again: list[str] = []
    _run(home, "key:claims", again, dumps={"2025": str(other_dump)})
    assert not any("planned again" in line for line in again)
    assert not any("wikidata_dump" in line for line in again if line.startswith("==>"))


def test_good_dump_after_a_bad_one_is_read(home, other_dump, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "P31", "type": "property"}\n')
    with pytest.raises(RunFailed, match="claims_well_formed"):
        _run(home, "key:claims", dumps={"2025": str(bad)})
    _run(home, "key:claims", dumps={"2025": str(other_dump)})
    assert _claims_rows(home, "2025") == _claims_rows(home, "2022")


def test_dump_rewritten_in_place_is_read_again(home, tmp_path):
    dump = tmp_path / "dump.json.gz"
    shutil.copy(sample_dump_path("2025"), dump)
    _run(home, "key:claims", dumps={"2025": str(dump)})
    shutil.copy(sample_dump_path("2022"), dump)
    lines: list[str] = []
    _run(home, "key:claims", lines, dumps={"2025": str(dump)})
    assert any("file or checksum list" in line for line in lines)
    assert _claims_rows(home, "2025") == _claims_rows(home, "2022")


def test_checksums_given_after_the_dump_exists_are_verified(home, other_dump, tmp_path):
    _run(home, "key:claims", dumps={"2025": str(other_dump)})
    listing = tmp_path / "md5sums.txt"
    listing.write_text(f"{'0' * 32}  {other_dump.name}\n")
    with pytest.raises(RunFailed, match="wikidata_dump"):
        _run(home, "key:claims", dumps={"2025": str(other_dump)}, checksums={"2025": str(listing)})
    listing.write_text(f"{hashlib.md5(other_dump.read_bytes()).hexdigest()}  {other_dump.name}\n")
    _run(home, "key:claims", dumps={"2025": str(other_dump)}, checksums={"2025": str(listing)})
    report = Warehouse(home).read_report("wikidata_dump", snapshot_year="2025")
    assert report["checksum_algorithm"] == "md5"


def test_claims_that_failed_a_blocking_check_are_not_an_input(home, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "P31", "type": "property"}\n')
    with pytest.raises(RunFailed, match="claims_well_formed"):
        _run(home, "key:claims", dumps={"2025": str(bad)})
    lines: list[str] = []
    with pytest.raises(RunFailed, match=r"claims.*\[2025\]"):
        _run(home, "key:fact_intervals", lines, dumps={"2025": str(bad)})
    [why] = [line for line in lines if line.startswith("planned again: claims [2025]")]
    assert "failed blocking checks" in why and "claims_well_formed" in why
    assert not Warehouse(home).has("fact_intervals", snapshot_year="2025")


@pytest.fixture
def lock_holder(tmp_path):
    """Another process holding the home's write lock (in its own session, stopped by group)."""
    home = tmp_path / "locked"
    code = (
        "import sys, time; from pathlib import Path; "
        "from chronoscope_dagster.home_lock import home_lock\n"
        "with home_lock(Path(sys.argv[1]), 'chronoscope run --select key:claims'):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(home)], stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert process.stdout.readline().strip() == "held"
        yield home, process.pid
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)


def test_second_run_on_a_home_fails_at_once_naming_the_holder(lock_holder, capsys):
    home, pid = lock_holder
    assert main(["run", "--home", str(home), "--select", "key:claims"]) == 1
    err = capsys.readouterr().err
    assert f"pid {pid}" in err and "chronoscope run --select key:claims" in err
    assert not Warehouse(home).has("wikidata_dump", snapshot_year="2022")


def test_sql_reads_a_home_while_it_is_being_written(lock_holder, capsys):
    import pyarrow as pa

    home, _ = lock_holder
    Warehouse(home).write_table("probe_corpus", pa.table({"question_id": ["q1"]}))
    assert main(["sql", "--home", str(home), "SELECT count(*) AS n FROM probe_corpus"]) == 0
    assert capsys.readouterr().out == "n\n1\n"


def test_stale_lock_of_a_dead_process_is_taken_over_and_said_so(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_FILE).write_text(f'{{"pid": {dead.pid}, "command": "chronoscope run"}}\n')
    lines: list[str] = []
    with home_lock(tmp_path, "chronoscope report", lines.append):
        assert f'"pid": {os.getpid()}' in (tmp_path / LOCK_FILE).read_text()
    assert lines == [
        f"taking over the lock of pid {dead.pid} (chronoscope run, started ?), "
        "which is no longer running"
    ]
    assert (tmp_path / LOCK_FILE).read_text() == ""
