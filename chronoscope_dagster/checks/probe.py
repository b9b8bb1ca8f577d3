"""The probe's gates: the exported corpus keeps every rule of the corpus, and the memory
systems' stores keep the one that matters most: no message holds a date."""

import dagster as dg

from chronoscope_dagster.checks.partitions import checked_partitions
from chronoscope_dagster.memory.runs import store_problems
from chronoscope_dagster.probe.corpus import CorpusError
from chronoscope_dagster.probe.longmemeval import FormatError
from chronoscope_dagster.storage.probe import load_corpus, load_memory_runs
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


@dg.asset_check(
    asset="probe_runs",
    blocking=True,
    description="Read back from every store the built-in memory systems wrote: no stored "
    "message holds a date, in either arm, and no session header does under the probe arm; "
    "time lives only in the stamps, so a memory cannot answer from dates in its text.",
)
def probe_memory_stores_undated(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    problems: list[str] = []
    messages = 0
    for partition in checked_partitions(context, warehouse, "probe_runs"):
        runs = load_memory_runs(warehouse, partition["model"])
        messages += sum(audit.messages for run in runs for audit in run.stored.values())
        problems += [f"{partition['model']}: {problem}" for problem in store_problems(runs)]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "stored_messages": messages,
            "problems": len(problems),
            "first_problems": dg.MetadataValue.json(problems[:20]),
        },
    )
