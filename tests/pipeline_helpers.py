"""Running the CI check job over a copy of the session's sample home."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg

from chronoscope_dagster.definitions import build_definitions


def copy_home(home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    return copy


def run_ci_checks(home: Path) -> dg.ExecuteInProcessResult:
    return (
        build_definitions(str(home))
        .resolve_job_def("ci_checks")
        .execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    )


def failed_checks(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
