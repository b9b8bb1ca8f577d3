"""Evaluation: predictions and metrics per (model, setting), then the leaderboard and report."""

import json
import shutil
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.evaluation.comparison import (
    COMPARISONS_SCHEMA,
    compare_models,
    comparison_order,
    comparison_pairs,
)
from chronoscope_dagster.evaluation.inference import (
    EvalChain,
    Prediction,
    chains_from_turns,
    predict,
    predictions_table,
)
from chronoscope_dagster.evaluation.knowledge import KNOWLEDGE_SCHEMA, knowledge_metrics
from chronoscope_dagster.evaluation.matching import score_turns
from chronoscope_dagster.evaluation.metrics import compute_metrics, reference_results_json
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, SETTINGS, Setting
from chronoscope_dagster.evaluation.report import (
    HEADLINE,
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
from chronoscope_dagster.evaluation.strategies import Prompting
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.llm.registry import ModelSpec, plain_twins
from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.partitions import model_setting_partitions
from chronoscope_dagster.resources import ModelRegistry, WarehouseResource
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.warehouse import Warehouse, parquet_source


class PredictionConfig(dg.Config):
    first_scored_turn: int = Field(
        default=1,
        ge=0,
        description="Turns before this index are context, not scored (1: the reference's "
        "--scope_turns_only, the paper's setting; 0: score the first turn too).",
    )
    chunk_size: int = Field(
        default=64, ge=1, description="Requests per backend call; each is cached when answered."
    )


def sample_turns_sql(store: Warehouse, setting: Setting) -> str:
    only_self = "AND s.in_self_conditioned" if setting is Setting.SELF_CONDITIONED else ""
    return f"""
        SELECT t.chain_id, t.turn_index, t.question, t.answer, t.present_labels,
               t.is_explicit, t.explicit_question
        FROM {parquet_source(store.data_path("turns"))} t
        JOIN {parquet_source(store.data_path("eval_sample"))} s USING (chain_id)
        WHERE true {only_self}
        ORDER BY t.chain_id, t.turn_index"""


class ProgressLog:
    """Logs progress of long work every ``every_s`` seconds and at the end; ``total=None``
    when the amount is not known in advance (retries), without an estimate of time left."""

    def __init__(self, log, label: str, total: int | None, every_s: float = 15.0) -> None:
        self.log, self.label, self.total, self.every_s = log, label, total, every_s
        self.done = 0
        self.started = self.last = time.perf_counter()

    def __call__(self, count: int) -> None:
        if self.total == 0:
            return
        self.done += count
        now = time.perf_counter()
        finished = self.total is not None and self.done >= self.total
        if now - self.last < self.every_s and not finished:
            return
        self.last = now
        rate = self.done / max(now - self.started, 1e-9)
        if self.total is None:
            self.log.info(f"{self.label}: {self.done:,} requests ({rate:.1f}/s)")
            return
        left = (self.total - self.done) / rate if rate else float("inf")
        self.log.info(
            f"{self.label}: {self.done:,}/{self.total:,} requests "
            f"({rate:.1f}/s, about {left:.0f} s left)"
        )


@contextmanager
def model_chat(store: Warehouse, spec: ModelSpec, chunk_size: int) -> Iterator[CachedChat]:
    """The registry model behind the home's response cache; both are closed on leaving."""
    backend = spec.build()
    cache = ResponseCache(store.response_cache_path)
    try:
        yield CachedChat(backend, cache, chunk_size=chunk_size)
    finally:
        backend.close()
        cache.close()


def write_predictions(
    store: Warehouse,
    asset: str,
    table: pa.Table,
    config: PredictionConfig,
    identity: Mapping[str, object],
    *,
    model: str,
    setting: Setting,
) -> None:
    """A predictions partition and the report ``scored_turns_sql`` reads back."""
    store.write_table(asset, table, model=model, setting=setting.value)
    store.write_report(
        asset,
        {"first_scored_turn": config.first_scored_turn, "backend": dict(identity)},
        model=model,
        setting=setting.value,
    )


def _request_count(
    chains: list[EvalChain], setting: Setting, first_scored_turn: int, prompting: str = "plain"
) -> int:
    """Backend requests at most (two per turn under rewrite then answer)."""
    calls = 2 if prompting == Prompting.REWRITE_THEN_ANSWER else 1
    if setting is Setting.SELF_CONDITIONED:
        return calls * sum(len(c.questions) for c in chains)
    return calls * sum(max(0, len(c.questions) - first_scored_turn) for c in chains)


def answer_turn_sets(
    context: dg.AssetExecutionContext,
    store: Warehouse,
    spec: ModelSpec,
    setting: Setting,
    config: PredictionConfig,
    turn_sets: Mapping[str, str],
) -> tuple[dict[str, list[Prediction]], dict[str, object], dict[str, object]]:
    """Run ``spec`` under ``setting`` on each named set of turns (SQL with the columns of
    ``sample_turns_sql``) through the response cache: the predictions per set, the
    materialization metadata of them all, and the backend's identity."""
    with store.connect() as connection:
        chain_sets = {
            name: chains_from_turns(connection.sql(sql).to_arrow_table())
            for name, sql in turn_sets.items()
        }
    chains = sum(len(c) for c in chain_sets.values())
    total = sum(
        _request_count(c, setting, config.first_scored_turn, spec.prompting)
        for c in chain_sets.values()
    )
    label = f"{spec.name} / {setting}"
    context.log.info(f"{label}: {chains:,} chains, {total:,} requests")
    progress = ProgressLog(context.log, label, total)
    started = time.perf_counter()
    with model_chat(store, spec, config.chunk_size) as chat:
        results = {
            name: predict(
                chain_set,
                setting,
                chat,
                spec.decoding,
                first_scored_turn=config.first_scored_turn,
                progress=progress,
                prompting=spec.prompting,
            )
            for name, chain_set in chain_sets.items()
        }
    elapsed = time.perf_counter() - started
    backend = chat.backend
    every = [p for predictions in results.values() for p in predictions]
    errors = Counter(p.completion.error.split(":", 1)[0] for p in every if p.completion.error)
    identity = dict(backend.identity())
    metadata: dict[str, object] = {
        "dagster/row_count": len(every),
        "chains": chains,
        "scored_turns": sum(p.scored for p in every),
        "errors": sum(errors.values()),
        "errors_by_kind": dg.MetadataValue.json(dict(sorted(errors.items()))),
        "cache_hits": chat.stats.hits,
        "cache_misses": chat.stats.misses,
        "backend_calls": chat.usage.calls,
        "retries": getattr(getattr(backend, "usage", None), "retries", 0),
        "prompt_tokens": sum(p.completion.prompt_tokens for p in every),
        "completion_tokens": sum(p.completion.completion_tokens for p in every),
        "seconds": round(elapsed, 1),
        "backend": dg.MetadataValue.json(identity),
        "decoding": dg.MetadataValue.json(spec.decoding.as_dict()),
        "prompting": spec.prompting,
        "rewrite_calls": sum(
            p.rewritten_question is not None
            or (p.completion.error or "").startswith(("rewrite_failed", "rewrite_empty"))
            for p in every
        ),
        "answer_line_missing": sum(p.answer_line_missing for p in every),
        "sample": dg.MetadataValue.md(
            markdown_table(
                ["chain", "turn", "prediction"],
                [
                    (p.chain_id[:12], p.turn_index, p.completion.text or p.completion.error)
                    for p in every[:5]
                ],
            )
        ),
    }
    return results, metadata, identity


@dg.asset(
    partitions_def=model_setting_partitions,
    deps=["eval_sample", "turns"],
    group_name="evaluation",
    kinds={"python", "parquet"},
    owners=["team:chronoscope"],
    pool="model_calls",
    description="One row per (chain, turn) of the evaluation sample that the model answered "
    "under the setting: raw top-1 answer, candidates, error, latency, tokens. Every call "
    "goes through the response cache, so a rerun costs nothing and a killed run resumes.",
)
def predictions(
    context: dg.AssetExecutionContext,
    config: PredictionConfig,
    warehouse: WarehouseResource,
    models: ModelRegistry,
) -> dg.MaterializeResult:
    keys = context.partition_key.keys_by_dimension
    model, setting = keys["model"], Setting(keys["setting"])
    store = warehouse.warehouse
    results, metadata, identity = answer_turn_sets(
        context,
        store,
        models.spec(model),
        setting,
        config,
        {"eval_sample": sample_turns_sql(store, setting)},
    )
    table = predictions_table(model, setting, results["eval_sample"])
    write_predictions(store, "predictions", table, config, identity, model=model, setting=setting)
    return dg.MaterializeResult(metadata=metadata)


class MetricsConfig(dg.Config):
    match_mode: Literal["relaxed", "exact", "reference"] = Field(
        default="relaxed",
        description="relaxed: gold set and aliases on whole-token boundaries; exact: normalised "
        "equality; reference: the authors' matcher, quirks included, for published numbers.",
    )
    bootstrap: int = Field(default=1000, ge=0, description="Bootstrap resamples of chains.")
    seed: int = Field(default=0, description="Seed of the bootstrap.")


def scored_turns_sql(
    store: Warehouse,
    model: str,
    setting: str,
    asset: str = "predictions",
    variant: str | None = None,
) -> str:
    """Scored predictions of ``asset`` (of one ``variant`` if it has several) beside their
    turns, in the columns matching and metrics read."""
    report = store.read_report(asset, model=model, setting=setting)
    first = int(report["first_scored_turn"])
    predictions_path = store.data_path(asset, model=model, setting=setting)
    of_variant = "" if variant is None else f"AND p.variant = {sql_string(variant)}"
    return f"""
        SELECT p.chain_id, t.family, t.chain_length, p.turn_index,
               p.turn_index - {first} + 1 AS followup_pos,
               p.turn_index = t.chain_length - 1 AS is_final,
               p.prediction, p.candidates, t.answer, t.gold_labels, t.gold_aliases,
               t.present_labels, t.drift_eligible, t.is_explicit,
               len(t.present_labels) > 0 AS present_available,
               p.error IS NOT NULL AS error
        FROM {parquet_source(predictions_path)} p
        JOIN {parquet_source(store.data_path("turns"))} t USING (chain_id, turn_index)
        WHERE p.scored {of_variant}
        ORDER BY p.chain_id, p.turn_index"""


def scored_turns(
    store: Warehouse,
    model: str,
    setting: str,
    mode: str,
    asset: str = "predictions",
    variant: str | None = None,
) -> pa.Table:
    with store.connect() as connection:
        table = connection.sql(
            scored_turns_sql(store, model, setting, asset, variant)
        ).to_arrow_table()
    return score_turns(table, mode)


def metrics_of(
    store: Warehouse,
    model: str,
    setting: str,
    config: MetricsConfig,
    asset: str = "predictions",
    variant: str | None = None,
) -> tuple[pa.Table, int]:
    """The long metrics table of one (model, setting) with its partition keys as columns, and
    the number of scored turns behind it."""
    scored = scored_turns(store, model, setting, config.match_mode, asset, variant)
    table = compute_metrics(
        scored, bootstrap=config.bootstrap, seed=config.seed, mode=config.match_mode
    )
    keys = {"model": model, "setting": setting, **({} if variant is None else {"variant": variant})}
    for position, (name, value) in enumerate(keys.items()):
        table = table.add_column(position, name, pa.array([value] * table.num_rows, pa.string()))
    return table, scored.num_rows


def headline_metadata(table: pa.Table) -> dict[str, object]:
    """The overall headline metrics of a metrics table as numbers and a Markdown table."""
    overall = {
        row["metric"]: row
        for row in table.to_pylist()
        if row["stratum"] == "overall" and row["metric"] in HEADLINE
    }
    shown = [m for m in HEADLINE if m in overall and overall[m]["value"] is not None]
    return {
        **{HEADLINE[m]: float(overall[m]["value"]) for m in shown},
        "headline": dg.MetadataValue.md(
            markdown_table(
                ["metric", "value", "95% CI", "denominator"],
                [
                    (
                        HEADLINE[m],
                        f"{overall[m]['value']:.3f}",
                        f"[{overall[m]['ci_low']:.3f}, {overall[m]['ci_high']:.3f}]",
                        overall[m]["denominator"],
                    )
                    for m in shown
                ],
            )
        ),
    }


@dg.asset(
    partitions_def=model_setting_partitions,
    deps=["predictions"],
    group_name="evaluation",
    kinds={"python", "parquet"},
    owners=["team:chronoscope"],
    description="Metrics of one (model, setting), long: stratum (overall, family=, length=, "
    "followup_pos=), metric (the reference evaluator's names: acc_at1, final_turn_acc_at1, "
    "strict_chain_acc_at1, drift_rate_given_present_at1, ...), value and a 95% bootstrap "
    "interval resampling chains.",
)
def metrics(
    context: dg.AssetExecutionContext, config: MetricsConfig, warehouse: WarehouseResource
) -> dg.MaterializeResult:
    keys = context.partition_key.keys_by_dimension
    model, setting = keys["model"], keys["setting"]
    store = warehouse.warehouse
    started = time.perf_counter()
    table, scored = metrics_of(store, model, setting, config)
    store.write_table("metrics", table, model=model, setting=setting)
    store.write_report("metrics", config.model_dump(), model=model, setting=setting)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": table.num_rows,
            "scored_turns": scored,
            "match_mode": config.match_mode,
            "seconds": round(time.perf_counter() - started, 2),
            **headline_metadata(table),
        }
    )


