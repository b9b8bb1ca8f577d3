"""The CI gate as `.ci/run` runs it: `dagster job execute -j ci_checks` over a materialized
home exits 0 when every check passes, and fails, naming the check, on a corrupted input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.warehouse import Warehouse
from tests.pipeline_helpers import copy_home, steps_but_full_rebuild

CI_CHECKS = [
    str(Path(sys.executable).parent / "dagster"),
    "job", "execute", "-m", "chronoscope_dagster.definitions", "-j", "ci_checks",
]  # fmt: skip


def _ci_checks(home: Path, dagster_home: Path) -> subprocess.CompletedProcess[str]:
    """`.ci/run`'s command, but for the check that regenerates every chain: the sample home's
    pipeline ran it with `chains`, and CI's own step runs it (half the job's time)."""
    dagster_home.mkdir(exist_ok=True)
    env = {**os.environ, "CHRONOSCOPE_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    steps = steps_but_full_rebuild(build_definitions(str(home)).resolve_job_def("ci_checks"))
    command = [*CI_CHECKS, "--op-selection", ",".join(steps)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def test_the_ci_check_job_gates_on_a_blocking_check(sample_home, tmp_path):
    home = copy_home(sample_home[0], tmp_path)
    clean = _ci_checks(home, tmp_path / "dagster")
    assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]

    path = Warehouse(home).data_path("predictions", model="oracle", setting="gold_context")
    predictions = pq.read_table(path)
    pq.write_table(pa.concat_tables([predictions, predictions.slice(0, 1)]), path)
    corrupted = _ci_checks(home, tmp_path / "dagster")
    output = corrupted.stdout + corrupted.stderr
    assert corrupted.returncode != 0
    assert "predictions_one_per_turn" in output
    assert "RUN_FAILURE" in output or "failed" in output.lower()
