"""Where the evaluation stage reads and writes in a home: the turns a model answers, the
predictions partitions and their reports, the scored turns read back beside the benchmark's
turns, and the metrics partitions."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.evaluation.own_present import (
    OWN_PRESENT_FILE,
    OWN_PRESENT_SCHEMA,
    own_present_sql,
)
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.queries import sample_turns_sql, scored_turns_sql
from chronoscope_dagster.evaluation.reference_systems import copy_previous_sql
from chronoscope_dagster.truth.anchors import ModelPresent
from chronoscope_dagster.warehouse import Warehouse, parquet_source

COMPARISONS_FILE = "comparisons.parquet"
"""Beside the leaderboard's data: every model against the baseline (``COMPARISONS_SCHEMA``)."""
KNOWLEDGE_FILE = "knowledge.parquet"
"""Beside the leaderboard's data: known alone / lost in conversation / drifted to today per
model and setting (``MODEL_KNOWLEDGE_SCHEMA``)."""


def sample_turns(warehouse: Warehouse, setting: Setting) -> pa.Table:
    """The turns of the home's evaluation sample a model answers under ``setting``."""
    sql = sample_turns_sql(
        parquet_source(warehouse.data_path("turns")),
        parquet_source(warehouse.data_path("eval_sample")),
        setting,
    )
    with warehouse.connect() as connection:
        return connection.sql(sql).to_arrow_table()


def own_present_turns(warehouse: Warehouse, present: ModelPresent, setting: Setting) -> pa.Table:
    """The turns of the home's evaluation sample a model answers under ``setting``, against
    the model's own ``present`` (``own_present.OWN_PRESENT_SCHEMA``), from the truth and labels
    of the present's snapshot."""
    turns = parquet_source(warehouse.data_path("turns"))
    answered = sample_turns_sql(turns, parquet_source(warehouse.data_path("eval_sample")), setting)
    year = str(present.snapshot_year)
    sql = own_present_sql(
        f"(SELECT t.* FROM {turns} t SEMI JOIN ({answered}) s USING (chain_id, turn_index))",
        parquet_source(warehouse.data_path("truth", snapshot_year=year)),
        parquet_source(warehouse.data_path("labels", snapshot_year=year)),
        present,
    )
    with warehouse.connect() as connection:
        return connection.sql(sql).to_arrow_table().cast(OWN_PRESENT_SCHEMA)


def write_predictions(
    warehouse: Warehouse,
    asset: str,
    table: pa.Table,
    *,
    first_scored_turn: int,
    identity: Mapping[str, object],
    model: str,
    setting: Setting,
    own_present: tuple[ModelPresent, pa.Table] | None = None,
) -> None:
    """A predictions partition and the report ``scored_turns`` reads back; for a model with a
    knowledge cutoff, its present and the turns against it (``own_present``: the present and
    ``own_present_turns``) beside them (``OWN_PRESENT_FILE``)."""
    keys = {"model": model, "setting": setting.value}
    report: dict[str, object] = {"first_scored_turn": first_scored_turn, "backend": dict(identity)}
    if own_present is None:
        (warehouse.partition_dir(asset, **keys) / OWN_PRESENT_FILE).unlink(missing_ok=True)
    else:
        present, turns = own_present
        report["own_present"] = present.describe()
        with warehouse.writing(asset, OWN_PRESENT_FILE, **keys) as path:
            pq.write_table(turns, path, compression="zstd")
    warehouse.write_table(asset, table, **keys)
    warehouse.write_report(asset, report, **keys)


def model_presents(warehouse: Warehouse, asset: str = "predictions") -> dict[str, dict]:
    """The present of every model whose partitions of the predictions ``asset`` were answered
    against one (``ModelPresent.describe``), by model."""
    return {
        keys["model"]: found
        for keys in warehouse.partitions(asset)
        if (found := warehouse.read_report(asset, **keys).get("own_present")) is not None
    }


def scored_turns(
    warehouse: Warehouse,
    asset: str,
    model: str,
    setting: Setting | str,
    variant: str | None = None,
) -> pa.Table:
    """The scored predictions of one (model, setting) partition of the predictions ``asset``
    (of one ``variant`` if it has several) beside their turns: ``scored_turns_sql``'s rows,
    against the model's own present too where the partition was answered against one."""
    report = warehouse.read_report(asset, model=model, setting=setting)
    own = warehouse.partition_dir(asset, model=model, setting=setting) / OWN_PRESENT_FILE
    sql = scored_turns_sql(
        parquet_source(warehouse.data_path(asset, model=model, setting=setting)),
        parquet_source(warehouse.data_path("turns")),
        int(report["first_scored_turn"]),
        variant,
        parquet_source(own) if own.exists() else None,
    )
    with warehouse.connect() as connection:
        return connection.sql(sql).to_arrow_table()


def prediction_backend(warehouse: Warehouse, asset: str, model: str, setting: Setting) -> str:
    """The backend that answered one partition of the predictions ``asset``."""
    return warehouse.read_report(asset, model=model, setting=setting)["backend"]["backend"]


def copy_previous_mismatches(
    warehouse: Warehouse, asset: str, model: str, setting: Setting
) -> tuple[int, int]:
    """``copy_previous_sql`` of one partition of the predictions ``asset``."""
    file = warehouse.data_path(asset, model=model, setting=setting)
    sql = copy_previous_sql(
        parquet_source(file),
        parquet_source(warehouse.data_path("turns")),
        setting,
        by_variant="variant" in pq.read_schema(file).names,
    )
    with warehouse.connect() as connection:
        n, wrong = connection.execute(sql).fetchone()
    return int(n), int(wrong or 0)


def match_modes(warehouse: Warehouse, asset: str = "metrics") -> dict[tuple[str, str], str]:
    """The match mode of every (model, setting) partition of a metrics asset."""
    return {
        (p["model"], p["setting"]): warehouse.read_report(asset, **p)["match_mode"]
        for p in warehouse.partitions(asset)
    }


def all_metrics(warehouse: Warehouse, asset: str = "metrics") -> pa.Table | None:
    """Every partition of a metrics asset, or None while none is materialized."""
    view = warehouse.view_sql(asset)
    if view is None:
        return None
    with warehouse.connect() as connection:
        return connection.sql(f"SELECT * FROM ({view}) ORDER BY ALL").to_arrow_table()