def all_metrics(store: Warehouse, asset: str = "metrics") -> pa.Table | None:
    """Every partition of a metrics asset, or None while none is materialized."""
    view = store.view_sql(asset)
    if view is None:
        return None
    with store.connect() as connection:
        return connection.sql(f"SELECT * FROM ({view}) ORDER BY ALL").to_arrow_table()


COMPARISONS_FILE = "comparisons.parquet"
"""Beside the leaderboard's data: every model against the baseline (``COMPARISONS_SCHEMA``)."""
KNOWLEDGE_FILE = "knowledge.parquet"
"""Beside the leaderboard's data: known alone / lost in conversation / drifted to today per
model and setting (``KNOWLEDGE_SCHEMA`` with ``model`` and ``setting`` first)."""
MODEL_KNOWLEDGE_SCHEMA = pa.schema(
    [pa.field(name, pa.string(), nullable=False) for name in ("model", "setting")]
    + list(KNOWLEDGE_SCHEMA)
)


def knowledge_of(
    store: Warehouse, model: str, setting: str, *, bootstrap: int, seed: int
) -> pa.Table | None:
    """The knowledge metrics of ``model`` in ``setting`` against its explicit-scope run, in
    the match mode of its metrics; None unless both have metrics in the same mode."""
    modes = {
        s: store.read_report("metrics", model=model, setting=s)["match_mode"]
        for s in (setting, Setting.EXPLICIT_SCOPE.value)
        if store.has("metrics", model=model, setting=s)
    }
    if len(modes) < 2 or len(set(modes.values())) > 1:
        return None
    mode = modes[setting]
    table = knowledge_metrics(
        scored_turns(store, model, setting, mode),
        scored_turns(store, model, Setting.EXPLICIT_SCOPE.value, mode),
        bootstrap=bootstrap,
        seed=seed,
    )
    for position, (name, value) in enumerate((("model", model), ("setting", setting))):
        table = table.add_column(position, name, pa.array([value] * table.num_rows, pa.string()))
    return table.cast(MODEL_KNOWLEDGE_SCHEMA)


