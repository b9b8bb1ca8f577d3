"""Evaluation: predictions and metrics per (model, setting), then the leaderboard and report."""

import json
import shutil
import time
from functools import partial

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.evaluation.answering import answer_turn_sets
from chronoscope_dagster.evaluation.comparison import comparison_order
from chronoscope_dagster.evaluation.inference import predictions_table
from chronoscope_dagster.evaluation.own_present import asked_against
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting
from chronoscope_dagster.evaluation.queries import (
    metrics_of,
    model_comparisons,
    model_knowledge,
)
from chronoscope_dagster.evaluation.reference_format import reference_results_json
from chronoscope_dagster.evaluation.report import (
    comparisons_markdown,
    knowledge_markdown,
    leaderboard_table,
    markdown_tables,
    render_html,
    render_markdown,
    table5,
    write_knowledge_plot,
    write_plots,
)
from chronoscope_dagster.llm.registry import plain_twins
from chronoscope_dagster.model_runs import (
    MetricsConfig,
    PredictionConfig,
    answered_metadata,
    headline_metadata,
)
from chronoscope_dagster.paraphrase.template_variants import TEMPLATES_PARAPHRASER
from chronoscope_dagster.partitions import model_setting_partitions
from chronoscope_dagster.resources import AnchorCalendar, ModelRegistry
from chronoscope_dagster.resources.warehouse import refresh_views
from chronoscope_dagster.storage.evaluation import (
    COMPARISONS_FILE,
    KNOWLEDGE_FILE,
    all_metrics,
    match_modes,
    model_presents,
    own_present_turns,
    sample_turns,
    scored_turns,
    write_predictions,
)
from chronoscope_dagster.truth.anchors import model_present
from chronoscope_dagster.warehouse import Warehouse


@dg.asset(
    partitions_def=model_setting_partitions,
    deps=[
        "eval_sample",
        "turns",
        "model_entry",
        *(
            dg.AssetDep(snapshot, partition_mapping=dg.AllPartitionMapping())
            for snapshot in ("truth", "labels")
        ),
    ],
    group_name="evaluation",
    kinds={"python", "parquet"},
    pool="model_calls",
    description="One row per (chain, turn) of the evaluation sample that the model answered "
    "under the setting: raw top-1 answer, candidates, error, latency, tokens. Every call "
    "goes through the response cache, so a rerun costs nothing and a killed run resumes. "
    "For a model with a knowledge cutoff, its present (report.json) and its turns against it "
    "(own_present.parquet) beside them, from the truth and labels of its cutoff's snapshot "
    "(so a changed snapshot makes them stale): the reference systems answer from that present.",
)
def predictions(
    context: dg.AssetExecutionContext,
    config: PredictionConfig,
    warehouse: dg.ResourceParam[Warehouse],
    models: ModelRegistry,
    anchor_calendar: AnchorCalendar,
) -> dg.MaterializeResult:
    keys = context.partition_key.keys_by_dimension
    model, setting = keys["model"], Setting(keys["setting"])
    spec = models.spec(model)
    turns = sample_turns(warehouse, setting)
    own = None
    if spec.knowledge_cutoff is not None:
        calendars = {int(year): anchor_calendar.anchors(int(year)) for year in SNAPSHOT_YEARS}
        try:
            present = model_present(spec.knowledge_cutoff, calendars)
        except ValueError as error:
            raise dg.Failure(f"model {model}: knowledge_cutoff: {error}") from error
        own = (present, own_present_turns(warehouse, present, setting))
        turns = asked_against(turns, own[1])
        context.log.info(
            f"{model}: knowledge cutoff {present.knowledge_cutoff}, present "
            f"{present.anchor.key} of the {present.snapshot_year} snapshot"
        )
    answered = answer_turn_sets(
        spec,
        setting,
        {"eval_sample": turns},
        turns=warehouse.data_path("turns"),
        cache=warehouse.response_cache_path,
        first_scored_turn=config.first_scored_turn,
        chunk_size=config.chunk_size,
        log=context.log,
    )
    table = predictions_table(model, setting, answered.predictions["eval_sample"])
    write_predictions(
        warehouse,
        "predictions",
        table,
        first_scored_turn=config.first_scored_turn,
        identity=answered.identity,
        model=model,
        setting=setting,
        own_present=own,
    )
    metadata = answered_metadata(answered, spec)
    if own is not None:
        metadata["own_present"] = dg.MetadataValue.json(own[0].describe())
        metadata["changed_since_cutoff"] = pc.sum(own[1]["changed_since_cutoff"]).as_py() or 0
    return dg.MaterializeResult(
        data_version=dg.DataVersion(
            warehouse.data_version("predictions", model=model, setting=setting)
        ),
        metadata=metadata,
    )


