"""What the benchmark is built from and Dagster does not build: the dumps, the settings and
the model registry's entries, as observable source assets. Each observation yields a data
version from what identifies the input now; an asset built from an older version is stale."""

from __future__ import annotations

import json
from collections.abc import Iterator

import dagster as dg

from chronoscope_dagster.automation import SOURCES_OBSERVED
from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.llm.registry import ModelSpec
from chronoscope_dagster.memory.plugin import source_file
from chronoscope_dagster.paraphrase.template_variants import TEMPLATES_PARAPHRASER, uses_templates
from chronoscope_dagster.partitions import model_partitions, snapshot_year_partitions
from chronoscope_dagster.resources import BenchmarkSettings, DumpSources, ModelRegistry
from chronoscope_dagster.resources.dumps import data_version
from chronoscope_dagster.resources.settings import settings_version

NOT_ANSWER_CHANGING = ("threads", "convert_dir")
"""Backend options that change how fast a model answers, not what it answers."""


@dg.observable_source_asset(
    partitions_def=snapshot_year_partitions,
    group_name="sources",
    automation_condition=SOURCES_OBSERVED,
    description="The Wikidata JSON dump of each snapshot year: the embedded sample by default, "
    "or a configured path or HTTP(S) URL. Its data version comes from what identifies the bytes "
    "now (a file's size, modification time and the hash of its first and last MiB; a URL's "
    "ETag, Last-Modified and length from a HEAD request; the checksum list), so a changed "
    "dump makes its claims stale.",
)
def wikidata_dump(
    context: dg.AssetExecutionContext, dump_sources: DumpSources
) -> dg.DataVersionsByPartition:
    versions = {}
    for year in SNAPSHOT_YEARS:
        identity = dump_sources.identity(year)
        versions[year] = data_version(identity)
        context.log.info(f"snapshot {year}: {json.dumps(identity, default=str)}")
    return dg.DataVersionsByPartition(versions)


SETTINGS_SPECS = {
    "chain_import": "The chains file imported instead of the generated families (its path and "
    "content), or none.",
    "sample_settings": "How many chains per family the evaluation sample and its "
    "self-conditioned subset take.",
    "paraphrase_settings": "How many chains are paraphrased, and by which model (its registry "
    "entry).",
    "probe_source": "The LongMemEval-shaped file probed instead of the authored and generated "
    "items (its path and content), or none.",
    "probe_run_settings": "How many items of each question type the probe runs, and the "
    "memory systems it runs through each model (a plug-in by its module's content).",
}


@dg.multi_observable_source_asset(
    specs=[
        dg.AssetSpec(
            key,
            group_name="sources",
            description=description,
            automation_condition=SOURCES_OBSERVED,
        )
        for key, description in SETTINGS_SPECS.items()
    ],
)
def settings(
    benchmark_settings: BenchmarkSettings, models: ModelRegistry
) -> Iterator[dg.ObserveResult]:
    s = benchmark_settings
    paraphraser: object = (
        TEMPLATES_PARAPHRASER
        if uses_templates(s.paraphraser)
        else entry_identity(models.spec(s.paraphraser))
    )
    observed = {
        "chain_import": settings_version({"path": s.import_chains}, s.import_chains),
        "sample_settings": settings_version(
            {"per_stratum": s.per_stratum, "self_per_stratum": s.self_per_stratum}
        ),
        "paraphrase_settings": settings_version(
            {"chains": s.paraphrase_chains, "paraphraser": paraphraser}
        ),
        "probe_source": settings_version({"path": s.probe_file}, s.probe_file),
        "probe_run_settings": settings_version(
            {"items_per_type": s.probe_items_per_type, "memories": s.probe_memories},
            *(source_file(name) for name in s.probe_memories),
        ),
    }
    for key, (version, described) in observed.items():
        yield dg.ObserveResult(
            asset_key=key,
            data_version=dg.DataVersion(version),
            metadata={"settings": dg.MetadataValue.json(described)},
        )


@dg.observable_source_asset(
    partitions_def=model_partitions,
    group_name="sources",
    automation_condition=SOURCES_OBSERVED,
    description="Each model registry entry: backend, model, decoding, prompting, knowledge "
    "cutoff and the options that change answers (not threads). A changed entry makes its "
    "partitions stale.",
)
def model_entry(models: ModelRegistry) -> dg.DataVersionsByPartition:
    return dg.DataVersionsByPartition(
        {spec.name: data_version({"entry": entry_identity(spec)}) for spec in models.specs()}
    )


def entry_identity(spec: ModelSpec) -> dict[str, object]:
    """What identifies an entry's answers and scores; ``knowledge_cutoff`` only where set, so
    the entries without one keep their data versions."""
    options = spec.options.model_dump(mode="json", exclude=set(NOT_ANSWER_CHANGING))
    identity: dict[str, object] = {
        "backend": spec.backend,
        "model": spec.model,
        "decoding": spec.decoding.as_dict(),
        "prompting": spec.prompting,
        "options": options,
    }
    if spec.knowledge_cutoff is not None:
        identity["knowledge_cutoff"] = spec.knowledge_cutoff.isoformat()
    return identity