def model_knowledge(store: Warehouse, models: list[str], config: "LeaderboardConfig") -> pa.Table:
    """The knowledge metrics of every model in every paper setting it has them for."""
    tables = [
        found
        for model in models
        for setting in PAPER_SETTINGS
        if (
            found := knowledge_of(
                store, model, setting.value, bootstrap=config.bootstrap, seed=config.seed
            )
        )
        is not None
    ]
    return pa.concat_tables([MODEL_KNOWLEDGE_SCHEMA.empty_table(), *tables])


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


def model_comparisons(
    store: Warehouse,
    order: list[str],
    config: LeaderboardConfig,
    twins: Mapping[str, str] | None = None,
) -> tuple[pa.Table, list[str]]:
    """Every model of ``order`` against its first, and every mitigated model against its
    plain twin (``twins``, see ``comparison_pairs``), in each setting both have metrics of,
    and the pairs left uncompared because their metrics used different match modes."""
    pairs = comparison_pairs(order, twins or {})
    modes = {
        (p["model"], p["setting"]): store.read_report("metrics", **p)["match_mode"]
        for p in store.partitions("metrics")
    }
    tables, uncompared = [], []
    for setting in SETTINGS:
        scored: dict[str, pa.Table] = {}
        for model, baseline in pairs:
            mode, other_mode = modes.get((baseline, setting)), modes.get((model, setting))
            if mode is None or other_mode is None:
                continue
            if other_mode != mode:
                uncompared.append(
                    f"{model} vs {baseline} ({setting}): match modes {other_mode}, {mode}"
                )
                continue
            for name in (model, baseline):
                if name not in scored:
                    scored[name] = scored_turns(store, name, setting, mode)
            table = compare_models(
                scored[model],
                scored[baseline],
                bootstrap=config.bootstrap,
                seed=config.seed,
                mode=mode,
            )
            for position, (name, value) in enumerate(
                (("setting", setting), ("model", model), ("baseline", baseline))
            ):
                table = table.add_column(position, name, pa.array([value] * table.num_rows))
            tables.append(table.cast(COMPARISONS_SCHEMA))
    return pa.concat_tables([COMPARISONS_SCHEMA.empty_table(), *tables]), uncompared


