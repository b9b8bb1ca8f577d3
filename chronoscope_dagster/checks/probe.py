"""The probe's gate: the exported corpus keeps every rule of the corpus."""

import dagster as dg

from chronoscope_dagster.probe.home import load_corpus
from chronoscope_dagster.warehouse import Warehouse


@dg.asset_check(
    asset="probe_corpus",
    blocking=True,
    description="Recomputed: weekday labels match dates, sessions are chronological and before "
    "the question, ids are unique, gold sessions exist and mark their evidence turn, and no "
    "message or question holds a date.",
)
def probe_corpus_valid(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    problems = load_corpus(warehouse).validate()
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "problems": len(problems),
            "first_problems": dg.MetadataValue.json([str(p) for p in problems[:20]]),
        },
    )
