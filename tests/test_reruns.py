"""What a rerun on a home that already holds data plans, from Dagster's own staleness: what a
changed dump, setting, import file, probe file or registry entry was built into is built again,
and so is a partition whose blocking check failed; nothing else; one writer at a time."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.cli import main
from chronoscope_dagster.data import sample_dump_path
from chronoscope_dagster.home_lock import LOCK_FILE, home_lock
from chronoscope_dagster.orchestration import RunFailed, run_selection
from chronoscope_dagster.resources import BenchmarkSettings
from chronoscope_dagster.warehouse import Warehouse
from tests.pipeline_helpers import copy_home, home_instance


def _run(home: Path, selection: str, lines: list[str] | None = None, **options) -> list:
    return run_selection(
        home=str(home), selection=selection, instance=home_instance(home),
        echo=(lines.append if lines is not None else lambda _: None), **options,
    )  # fmt: skip


def _ran(lines: list[str]) -> list[str]:
    return [line.removeprefix("==> ") for line in lines if line.startswith("==> ")]


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
    assert "due: claims [2025]: has a new dependency data version (wikidata_dump [2025])" in lines
    assert _ran(lines) == ["claims, labels, lifespans [2025]"]
    again: list[str] = []
    _run(home, "key:claims", again, dumps={"2025": str(other_dump)})
    assert _ran(again) == [] and again[-1].startswith("nothing to do")


def test_a_run_of_some_snapshot_years_builds_no_other(home):
    """``--years`` (``snapshot_years``) runs only those snapshot-year partitions: a home built
    from one dump need not hold the sample's snapshots, whose chains would join its benchmark."""
    lines: list[str] = []
    _run(home, "key:fact_intervals", lines, snapshot_years=["2023"])
    assert _ran(lines) == ["fact_intervals [2023]"]
    assert Warehouse(home).partitions("fact_intervals") == [{"snapshot_year": "2023"}]


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
    assert "due: claims [2025]: has a new dependency data version (wikidata_dump [2025])" in lines
    assert _claims_rows(home, "2025") == _claims_rows(home, "2022")


def test_checksums_given_after_the_dump_exists_are_verified(home, other_dump, tmp_path):
    _run(home, "key:claims", dumps={"2025": str(other_dump)})
    listing = tmp_path / "md5sums.txt"
    listing.write_text(f"{'0' * 32}  {other_dump.name}\n")
    with pytest.raises(RunFailed, match="split_wikidata_dump"):
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
    [why] = [line for line in lines if line.startswith("due: claims [2025]")]
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
    assert not Warehouse(home).has("claims", snapshot_year="2022")


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


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves a directory with Last-Modified and Content-Length (HEAD and GET), counting
    requests by method."""

    requests: list[str]

    def log_message(self, *args) -> None:
        type(self).requests.append(self.command)


@pytest.fixture
def dump_server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    handler = type("Handler", (_Files,), {"requests": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(served))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_port}", handler.requests
    finally:
        server.shutdown()
        server.server_close()


def _publish(served: Path, year: str, mtime: float) -> None:
    dump = served / "dump.json.gz"
    shutil.copy(sample_dump_path(year), dump)
    os.utime(dump, (mtime, mtime))


def test_a_dump_behind_a_url_is_read_again_when_the_server_has_a_new_file(home, dump_server):
    served, base, requests = dump_server
    url = f"{base}/dump.json.gz?X-Amz-Signature=secret123"
    _publish(served, "2022", 1_700_000_000)
    _run(home, "key:claims", dumps={"2025": url})
    assert _claims_rows(home, "2025") == _claims_rows(home, "2022")
    requests.clear()
    lines: list[str] = []
    _run(home, "key:claims", lines, dumps={"2025": url})
    assert "HEAD" in requests and _ran(lines) == []
    _publish(served, "2023", 1_700_000_100)
    lines.clear()
    _run(home, "key:claims", lines, dumps={"2025": url})
    assert "due: claims [2025]: has a new dependency data version (wikidata_dump [2025])" in lines
    assert _ran(lines) == ["claims, labels, lifespans [2025]"]
    assert _claims_rows(home, "2025") == _claims_rows(home, "2023")
    assert not any("secret123" in line for line in lines)
    leaked = [p for p in home.rglob("*") if p.is_file() and b"secret123" in p.read_bytes()]
    assert leaked == []


@pytest.fixture(scope="module")
def oracle_home(sample_home, tmp_path_factory) -> tuple[Path, Path]:
    """A home holding the generated benchmark, its evaluation sample (default settings) and the
    oracle's predictions, and the one-model registry they were built with last."""
    home = copy_home(sample_home[0], tmp_path_factory.mktemp("oracle-home"))
    registry = home.parent / "models.yaml"
    registry.write_text("models:\n  - {name: oracle, backend: oracle}\n")
    _run(home, "key:predictions or key:benchmark_jsonl", models=str(registry))
    return home, registry