@dg.asset(
    deps=["metrics", "paraphrase_metrics"],
    group_name="evaluation",
    kinds={"duckdb", "parquet"},
    owners=["team:chronoscope"],
    pool="duckdb_writer",
    description="Every model partition side by side: one row per (subset, model, setting, "
    "variant) with Acc@1, Final@1, Chain@1 and Drift@1 and their intervals, for the "
    "evaluation sample and for the paraphrased subset as templated and as paraphrased; the "
    "paper's Tables 3, 4, 5, 8 and 9 as Markdown in the metadata; each model against the "
    "baseline ('A vs B': differences with paired bootstrap intervals and p-values) in "
    "comparisons.parquet beside it and in the metadata; per model and setting, known alone / "
    "lost in conversation / drifted to today against its explicit-scope run in "
    "knowledge.parquet beside it and in the metadata.",
)
def leaderboard(
    config: LeaderboardConfig,
    warehouse: WarehouseResource,
    duckdb: DuckDBResource,
    models: ModelRegistry,
) -> dg.MaterializeResult:
    store = warehouse.warehouse
    every = all_metrics(store)
    if every is None:
        raise dg.Failure("no metrics partition is materialized yet")
    specs = models.specs()
    try:
        order = comparison_order(
            every.column("model").to_pylist(), [spec.name for spec in specs], config.baseline
        )
    except ValueError as error:
        raise dg.Failure(str(error)) from error
    comparisons, uncompared = model_comparisons(store, order, config, plain_twins(specs))
    knowledge = model_knowledge(store, order, config)
    paraphrase = all_metrics(store, "paraphrase_metrics")
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
    store.write_table("leaderboard", table)
    with store.writing("leaderboard", COMPARISONS_FILE) as path:
        pq.write_table(comparisons, path, compression="zstd")
    with store.writing("leaderboard", KNOWLEDGE_FILE) as path:
        pq.write_table(knowledge, path, compression="zstd")
    warehouse.refresh_views(duckdb)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": table.num_rows,
            "models": sorted(set(table.column("model").to_pylist())),
            "baseline": order[0],
            "uncompared": dg.MetadataValue.json(uncompared),
            **{name: dg.MetadataValue.md(text) for name, text in markdown.items()},
        }
    )


