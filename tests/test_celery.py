"""A sharded build through Dagster's celery executor: two real celery workers on the machine's
Redis run every step, extraction, intervals, truth and chain generation split into shards
(chain shards as many as ``root_rows_per_shard`` asks, each split into worker processes: ``-P
solo`` workers may start them), and the files
and the counts are those of the unsharded in-process build, byte for byte."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.storage.chains import root_row_count
from chronoscope_dagster.warehouse import Warehouse

REDIS = ("127.0.0.1", 6379)
BROKER = "redis://127.0.0.1:6379/11"
YEAR = "2025"
SHARDS = 3
BUILD = [
    (
        "wikidata_dump,claims,labels,lifespans,fact_intervals,truth",
        YEAR,
        {
            "claims_and_labels": {"config": {"shards": SHARDS}},
            "fact_intervals": {"config": {"shards": SHARDS}},
            "truth": {"config": {"shards": 2}},
        },
    ),
    ("present_day", None, {}),
]
FAMILY_ASSETS = ",".join(f"family_{family}" for family in FAMILIES)


def _redis() -> None:
    try:
        socket.create_connection(REDIS, timeout=2).close()
    except OSError as error:
        if os.environ.get("CHRONOSCOPE_REQUIRE_REDIS"):
            pytest.fail(f"Redis is not reachable at {REDIS}: {error}")
        pytest.skip(f"Redis is not reachable at {REDIS}: {error}")
    subprocess.run(["redis-cli", "-n", BROKER.rsplit("/", 1)[1], "flushdb"], check=True)


def _parquet_files(home: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(home)): path.read_bytes()
        for path in sorted(home.rglob("*.parquet"))
        if f"snapshot_year={YEAR}" in str(path) or path.parent == home / "present_day"
    }


@pytest.mark.slow
def test_a_sharded_build_through_a_celery_worker_equals_the_unsharded_build(sample_home, tmp_path):
    _redis()
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "dagster"),
        "CHRONOSCOPE_HOME": str(tmp_path / "data"),
        "CHRONOSCOPE_EXECUTOR": "celery",
        "CHRONOSCOPE_CELERY_BROKER": BROKER,
    }
    (tmp_path / "dagster").mkdir()
    log = (tmp_path / "worker.log").open("w")
    command = [
        bin_dir / "celery", "-A", "dagster_celery.app", "-b", BROKER, "--result-backend", BROKER,
        "worker", "-Q", "dagster", "-P", "solo", "--loglevel", "INFO",
    ]  # fmt: skip
    workers = [
        subprocess.Popen(
            [*command, "-n", f"chronoscope{n}@%h"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for n in range(2)
    ]
    rows = root_row_count(Warehouse(sample_home[0]), YEAR)
    chain_config = {"root_rows_per_shard": -(-rows // SHARDS), "workers": 2}
    build = [*BUILD, (FAMILY_ASSETS, YEAR, {"chain_families": {"config": chain_config}})]
    try:
        for selection, partition, ops in build:
            materialize = [
                bin_dir / "dagster", "asset", "materialize", "-m",
                "chronoscope_dagster.definitions", "--select", selection,
                "--config-json", json.dumps({"ops": ops} if ops else {}),
            ]  # fmt: skip
            if partition:
                materialize += ["--partition", partition]
            done = subprocess.run(materialize, env=env, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-4000:]
    finally:
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
        for worker in workers:
            worker.wait(60)
        log.close()
    worker_log = (tmp_path / "worker.log").read_text()
    steps = [
        *(f"claims_and_labels.extract_wikidata_shard[shard_{i}]" for i in range(SHARDS)),
        *(f"fact_intervals.fact_intervals_shard[shard_{i}]" for i in range(SHARDS)),
        *(f"truth.truth_shard[shard_{i}]" for i in range(2)),
        *(f"chain_families.generate_chain_shard[shard_{i}]" for i in range(SHARDS)),
        "claims_and_labels.merge_wikidata_shards",
        "chain_families.merge_chain_shards",
        "truth.merge_truth",
        "present_day",
    ]
    for step in steps:
        assert f'"step_key": "{step}"' in worker_log, f"the worker did not run {step}"
    sharded = _parquet_files(tmp_path / "data")
    unsharded = _parquet_files(sample_home[0])
    assert sorted(sharded) == sorted(unsharded)
    assert len(sharded) == 5 + len(FAMILIES) + 1
    assert {name for name in sharded if sharded[name] != unsharded[name]} == set()
    assert not (tmp_path / "data" / "shards").exists(), "merged parts are removed"
    for asset in ("fact_intervals", "truth", *(f"family_{family}" for family in FAMILIES)):
        report = Path(asset, f"snapshot_year={YEAR}", "report.json")
        assert (tmp_path / "data" / report).read_text() == (sample_home[0] / report).read_text()
