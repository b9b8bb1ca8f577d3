"""What the evaluation stage reads from and writes to a home: the turns a model answers, its
predictions scored beside their turns, and the metrics, comparisons and knowledge computed
from them. Plain arguments in, Arrow tables and SQL out."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.comparison import (
    COMPARISONS_SCHEMA,
    compare_models,
    comparison_pairs,
)
from chronoscope_dagster.evaluation.knowledge import KNOWLEDGE_SCHEMA, knowledge_metrics
from chronoscope_dagster.evaluation.metrics import compute_metrics
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.llm.blind import VIEW_COLUMNS
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.warehouse import Warehouse, parquet_source

COMPARISONS_FILE = "comparisons.parquet"
"""Beside the leaderboard's data: every model against the baseline (``COMPARISONS_SCHEMA``)."""
KNOWLEDGE_FILE = "knowledge.parquet"
"""Beside the leaderboard's data: known alone / lost in conversation / drifted to today per
model and setting (``KNOWLEDGE_SCHEMA`` with ``model`` and ``setting`` first)."""
MODEL_KNOWLEDGE_SCHEMA = pa.schema(
    [pa.field(name, pa.string(), nullable=False) for name in ("model", "setting")]
    + list(KNOWLEDGE_SCHEMA)
)


def sample_turns_sql(warehouse: Warehouse, setting: Setting) -> str:
    """The turns of the evaluation sample a model answers under ``setting``."""
    only_self = "AND s.in_self_conditioned" if setting is Setting.SELF_CONDITIONED else ""
    return f"""
        SELECT t.chain_id, t.turn_index, t.question, t.answer, t.present_labels,
               t.is_explicit, t.explicit_question,
               {", ".join(f"t.{c}" for c in VIEW_COLUMNS if c not in ("turn_index", "is_explicit"))}
        FROM {parquet_source(warehouse.data_path("turns"))} t
        JOIN {parquet_source(warehouse.data_path("eval_sample"))} s USING (chain_id)
        WHERE true {only_self}
        ORDER BY t.chain_id, t.turn_index"""


def write_predictions(
    warehouse: Warehouse,
    asset: str,
    table: pa.Table,
    *,
    first_scored_turn: int,
    identity: Mapping[str, object],
    model: str,
    setting: Setting,
) -> None:
    """A predictions partition and the report ``scored_turns_sql`` reads back."""
    warehouse.write_table(asset, table, model=model, setting=setting.value)
    warehouse.write_report(
        asset,
        {"first_scored_turn": first_scored_turn, "backend": dict(identity)},
        model=model,
        setting=setting.value,
    )


def scored_turns_sql(
    warehouse: Warehouse,
    model: str,
    setting: Setting,
    asset: str = "predictions",
    variant: str | None = None,
) -> str:
    """Scored predictions of ``asset`` (of one ``variant`` if it has several) beside their
    turns, in the columns matching and metrics read."""
    report = warehouse.read_report(asset, model=model, setting=setting)
    first = int(report["first_scored_turn"])
    predictions_path = warehouse.data_path(asset, model=model, setting=setting)
    of_variant = "" if variant is None else f"AND p.variant = {sql_string(variant)}"
    return f"""
        SELECT p.chain_id, t.family, t.chain_length, p.turn_index,
               p.turn_index - {first} + 1 AS followup_pos,
               p.turn_index = t.chain_length - 1 AS is_final,
               p.prediction, p.candidates, t.answer, t.gold_labels, t.gold_aliases,
               t.present_labels, t.drift_eligible, t.answer_kind, t.rival_labels, t.is_explicit,
               t.scope_dependent,
               len(t.present_labels) > 0 AS present_available,
               p.error IS NOT NULL AS error
        FROM {parquet_source(predictions_path)} p
        JOIN {parquet_source(warehouse.data_path("turns"))} t USING (chain_id, turn_index)
        WHERE p.scored {of_variant}
        ORDER BY p.chain_id, p.turn_index"""


def scored_turns(
    warehouse: Warehouse,
    model: str,
    setting: Setting,
    mode: str,
    asset: str = "predictions",
    variant: str | None = None,
) -> pa.Table:
    """The scored turns of one (model, setting) of ``asset``, matched in ``mode``."""
    with warehouse.connect() as connection:
        table = connection.sql(
            scored_turns_sql(warehouse, model, setting, asset, variant)
        ).to_arrow_table()
    return score_turns(table, mode)