@dg.asset(
    partitions_def=model_setting_partitions,
    deps=["predictions"],
    group_name="evaluation",
    kinds={"python", "parquet"},
    description="Metrics of one (model, setting), long: stratum (overall, family=, length=, "
    "followup_pos=), metric (the headline scope_acc_at1, Acc@1 over the scope-dependent "
    "scored turns, then the reference evaluator's names: acc_at1, final_turn_acc_at1, "
    "strict_chain_acc_at1, drift_rate_given_present_at1, ...), value, a 95% bootstrap "
    "interval resampling chains, and the denominator (n). A model with a knowledge cutoff also "
    "has the metrics against its own present (own_scope_acc_at1, "
    "own_drift_rate_given_present_at1, ..., n_turns_without_own_present) and the stratum "
    "changed_since_cutoff.",
)
def metrics(
    context: dg.AssetExecutionContext, config: MetricsConfig, warehouse: dg.ResourceParam[Warehouse]
) -> dg.MaterializeResult:
    keys = context.partition_key.keys_by_dimension
    model, setting = keys["model"], Setting(keys["setting"])
    started = time.perf_counter()
    table, scored, hedged = metrics_of(
        scored_turns(warehouse, "predictions", model, setting),
        model,
        setting,
        match_mode=config.match_mode,
        bootstrap=config.bootstrap,
        seed=config.seed,
    )
    warehouse.write_table("metrics", table, model=model, setting=setting)
    warehouse.write_report("metrics", config.model_dump(), model=model, setting=setting)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(
            warehouse.data_version("metrics", model=model, setting=setting)
        ),
        metadata={
            "dagster/row_count": table.num_rows,
            "scored_turns": scored,
            "hedged": hedged,
            "match_mode": config.match_mode,
            "seconds": round(time.perf_counter() - started, 2),
            **headline_metadata(table),
        },
    )


class LeaderboardConfig(dg.Config):
    baseline: str | None = Field(
        default=None,
        description="Model every other one is compared with ('A vs B'); default the first "
        "registry entry that has metrics.",
    )
    bootstrap: int = Field(
        default=1000, ge=0, description="Paired bootstrap resamples of chains per comparison."
    )
    seed: int = Field(default=0, ge=0, description="Seed of the paired bootstrap.")


@dg.asset(
    deps=["metrics", "paraphrase_metrics"],
    group_name="evaluation",
    kinds={"duckdb", "parquet"},
    pool="duckdb_writer",
    description="Every model partition side by side: one row per (subset, model, setting, "
    "variant) with the headline Scope Acc@1 (Acc@1 over the scope-dependent scored turns), "
    "then the paper's Acc@1, Final@1, Chain@1 and Drift@1, each with its interval and n, for "
    "the evaluation sample and for the paraphrased subset as templated and as paraphrased; "
    "the headline (overall and by family) and the paper's Tables 3, 4, 5, 8 and 9 as Markdown "
    "in the metadata, every figure with its n; each model against the "
    "baseline ('A vs B': differences with paired bootstrap intervals and p-values) in "
    "comparisons.parquet beside it and in the metadata; per model and setting, known alone / "
    "lost in conversation / drifted to today against its explicit-scope run in "
    "knowledge.parquet beside it and in the metadata.",
)
def leaderboard(
    config: LeaderboardConfig,
    warehouse: dg.ResourceParam[Warehouse],
    duckdb: DuckDBResource,
    models: ModelRegistry,
) -> dg.MaterializeResult:
    every = all_metrics(warehouse)
    if every is None:
        raise dg.Failure("no metrics partition is materialized yet")
    specs = models.specs()
    try:
        order = comparison_order(
            every.column("model").to_pylist(), [spec.name for spec in specs], config.baseline
        )
    except ValueError as error:
        raise dg.Failure(str(error)) from error
    modes = match_modes(warehouse)
    predicted = partial(scored_turns, warehouse, "predictions")
    comparisons, uncompared = model_comparisons(
        order,
        modes=modes,
        scored_turns=predicted,
        bootstrap=config.bootstrap,
        seed=config.seed,
        twins=plain_twins(specs),
    )
    knowledge = model_knowledge(
        order, modes=modes, scored_turns=predicted, bootstrap=config.bootstrap, seed=config.seed
    )
    paraphrase = all_metrics(warehouse, "paraphrase_metrics")
    tables = [leaderboard_table(every)]
    markdown = markdown_tables(every)
    if paraphrase is not None and paraphrase.num_rows:
        tables.append(leaderboard_table(paraphrase, subset="paraphrased_subset"))
        markdown["table5"] = table5(paraphrase)
    if comparisons.num_rows:
        markdown["comparisons"] = comparisons_markdown(comparisons)
    if knowledge.num_rows:
        markdown["knowledge"] = knowledge_markdown(knowledge)
    table = pa.concat_tables(tables)
    warehouse.write_table("leaderboard", table)
    with warehouse.writing("leaderboard", COMPARISONS_FILE) as path:
        pq.write_table(comparisons, path, compression="zstd")
    with warehouse.writing("leaderboard", KNOWLEDGE_FILE) as path:
        pq.write_table(knowledge, path, compression="zstd")
    refresh_views(warehouse, duckdb)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("leaderboard")),
        metadata={
            "dagster/row_count": table.num_rows,
            "models": sorted(set(table.column("model").to_pylist())),
            "baseline": order[0],
            "uncompared": dg.MetadataValue.json(uncompared),
            **{name: dg.MetadataValue.md(text) for name, text in markdown.items()},
        },
    )


