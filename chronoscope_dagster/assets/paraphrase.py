"""The paraphrased subset (the paper's section 5 and Table 5): questions of a stratified part
of the evaluation sample rewritten (by default as template variants, or by a registry model)
and kept where the answer-equivalence filter passes, then every model evaluated on the kept
chains as templated and as paraphrased."""

import time
from collections import Counter

import dagster as dg
import pyarrow as pa
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.evaluation.answering import answer_turn_sets
from chronoscope_dagster.evaluation.inference import predictions_table
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.queries import metrics_of
from chronoscope_dagster.llm.session import RequestProgress, open_chat
from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.model_runs import (
    MetricsConfig,
    PredictionConfig,
    answered_metadata,
    headline_metadata,
)
from chronoscope_dagster.paraphrase.queries import VARIANTS, subset_sql
from chronoscope_dagster.paraphrase.rewrite import (
    PARAPHRASE_MAX_NEW_TOKENS,
    kept_chains,
    paraphrase_decoding,
    paraphrase_turns,
)
from chronoscope_dagster.paraphrase.tables import (
    entity_names,
    paraphrases_table,
    turns_for_paraphrase,
)
from chronoscope_dagster.paraphrase.template_variants import (
    TEMPLATES_PARAPHRASER,
    template_paraphrase_turns,
    uses_templates,
)
from chronoscope_dagster.partitions import model_setting_partitions
from chronoscope_dagster.resources import BenchmarkSettings, DumpSources, ModelRegistry
from chronoscope_dagster.resources.settings import FULL_SUBSET_CHAINS, SAMPLE_SUBSET_CHAINS
from chronoscope_dagster.resources.warehouse import refresh_views
from chronoscope_dagster.storage.evaluation import scored_turns, write_predictions
from chronoscope_dagster.storage.paraphrase import turns_and_labels, variant_turns
from chronoscope_dagster.warehouse import Warehouse, parquet_source


class ParaphraseConfig(dg.Config):
    retries: int = Field(
        default=2,
        ge=0,
        description="Further attempts for a rejected paraphrase, each with the next seed (and "
        "temperature 0.7 if the model decodes greedily).",
    )
    max_new_tokens: int = Field(default=PARAPHRASE_MAX_NEW_TOKENS, ge=8)
    seed: int = Field(
        default=42,
        description="Seed of the stratified choice of chains and of the template variants' "
        "choice of phrasings.",
    )
    chunk_size: int = Field(default=64, ge=1)


@dg.asset(
    deps=["eval_sample", "turns", "labels", "paraphrase_settings"],
    group_name="paraphrase",
    kinds={"python", "parquet"},
    pool="model_calls",
    description="Every question of a stratified part of the evaluation sample rewritten, by "
    "default as a template variant (another phrasing of its template slot, the seed choosing; "
    "no model), or by the registry model the settings name with the paper's prompt (App. B), "
    "retried with new seeds while the answer-equivalence filter rejects it: one row per turn "
    "with its status and reasons; a chain is kept only if all its turns pass. Model calls go "
    "through the response cache.",
)
def paraphrased_subset(
    context: dg.AssetExecutionContext,
    config: ParaphraseConfig,
    benchmark_settings: BenchmarkSettings,
    warehouse: dg.ResourceParam[Warehouse],
    models: ModelRegistry,
    duckdb: DuckDBResource,
    dump_sources: DumpSources,
) -> dg.MaterializeResult:
    paraphraser = benchmark_settings.paraphraser
    size = benchmark_settings.paraphrase_chains
    if size is None:
        embedded = all(dump_sources.is_sample(year) for year in SNAPSHOT_YEARS)
        size = SAMPLE_SUBSET_CHAINS if embedded else FULL_SUBSET_CHAINS
    subset = subset_sql(parquet_source(warehouse.data_path("eval_sample")), size, config.seed)
    turns, labels = turns_and_labels(warehouse, subset)
    items = turns_for_paraphrase(turns, entity_names(labels))
    chains = len(set(turns.column("chain_id").to_pylist()))
    started = time.perf_counter()
    if uses_templates(paraphraser):
        name = TEMPLATES_PARAPHRASER
        context.log.info(f"template variants of {len(items):,} questions of {chains:,} chains")
        results, counts = template_paraphrase_turns(items, config.seed)
        described: dict[str, object] = {"backend": {"backend": TEMPLATES_PARAPHRASER}}
        usage = {"cache_hits": 0, "backend_calls": 0}
    else:
        spec = models.spec(paraphraser)
        name = spec.name
        decoding = paraphrase_decoding(spec.decoding, config.max_new_tokens)
        context.log.info(f"paraphrasing {len(items):,} questions of {chains:,} chains with {name}")
        with open_chat(spec, warehouse.response_cache_path, config.chunk_size) as chat:
            results, counts = paraphrase_turns(
                items,
                chat,
                decoding,
                retries=config.retries,
                progress=RequestProgress(context.log, f"paraphrasing with {name}", None),
            )
        described = {"backend": dict(chat.backend.identity()), "decoding": decoding.as_dict()}
        usage = {"cache_hits": chat.stats.hits, "backend_calls": chat.usage.calls}
    table = paraphrases_table(results)
    kept = kept_chains(results)
    if not kept:
        context.log.warning(
            f"no chain kept: every chain has a turn whose paraphrase by {name} could not get "
            "past the filter (see rejected_* counts); Table 5 stays empty"
        )
    warehouse.write_table("paraphrased_subset", table)
    warehouse.write_report(
        "paraphrased_subset",
        {
            "config": {**config.model_dump(), "chains": size},
            "paraphraser": name,
            **described,
            "counts": counts.as_metadata(),
            "chains": chains,
            "kept_chains": len(kept),
        },
    )
    refresh_views(warehouse, duckdb)
    family_of = dict(zip(turns["chain_id"].to_pylist(), turns["family"].to_pylist(), strict=True))
    families = Counter(family_of[chain_id] for chain_id in kept)
    accepted = [r for r in results if r.accepted]
    rejected = [r for r in results if r.status == "rejected"]
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("paraphrased_subset")),
        metadata={
            "dagster/row_count": table.num_rows,
            "chains": chains,
            "kept_chains": len(kept),
            **counts.as_metadata(),
            **usage,
            "seconds": round(time.perf_counter() - started, 1),
            "paraphraser": name,
            "backend": dg.MetadataValue.json(described["backend"]),
            "kept_by_family": dg.MetadataValue.json(dict(sorted(families.items()))),
            "accepted_examples": dg.MetadataValue.md(
                markdown_table(
                    ["original", "paraphrase", "attempts"],
                    [(r.original, r.paraphrase, r.attempts) for r in accepted[:8]],
                )
            ),
            "rejected_examples": dg.MetadataValue.md(
                markdown_table(
                    ["original", "last reply", "reasons"],
                    [(r.original, r.last_reply, ", ".join(r.reasons)) for r in rejected[:8]],
                )
            ),
        },
    )


