"""Truth: validity intervals, anchored truth tables, present-day answers."""

import os
from collections.abc import Iterator

import dagster as dg
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.partitions import snapshot_year_partitions
from chronoscope_dagster.resources import AnchorCalendar
from chronoscope_dagster.resources.warehouse import refresh_views
from chronoscope_dagster.sharding import Part, Shard, sharded_asset
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.truth import intervals as intervals_module
from chronoscope_dagster.truth import table as truth_module
from chronoscope_dagster.truth.intervals import INTERVAL_ORDER, IntervalCounts, build_intervals
from chronoscope_dagster.truth.table import (
    TRUTH_ORDER,
    TRUTH_SCHEMA,
    present_day_queries,
    write_truth,
)
from chronoscope_dagster.warehouse import Warehouse, parquet_source, write_query
from chronoscope_dagster.wikidata.properties import default_catalog


def _rules(doc: str | None) -> str:
    return " ".join(line.strip() for line in (doc or "").strip().splitlines())


class SubjectShardConfig(dg.Config):
    shards: int = Field(
        default=1,
        ge=1,
        description="Steps the stage is split into, by a hash of the subject (a subject's "
        "facts decide only its own rows), merged in the table's order; the output is the same "
        "for any number. 1 runs it as one DuckDB step.",
    )


def plan_subject_shards(context: dg.OpExecutionContext, config: SubjectShardConfig) -> list[None]:
    """``shards`` steps, each over the claims of the subjects of one value of a hash of the
    subject."""
    return [None] * config.shards


def plan_truth_shards(context: dg.OpExecutionContext, config: SubjectShardConfig) -> list[None]:
    """``shards`` steps, each over the intervals of the subjects of one value of a hash of the
    subject."""
    return [None] * config.shards


def _rows_of(shard: Shard[None], source: str) -> str:
    """SQL for the rows of ``source`` (a relation with ``subject_qid``) in ``shard``."""
    if shard.count == 1:
        return source
    return f"(SELECT * FROM {source} WHERE hash(subject_qid) % {shard.count} = {shard.index})"


def _merged_parts(
    warehouse: Warehouse, asset: str, year: str, parts: list[Part], order: str, schema=None
) -> int:
    """The parts of ``asset``'s shards (in shard order) as its file, in ``order``; its rows.
    One part is renamed into place (the same bytes)."""
    files = [
        warehouse.data_path(warehouse.shard_asset(asset), snapshot_year=year, shard=part.shard.key)
        for part in parts
    ]
    with warehouse.writing(asset, snapshot_year=year) as path:
        if len(files) == 1:
            os.replace(files[0], path)
            rows = pq.ParquetFile(path).metadata.num_rows
        else:
            sources = ", ".join(sql_string(str(file)) for file in files)
            with warehouse.connect() as connection:
                rows = write_query(
                    connection,
                    f"SELECT * FROM read_parquet([{sources}], hive_partitioning = false) "
                    f"ORDER BY {order}",
                    path,
                    schema,
                )
    warehouse.drop_shards(asset, snapshot_year=year)
    return rows


def fact_intervals_shard(
    context: dg.OpExecutionContext, shard: Shard[None], warehouse: Warehouse
) -> IntervalCounts:
    year = context.partition_key
    with warehouse.connect() as connection:
        claims = parquet_source(warehouse.data_path("claims", snapshot_year=year))
        counts = build_intervals(
            connection,
            _rows_of(shard, claims),
            "fact_intervals",
            lifespans=parquet_source(warehouse.data_path("lifespans", snapshot_year=year)),
            functional=default_catalog().functional_pids,
        )
        parts = warehouse.shard_asset("fact_intervals")
        with warehouse.writing(parts, snapshot_year=year, shard=shard.key) as path:
            write_query(connection, "SELECT * FROM fact_intervals", path)
    return counts


def merge_fact_intervals(
    context: dg.OpExecutionContext,
    parts: list[Part[None, IntervalCounts]],
    warehouse: Warehouse,
    duckdb: DuckDBResource,
) -> Iterator[dg.Output]:
    year = context.partition_key
    rows = _merged_parts(warehouse, "fact_intervals", year, parts, INTERVAL_ORDER)
    counts = IntervalCounts.combined([part.result for part in parts])
    warehouse.write_report("fact_intervals", counts.__dict__, snapshot_year=year)
    refresh_views(warehouse, duckdb)
    yield dg.Output(
        None,
        data_version=dg.DataVersion(warehouse.data_version("fact_intervals", snapshot_year=year)),
        metadata={
            "dagster/row_count": rows,
            "statements": counts.statements,
            "kept": counts.kept,
            "dropped": dg.MetadataValue.json(counts.dropped),
            "by_time_source": dg.MetadataValue.md(
                markdown_table(["time source", "statements"], sorted(counts.by_source.items()))
            ),
            "by_end_precision": dg.MetadataValue.json(counts.by_end_precision),
            "by_start_source": dg.MetadataValue.json(counts.by_start_source),
            "shards": len(parts),
        },
    )