@dg.asset(
    deps=["leaderboard"],
    group_name="evaluation",
    kinds={"html", "markdown"},
    owners=["team:chronoscope"],
    description="The evaluation report (Markdown and HTML with PNG plots: Final@1 by chain "
    "length, drift by follow-up depth, accuracy by family, models with intervals) in "
    "<home>/report/, and a results JSON per model in the reference evaluator's structure.",
)
def report(warehouse: WarehouseResource) -> dg.MaterializeResult:
    store = warehouse.warehouse
    every = all_metrics(store)
    if every is None:
        raise dg.Failure("no metrics partition is materialized yet")
    paraphrase = all_metrics(store, "paraphrase_metrics")
    out = store.home / "report"
    staging = store.home / ".report.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    plots = write_plots(every, staging)
    models = sorted(set(every.column("model").to_pylist()))
    modes = {store.read_report("metrics", **p)["match_mode"] for p in store.partitions("metrics")}
    sample = store.query(
        "SELECT count(*) AS chains, count_if(in_self_conditioned) AS self FROM eval_sample"
    ).to_pylist()[0]
    provenance = {
        "models": ", ".join(models),
        "match mode": ", ".join(sorted(modes)),
        "evaluation sample": f"{sample['chains']} chains ({sample['self']} self-conditioned)",
    }
    if store.has("paraphrased_subset"):
        kept = store.read_report("paraphrased_subset")
        provenance["paraphrased subset"] = (
            f"{kept['kept_chains']} of {kept['chains']} chains kept "
            f"(paraphraser {kept['paraphraser']})"
        )
    comparisons_path = store.partition_dir("leaderboard") / COMPARISONS_FILE
    comparisons = pq.read_table(comparisons_path) if comparisons_path.exists() else None
    knowledge_path = store.partition_dir("leaderboard") / KNOWLEDGE_FILE
    knowledge = pq.read_table(knowledge_path) if knowledge_path.exists() else None
    if knowledge is not None and (found := write_knowledge_plot(knowledge, staging)):
        plots.append(found)
    markdown = render_markdown(every, plots, provenance, paraphrase, comparisons, knowledge)
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
            data=str(store.data_path("turns")),
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
        metadata={
            "report": dg.MetadataValue.md(markdown),
            "html": dg.MetadataValue.path(str(out / "report.html")),
            "markdown": dg.MetadataValue.path(str(out / "report.md")),
            "plots": dg.MetadataValue.json([str(out / p.name) for p in plots]),
            "results_json": dg.MetadataValue.json(
                [str(out / "results" / f"{m}.json") for m in models]
            ),
        }
    )