@dg.asset(
    partitions_def=model_setting_partitions,
    deps=["paraphrased_subset", "turns", "model_entry"],
    group_name="paraphrase",
    kinds={"python", "parquet"},
    pool="model_calls",
    description="The model's answers on the kept chains of the paraphrased subset, once as "
    "templated (variant original) and once as paraphrased, under the setting: the rows of "
    "predictions plus variant. Every kept chain is in each setting, self-conditioned too.",
)
def paraphrase_predictions(
    context: dg.AssetExecutionContext,
    config: PredictionConfig,
    warehouse: dg.ResourceParam[Warehouse],
    models: ModelRegistry,
) -> dg.MaterializeResult:
    keys = context.partition_key.keys_by_dimension
    model, setting = keys["model"], Setting(keys["setting"])
    spec = models.spec(model)
    answered = answer_turn_sets(
        spec,
        setting,
        {variant: variant_turns(warehouse, variant) for variant in VARIANTS},
        turns=warehouse.data_path("turns"),
        cache=warehouse.response_cache_path,
        first_scored_turn=config.first_scored_turn,
        chunk_size=config.chunk_size,
        log=context.log,
    )
    tables = []
    for variant in VARIANTS:
        table = predictions_table(model, setting, answered.predictions[variant])
        tables.append(
            table.add_column(2, "variant", pa.array([variant] * table.num_rows, pa.string()))
        )
    write_predictions(
        warehouse,
        "paraphrase_predictions",
        pa.concat_tables(tables),
        first_scored_turn=config.first_scored_turn,
        identity=answered.identity,
        model=model,
        setting=setting,
    )
    return dg.MaterializeResult(
        data_version=dg.DataVersion(
            warehouse.data_version("paraphrase_predictions", model=model, setting=setting)
        ),
        metadata=answered_metadata(answered, spec),
    )


@dg.asset(
    partitions_def=model_setting_partitions,
    deps=["paraphrase_predictions"],
    group_name="paraphrase",
    kinds={"python", "parquet"},
    description="The metrics of one (model, setting) on the paraphrased subset, per variant "
    "(original, paraphrased): the long table of metrics plus variant, each variant with its "
    "own bootstrap intervals.",
)
def paraphrase_metrics(
    context: dg.AssetExecutionContext, config: MetricsConfig, warehouse: dg.ResourceParam[Warehouse]
) -> dg.MaterializeResult:
    keys = context.partition_key.keys_by_dimension
    model, setting = keys["model"], Setting(keys["setting"])
    tables, scored, hedged = {}, {}, {}
    for variant in VARIANTS:
        tables[variant], scored[variant], hedged[variant] = metrics_of(
            scored_turns(warehouse, "paraphrase_predictions", model, setting, variant),
            model,
            setting,
            match_mode=config.match_mode,
            bootstrap=config.bootstrap,
            seed=config.seed,
            variant=variant,
        )
    table = pa.concat_tables(tables.values())
    warehouse.write_table("paraphrase_metrics", table, model=model, setting=setting)
    warehouse.write_report("paraphrase_metrics", config.model_dump(), model=model, setting=setting)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(
            warehouse.data_version("paraphrase_metrics", model=model, setting=setting)
        ),
        metadata={
            "dagster/row_count": table.num_rows,
            "scored_turns": dg.MetadataValue.json(scored),
            "hedged": dg.MetadataValue.json(hedged),
            "match_mode": config.match_mode,
            **{
                f"{variant} {key}": value
                for variant, variant_table in tables.items()
                for key, value in headline_metadata(variant_table).items()
            },
        },
    )
