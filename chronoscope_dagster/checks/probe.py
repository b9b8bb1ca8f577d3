"""The probe's gate: the exported corpus keeps every rule of the corpus."""

import dagster as dg

from chronoscope_dagster.probe.corpus import CorpusError
from chronoscope_dagster.probe.longmemeval import FormatError
from chronoscope_dagster.storage.probe import load_corpus
from chronoscope_dagster.warehouse import Warehouse


@dg.asset_check(
    asset="probe_corpus",
    blocking=True,
    description="Recomputed: weekday labels match dates, sessions are chronological and before "
    "the question, ids are unique, gold sessions exist and mark their evidence turn, and no "
    "message or question holds a date; a corpus with no items, or a file that cannot be read "
    "as one, fails.",
)
def probe_corpus_valid(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    try:
        problems = [str(p) for p in load_corpus(warehouse).validate()]
    except (CorpusError, FormatError) as error:
        problems = [str(error)]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "problems": len(problems),
            "first_problems": dg.MetadataValue.json(problems[:20]),
        },
    )
