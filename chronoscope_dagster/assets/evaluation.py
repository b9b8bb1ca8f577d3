"""Evaluation: model predictions per (model, setting) partition."""

import time
from collections import Counter

import dagster as dg
from pydantic import Field

from chronoscope_dagster.assets.metadata import markdown_table
from chronoscope_dagster.evaluation.inference import (
    chains_from_turns,
    predict,
    predictions_table,
)
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.partitions import model_setting_partitions
from chronoscope_dagster.resources import ModelRegistry, WarehouseResource
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
        SELECT t.chain_id, t.turn_index, t.question, t.answer, t.present_labels
        FROM {parquet_source(store.data_path("turns"))} t
        JOIN {parquet_source(store.data_path("eval_sample"))} s USING (chain_id)
        WHERE true {only_self}
        ORDER BY t.chain_id, t.turn_index"""


class ProgressLog:
    """Logs progress of long work every ``every_s`` seconds and at the end."""

    def __init__(self, log, label: str, total: int, every_s: float = 15.0) -> None:
        self.log, self.label, self.total, self.every_s = log, label, total, every_s
        self.done = 0
        self.started = self.last = time.perf_counter()

    def __call__(self, count: int) -> None:
        self.done += count
        now = time.perf_counter()
        if now - self.last >= self.every_s or self.done >= self.total:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            left = (self.total - self.done) / rate if rate else float("inf")
            self.log.info(
                f"{self.label}: {self.done:,}/{self.total:,} requests "
                f"({rate:.1f}/s, about {left:.0f} s left)"
            )


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
    spec = models.spec(model)
    store = warehouse.warehouse
    with store.connect() as connection:
        chains = chains_from_turns(
            connection.sql(sample_turns_sql(store, setting)).to_arrow_table()
        )
    backend = spec.build()
    cache = ResponseCache(store.home / "cache" / "responses.sqlite")
    chat = CachedChat(backend, cache, chunk_size=config.chunk_size)
    total = sum(
        len(c.questions)
        if setting is Setting.SELF_CONDITIONED
        else max(0, len(c.questions) - config.first_scored_turn)
        for c in chains
    )
    context.log.info(f"{model} / {setting}: {len(chains):,} chains, {total:,} requests")
    started = time.perf_counter()
    try:
        result = predict(
            chains,
            setting,
            chat,
            spec.decoding,
            first_scored_turn=config.first_scored_turn,
            progress=ProgressLog(context.log, f"{model} / {setting}", total),
        )
    finally:
        backend.close()
        cache.close()
    elapsed = time.perf_counter() - started
    table = predictions_table(model, setting, result)
    store.write_table("predictions", table, model=model, setting=setting.value)
    store.write_report(
        "predictions",
        {"first_scored_turn": config.first_scored_turn, "backend": dict(backend.identity())},
        model=model,
        setting=setting.value,
    )
    errors = Counter(p.completion.error.split(":", 1)[0] for p in result if p.completion.error)
    usage = chat.usage
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": table.num_rows,
            "chains": len(chains),
            "scored_turns": sum(p.scored for p in result),
            "errors": sum(errors.values()),
            "errors_by_kind": dg.MetadataValue.json(dict(sorted(errors.items()))),
            "cache_hits": chat.stats.hits,
            "cache_misses": chat.stats.misses,
            "backend_calls": usage.calls,
            "retries": getattr(getattr(backend, "usage", None), "retries", 0),
            "prompt_tokens": sum(p.completion.prompt_tokens for p in result),
            "completion_tokens": sum(p.completion.completion_tokens for p in result),
            "seconds": round(elapsed, 1),
            "backend": dg.MetadataValue.json(dict(backend.identity())),
            "decoding": dg.MetadataValue.json(spec.decoding.as_dict()),
            "sample": dg.MetadataValue.md(
                markdown_table(
                    ["chain", "turn", "prediction"],
                    [
                        (p.chain_id[:12], p.turn_index, p.completion.text or p.completion.error)
                        for p in result[:5]
                    ],
                )
            ),
        }
    )
