"""Great-expectations 1.x suites run inside asset checks, imported lazily.

dagster-ge does not support great-expectations 1.x, so suites are run here on a
pandas frame with an ephemeral context; importing GE costs seconds, so it only
happens when a check runs, never when the definitions load.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import dagster as dg
import pandas as pd

from chronoscope_dagster.markdown import markdown_table

ExpectationFactory = Callable[[Any], Any]


@dataclass(frozen=True)
class ExpectationOutcome:
    name: str
    success: bool
    unexpected_count: int
    sample: str


@cache
def _context():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("pandas")
    source.add_dataframe_asset("frame").add_batch_definition_whole_dataframe("whole")
    return context


def run_suite(
    suite_name: str, frame: pd.DataFrame, expectations: dict[str, ExpectationFactory]
) -> list[ExpectationOutcome]:
    """Validate ``frame`` against named expectations; one outcome per name, in order."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    batch = (
        _context()
        .data_sources.get("pandas")
        .get_asset("frame")
        .get_batch_definition("whole")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    built = []
    for name, factory in expectations.items():
        expectation = factory(gxe)
        expectation.meta = {"check": name}
        built.append(expectation)
    result = batch.validate(
        gx.ExpectationSuite(name=suite_name, expectations=built), result_format="SUMMARY"
    )
    by_name = {r.expectation_config.meta["check"]: r for r in result.results}
    outcomes = []
    for name in expectations:
        r = by_name[name]
        details = r.result or {}
        outcomes.append(
            ExpectationOutcome(
                name=name,
                success=bool(r.success),
                unexpected_count=int(details.get("unexpected_count") or 0),
                sample=str(details.get("partial_unexpected_list", ""))[:200],
            )
        )
    return outcomes


GE_SAMPLE_ROWS = 200_000


def suite_per_snapshot(
    connection,
    view: str,
    columns: Sequence[str],
    years: Sequence[str],
    expectations: dict[str, ExpectationFactory],
) -> tuple[list[tuple], dict[str, int]]:
    """Run a suite on a seeded sample of each snapshot year of ``view``.

    Returns the (year, expectation, success, unexpected) rows and the failures.
    """
    rows, failures = [], {}
    for year in years:
        frame = connection.execute(
            f"SELECT {', '.join(columns)} FROM {view} WHERE snapshot_year = {int(year)} "
            f"USING SAMPLE reservoir({GE_SAMPLE_ROWS} ROWS) REPEATABLE (7)"
        ).df()
        for outcome in run_suite(view, frame, expectations):
            rows.append((year, outcome.name, outcome.success, outcome.unexpected_count))
            if not outcome.success:
                failures[f"{year}:{outcome.name}"] = outcome.unexpected_count
    return rows, failures


def suite_check_result(
    years: Sequence[str], rows: list[tuple], failures: dict[str, int]
) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not failures and bool(years),
        metadata={
            "expectations": dg.MetadataValue.md(
                markdown_table(["snapshot_year", "expectation", "success", "unexpected"], rows)
            ),
            "failures": dg.MetadataValue.json(failures),
        },
    )