@dg.asset(
    deps=["leaderboard"],
    group_name="evaluation",
    kinds={"html", "markdown"},
    description="The evaluation report, headline first (Scope Acc@1, what it measures, with its "
    "n and the paper's Acc@1 beside it; every figure of the report with its n), as Markdown "
    "and HTML with PNG plots (Final@1 by chain length, drift by follow-up depth, accuracy by "
    "family, models with intervals) in "
    "<home>/report/, and a results JSON per model in the reference evaluator's structure.",
)
def report(warehouse: dg.ResourceParam[Warehouse]) -> dg.MaterializeResult:
    every = all_metrics(warehouse)
    if every is None:
        raise dg.Failure("no metrics partition is materialized yet")
    paraphrase = all_metrics(warehouse, "paraphrase_metrics")
    out = warehouse.home / "report"
    staging = warehouse.home / ".report.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    plots = write_plots(every, staging)
    models = sorted(set(every.column("model").to_pylist()))
    modes = set(match_modes(warehouse).values())
    sample = warehouse.query(
        "SELECT count(*) AS chains, count_if(in_self_conditioned) AS self FROM eval_sample"
    ).to_pylist()[0]
    provenance = {
        "models": ", ".join(models),
        "match mode": ", ".join(sorted(modes)),
        "evaluation sample": f"{sample['chains']} chains ({sample['self']} self-conditioned)",
    }
    paraphraser = None
    if warehouse.has("paraphrased_subset"):
        kept = warehouse.read_report("paraphrased_subset")
        paraphraser = kept["paraphraser"]
        by = "template variants" if paraphraser == TEMPLATES_PARAPHRASER else paraphraser
        provenance["paraphrased subset"] = (
            f"{kept['kept_chains']} of {kept['chains']} chains kept (paraphraser {by})"
        )
    comparisons_path = warehouse.partition_dir("leaderboard") / COMPARISONS_FILE
    comparisons = pq.read_table(comparisons_path) if comparisons_path.exists() else None
    knowledge_path = warehouse.partition_dir("leaderboard") / KNOWLEDGE_FILE
    knowledge = pq.read_table(knowledge_path) if knowledge_path.exists() else None
    if knowledge is not None and (found := write_knowledge_plot(knowledge, staging)):
        plots.append(found)
    presents = model_presents(warehouse)
    dump_present = warehouse.read_report("present_day") if presents else {}
    markdown = render_markdown(
        every,
        plots,
        provenance,
        paraphrase,
        comparisons,
        knowledge,
        presents=presents,
        dump_present=dump_present,
        paraphraser=paraphraser,
    )
    (staging / "report.md").write_text(markdown, encoding="utf-8")
    (staging / "report.html").write_text(render_html(markdown), encoding="utf-8")
    results = staging / "results"
    results.mkdir()
    for model in models:
        by_setting = {
            setting.value: every.filter(
                pc.and_(pc.equal(every["model"], model), pc.equal(every["setting"], setting.value))
            )
            for setting in PAPER_SETTINGS
        }
        document = reference_results_json(
            {s: t for s, t in by_setting.items() if t.num_rows},
            model=model,
            data=str(warehouse.data_path("turns")),
            seed=0,
            sampled_chains_gold_qonly=sample["chains"],
            sampled_chains_self=sample["self"],
            args={"match_mode": ", ".join(sorted(modes)), "scope_turns_only": True},
            runtime_seconds=0.0,
        )
        (results / f"{model}.json").write_text(
            json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("report")),
        metadata={
            "report": dg.MetadataValue.md(markdown),
            "html": dg.MetadataValue.path(str(out / "report.html")),
            "markdown": dg.MetadataValue.path(str(out / "report.md")),
            "plots": dg.MetadataValue.json([str(out / p.name) for p in plots]),
            "results_json": dg.MetadataValue.json(
                [str(out / "results" / f"{m}.json") for m in models]
            ),
        },
    )