def metrics_of(
    warehouse: Warehouse,
    model: str,
    setting: Setting,
    *,
    match_mode: str,
    bootstrap: int,
    seed: int,
    asset: str = "predictions",
    variant: str | None = None,
) -> tuple[pa.Table, int, int]:
    """The long metrics table of one (model, setting) with its partition keys as columns, the
    number of scored turns behind it, and how many of them hedged at top-1."""
    scored = scored_turns(warehouse, model, setting, match_mode, asset, variant)
    table = compute_metrics(scored, bootstrap=bootstrap, seed=seed, mode=match_mode)
    keys = {"model": model, "setting": setting, **({} if variant is None else {"variant": variant})}
    hedged = pc.sum(scored["hedged_at1"]).as_py() or 0
    return _with_keys(table, keys), scored.num_rows, hedged


def all_metrics(warehouse: Warehouse, asset: str = "metrics") -> pa.Table | None:
    """Every partition of a metrics asset, or None while none is materialized."""
    view = warehouse.view_sql(asset)
    if view is None:
        return None
    with warehouse.connect() as connection:
        return connection.sql(f"SELECT * FROM ({view}) ORDER BY ALL").to_arrow_table()


def knowledge_of(
    warehouse: Warehouse, model: str, setting: Setting, *, bootstrap: int, seed: int
) -> pa.Table | None:
    """The knowledge metrics of ``model`` in ``setting`` against its explicit-scope run, in
    the match mode of its metrics; None unless both have metrics in the same mode."""
    modes = {
        s: warehouse.read_report("metrics", model=model, setting=s)["match_mode"]
        for s in (setting, Setting.EXPLICIT_SCOPE)
        if warehouse.has("metrics", model=model, setting=s)
    }
    if len(modes) < 2 or len(set(modes.values())) > 1:
        return None
    mode = modes[setting]
    table = knowledge_metrics(
        scored_turns(warehouse, model, setting, mode),
        scored_turns(warehouse, model, Setting.EXPLICIT_SCOPE, mode),
        bootstrap=bootstrap,
        seed=seed,
    )
    return _with_keys(table, {"model": model, "setting": setting}).cast(MODEL_KNOWLEDGE_SCHEMA)


def model_knowledge(
    warehouse: Warehouse, models: list[str], *, bootstrap: int, seed: int
) -> pa.Table:
    """The knowledge metrics of every model in every paper setting it has them for."""
    tables = [
        found
        for model in models
        for setting in PAPER_SETTINGS
        if (found := knowledge_of(warehouse, model, setting, bootstrap=bootstrap, seed=seed))
        is not None
    ]
    return pa.concat_tables([MODEL_KNOWLEDGE_SCHEMA.empty_table(), *tables])


def model_comparisons(
    warehouse: Warehouse,
    order: list[str],
    *,
    bootstrap: int,
    seed: int,
    twins: Mapping[str, str] | None = None,
) -> tuple[pa.Table, list[str]]:
    """Every model of ``order`` against its first, and every mitigated model against its
    plain twin (``twins``, see ``comparison_pairs``), in each setting both have metrics of,
    and the pairs left uncompared because their metrics used different match modes."""
    pairs = comparison_pairs(order, twins or {})
    modes = {
        (p["model"], p["setting"]): warehouse.read_report("metrics", **p)["match_mode"]
        for p in warehouse.partitions("metrics")
    }
    tables, uncompared = [], []
    for setting in Setting:
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
                    scored[name] = scored_turns(warehouse, name, setting, mode)
            table = compare_models(
                scored[model], scored[baseline], bootstrap=bootstrap, seed=seed, mode=mode
            )
            keys = {"setting": setting, "model": model, "baseline": baseline}
            tables.append(_with_keys(table, keys).cast(COMPARISONS_SCHEMA))
    return pa.concat_tables([COMPARISONS_SCHEMA.empty_table(), *tables]), uncompared


def _with_keys(table: pa.Table, keys: Mapping[str, str]) -> pa.Table:
    """``table`` with a constant string column per key, first and in order."""
    for position, (name, value) in enumerate(keys.items()):
        column = pa.array([str(value)] * table.num_rows, pa.string())
        table = table.add_column(position, name, column)
    return table