@pytest.fixture
def oracle_copy(oracle_home, tmp_path) -> tuple[Path, Path]:
    home, registry = oracle_home
    return copy_home(home, tmp_path), registry


def _chains(home: Path) -> int:
    return pq.ParquetFile(Warehouse(home).data_path("chains")).metadata.num_rows


def test_an_import_file_changed_in_place_is_imported_again(oracle_copy, tmp_path):
    home, registry = oracle_copy
    exported = next((home / "benchmark_jsonl").rglob("*.jsonl")).read_text().splitlines(True)
    by_family: dict[str, list[str]] = {}
    for line in exported:
        by_family.setdefault(json.loads(line)["family"], []).append(line)

    def first(n: int) -> str:
        return "".join(line for lines in by_family.values() for line in lines[:n])

    generated = _chains(home)
    chains_file = tmp_path / "chains.jsonl"
    chains_file.write_text(first(2))
    options = {
        "models": str(registry),
        "settings": BenchmarkSettings(import_chains=str(chains_file)),
    }
    _run(home, "key:turns", **options)
    assert _chains(home) == 2 * len(by_family)
    chains_file.write_text(first(3))
    log: list[str] = []
    _run(home, "key:turns", log, **options)
    assert "due: turns: has a new dependency data version (chain_import)" in log
    assert _chains(home) == 3 * len(by_family)
    log.clear()
    _run(home, "key:turns", log, models=str(registry))
    assert "due: turns: has a new dependency data version (chain_import)" in log
    assert _chains(home) == generated


def test_per_stratum_reaches_the_sample_when_only_predictions_are_selected(oracle_copy):
    home, registry = oracle_copy
    log: list[str] = []
    _run(
        home,
        "key:predictions",
        log,
        models=str(registry),
        settings=BenchmarkSettings(per_stratum=3),
    )
    assert "due: eval_sample: has a new dependency data version (sample_settings)" in log
    assert Warehouse(home).read_report("eval_sample")["per_stratum"] == 3
    assert "predictions [oracle|gold_context]" in _ran(log)
    assert not any(run.startswith(("turns", "chains", "claims")) for run in _ran(log))


def test_a_changed_registry_entry_makes_only_its_partitions_stale(oracle_copy):
    home, registry = oracle_copy
    registry.write_text(
        "models:\n  - {name: oracle, backend: oracle}\n  - {name: today, backend: present_day}\n"
    )
    log: list[str] = []
    _run(home, "key:predictions", log, models=str(registry))
    assert {run for run in _ran(log) if "oracle" in run} == set()
    registry.write_text(
        "models:\n  - {name: oracle, backend: oracle, prompting: restate_scope}\n"
        "  - {name: today, backend: present_day}\n"
    )
    log.clear()
    _run(home, "key:predictions", log, models=str(registry))
    due = [line for line in log if line.startswith("due: predictions")]
    assert len(due) == 4 and all("(model_entry [oracle])" in line for line in due), due


def test_a_probe_file_changed_in_place_is_read_again(tmp_path):
    from chronoscope_dagster.probe.assemble import build_corpus
    from chronoscope_dagster.probe.corpus import export_corpus

    home = tmp_path / "home"
    probe_file = tmp_path / "probe.json"
    export_corpus(build_corpus(2, 0), probe_file)
    settings = BenchmarkSettings(probe_file=str(probe_file))
    _run(home, "key:probe_corpus", settings=settings)
    before = Warehouse(home).query("SELECT count(*) AS n FROM probe_corpus").to_pylist()[0]["n"]
    export_corpus(build_corpus(5, 0), probe_file)
    log: list[str] = []
    _run(home, "key:probe_corpus", log, settings=settings)
    assert "due: probe_corpus: has a new dependency data version (probe_source)" in log
    after = Warehouse(home).query("SELECT count(*) AS n FROM probe_corpus").to_pylist()[0]["n"]
    assert after == before + 3


def test_an_input_rebuilt_into_the_same_bytes_leaves_what_it_feeds_alone(home):
    _run(home, "key:fact_intervals")
    _run(home, "key:claims", force=True)
    log: list[str] = []
    _run(home, "key:fact_intervals", log)
    assert _ran(log) == [] and log[-1].startswith("nothing to do"), log
    shutil.rmtree(Warehouse(home).partition_dir("fact_intervals", snapshot_year="2023"))
    log.clear()
    _run(home, "key:fact_intervals", log)
    assert "due: fact_intervals [2023]: materialized, but its data is not in the home" in log
    assert _ran(log) == ["fact_intervals [2023]"]