fact_intervals = sharded_asset(
    "fact_intervals",
    plan=plan_subject_shards,
    step=fact_intervals_shard,
    merge=merge_fact_intervals,
    config=SubjectShardConfig,
    deps=["claims", "lifespans"],
    merge_pool="duckdb_writer",
    partitions_def=snapshot_year_partitions,
    group_name="truth",
    kinds={"duckdb", "parquet"},
    description=_rules(intervals_module.__doc__),
)


def truth_shard(
    context: dg.OpExecutionContext,
    shard: Shard[None],
    warehouse: Warehouse,
    anchor_calendar: AnchorCalendar,
) -> None:
    year = context.partition_key
    anchors = anchor_calendar.anchors(int(year))
    with warehouse.connect() as connection:
        intervals = parquet_source(warehouse.data_path("fact_intervals", snapshot_year=year))
        parts = warehouse.shard_asset("truth")
        with warehouse.writing(parts, snapshot_year=year, shard=shard.key) as path:
            write_truth(connection, _rows_of(shard, intervals), anchors, path)


def merge_truth(
    context: dg.OpExecutionContext,
    parts: list[Part[None, None]],
    warehouse: Warehouse,
    anchor_calendar: AnchorCalendar,
    duckdb: DuckDBResource,
) -> Iterator[dg.Output]:
    year = context.partition_key
    anchors = anchor_calendar.anchors(int(year))
    rows = _merged_parts(warehouse, "truth", year, parts, TRUTH_ORDER, TRUTH_SCHEMA)
    with warehouse.connect() as connection:
        summary = connection.execute(
            f"""SELECT anchor_scope, count(*) AS rows, sum(n_values) AS values,
                       count_if(n_values > 1) AS multi_valued,
                       count_if(len(uncertain_value_qids) > 0) AS with_uncertain
                FROM {parquet_source(warehouse.data_path("truth", snapshot_year=year))}
                GROUP BY 1 ORDER BY 1"""
        ).fetchall()
    warehouse.write_report("truth", {"anchors": [a.key for a in anchors]}, snapshot_year=year)
    refresh_views(warehouse, duckdb)
    yield dg.Output(
        None,
        data_version=dg.DataVersion(warehouse.data_version("truth", snapshot_year=year)),
        metadata={
            "dagster/row_count": rows,
            "anchors": len(anchors),
            "by_scope": dg.MetadataValue.md(
                markdown_table(
                    ["scope", "rows", "values", "multi-valued rows", "rows with uncertain values"],
                    summary,
                )
            ),
            "shards": len(parts),
        },
    )


truth = sharded_asset(
    "truth",
    plan=plan_truth_shards,
    step=truth_shard,
    merge=merge_truth,
    config=SubjectShardConfig,
    deps=["fact_intervals"],
    merge_pool="duckdb_writer",
    partitions_def=snapshot_year_partitions,
    group_name="truth",
    kinds={"duckdb", "parquet"},
    description=_rules(truth_module.__doc__)
    + " Anchors: the quarterly day anchors of the snapshot year and one whole-year anchor per "
    "year from 1950 (configurable through the anchor_calendar resource).",
)


@dg.asset(
    deps=["truth", "labels"],
    group_name="truth",
    kinds={"duckdb", "parquet"},
    pool="duckdb_writer",
    description="Per (subject, property): the values valid at the latest day anchor of the "
    "latest snapshot year (or its timeless values), with English labels and the canonical value. "
    "Drift is measured against these.",
)
def present_day(
    warehouse: dg.ResourceParam[Warehouse], anchor_calendar: AnchorCalendar, duckdb: DuckDBResource
) -> dg.MaterializeResult:
    year = latest_snapshot(warehouse)
    anchor = anchor_calendar.present_day_anchor(int(year))
    with warehouse.connect() as connection:
        truth_rows = parquet_source(warehouse.data_path("truth", snapshot_year=year))
        labels = parquet_source(warehouse.data_path("labels", snapshot_year=year))
        with warehouse.writing("present_day") as path:
            queries = present_day_queries(connection, truth_rows, labels, anchor.key)
            rows = write_query(
                connection,
                [
                    f"SELECT *, {int(year)} AS snapshot_year, '{anchor.key}' AS anchor FROM ({sql})"
                    for sql in queries
                ],
                path,
            )
        unlabelled = connection.execute(
            "SELECT count_if(canonical_label IS NULL) "
            f"FROM {parquet_source(warehouse.data_path('present_day'))}"
        ).fetchone()[0]
    warehouse.write_report("present_day", {"snapshot_year": year, "anchor": anchor.key})
    refresh_views(warehouse, duckdb)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("present_day")),
        metadata={
            "dagster/row_count": rows,
            "snapshot_year": year,
            "anchor": anchor.key,
            "canonical_without_label": unlabelled,
        },
    )


def latest_snapshot(warehouse: Warehouse) -> str:
    """The latest snapshot year; its truth must be materialized."""
    year = SNAPSHOT_YEARS[-1]
    if not warehouse.has("truth", snapshot_year=year):
        raise FileNotFoundError(f"truth for the latest snapshot year {year} is not materialized")
    return year
