"""Running the CI check job over a copy of the session's sample home."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg

from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.llm.registry import load_registry
from tests.conftest import TEST_MODELS

TEST_MODEL_NAMES = tuple(spec.name for spec in load_registry(TEST_MODELS))
"""The test registry's models in its order, the embedded model (the comparisons' baseline)
first."""


def home_instance(home: Path) -> dg.DagsterInstance:
    """The Dagster instance of a home, where the command line keeps it (``<home>/dagster``):
    a copy of the home holds what Dagster knows of its assets, staleness included."""
    directory = Path(home) / "dagster"
    directory.mkdir(parents=True, exist_ok=True)
    return dg.DagsterInstance.local_temp(tempdir=str(directory))


def copy_home(home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    return copy


FULL_REBUILD_CHECK = "chains_chains_deterministic"
"""The check that rebuilds every family of every snapshot (about 30 s of the job's 50 s on
the sample). The pipeline runs it with `chains` (the sample home's run, whose every check
``test_every_run_and_check_passes`` reads) and CI's own ci_checks step runs it; tests about
another check's verdict, the CI gate test's included, run the rest of the job."""


def steps_but_full_rebuild(job: dg.JobDefinition) -> list[str]:
    """The ci_checks job's steps without ``FULL_REBUILD_CHECK`` (which must be one of them)."""
    steps = [node.name for node in job.graph.node_defs]
    assert FULL_REBUILD_CHECK in steps, f"{FULL_REBUILD_CHECK} is not a step of ci_checks"
    return [step for step in steps if step != FULL_REBUILD_CHECK]


def run_ci_checks(home: Path, *, rebuild_chains: bool = False) -> dg.ExecuteInProcessResult:
    job = build_definitions(str(home)).resolve_job_def("ci_checks")
    return job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
        op_selection=None if rebuild_chains else steps_but_full_rebuild(job),
    )


def failed_checks(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
