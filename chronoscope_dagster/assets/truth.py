"""Truth: validity intervals, anchored truth tables, present-day answers."""

import dagster as dg
from dagster_duckdb import DuckDBResource

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.partitions import snapshot_year_partitions
from chronoscope_dagster.resources import AnchorCalendar, WarehouseResource
from chronoscope_dagster.truth import intervals as intervals_module
from chronoscope_dagster.truth import table as truth_module
from chronoscope_dagster.truth.intervals import build_intervals
from chronoscope_dagster.truth.table import present_day_sql, write_truth
from chronoscope_dagster.warehouse import Warehouse, parquet_source, write_query


def _rules(doc: str | None) -> str:
    return " ".join(line.strip() for line in (doc or "").strip().splitlines())


@dg.asset(
    partitions_def=snapshot_year_partitions,
    deps=["claims"],
    group_name="truth",
    kinds={"duckdb", "parquet"},
    owners=["team:chronoscope"],
    pool="duckdb_writer",
    description=_rules(intervals_module.__doc__),
)
def fact_intervals(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, duckdb: DuckDBResource
) -> dg.MaterializeResult:
    year = context.partition_key
    store = warehouse.warehouse
    with store.connect() as connection:
        claims = parquet_source(store.data_path("claims", snapshot_year=year))
        counts = build_intervals(connection, claims, "fact_intervals")
        with store.writing("fact_intervals", snapshot_year=year) as path:
            rows = write_query(connection, "SELECT * FROM fact_intervals", path)
    store.write_report("fact_intervals", counts.__dict__, snapshot_year=year)
    warehouse.refresh_views(duckdb)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": rows,
            "statements": counts.statements,
            "kept": counts.kept,
            "dropped": dg.MetadataValue.json(counts.dropped),
            "by_time_source": dg.MetadataValue.md(
                markdown_table(["time source", "statements"], sorted(counts.by_source.items()))
            ),
            "by_end_precision": dg.MetadataValue.json(counts.by_end_precision),
        }
    )


@dg.asset(
    partitions_def=snapshot_year_partitions,
    deps=["fact_intervals"],
    group_name="truth",
    kinds={"duckdb", "parquet"},
    owners=["team:chronoscope"],
    pool="duckdb_writer",
    description=_rules(truth_module.__doc__)
    + " Anchors: the quarterly day anchors of the snapshot year and one whole-year anchor per "
    "year from 1950 (configurable through the anchor_calendar resource).",
)
def truth(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    anchor_calendar: AnchorCalendar,
    duckdb: DuckDBResource,
) -> dg.MaterializeResult:
    year = context.partition_key
    store = warehouse.warehouse
    anchors = anchor_calendar.anchors(int(year))
    with store.connect() as connection:
        intervals = parquet_source(store.data_path("fact_intervals", snapshot_year=year))
        with store.writing("truth", snapshot_year=year) as path:
            rows = write_truth(connection, intervals, anchors, path)
        summary = connection.execute(
            f"""SELECT anchor_scope, count(*) AS rows, sum(n_values) AS values,
                       count_if(n_values > 1) AS multi_valued,
                       count_if(len(uncertain_value_qids) > 0) AS with_uncertain
                FROM {parquet_source(store.data_path("truth", snapshot_year=year))}
                GROUP BY 1 ORDER BY 1"""
        ).fetchall()
    store.write_report("truth", {"anchors": [a.key for a in anchors]}, snapshot_year=year)
    warehouse.refresh_views(duckdb)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": rows,
            "anchors": len(anchors),
            "by_scope": dg.MetadataValue.md(
                markdown_table(
                    ["scope", "rows", "values", "multi-valued rows", "rows with uncertain values"],
                    summary,
                )
            ),
        }
    )


@dg.asset(
    deps=["truth", "labels"],
    group_name="truth",
    kinds={"duckdb", "parquet"},
    owners=["team:chronoscope"],
    pool="duckdb_writer",
    description="Per (subject, property): the values valid at the latest day anchor of the "
    "latest snapshot year (or its timeless values), with English labels and the canonical value. "
    "Drift is measured against these.",
)
def present_day(
    warehouse: WarehouseResource, anchor_calendar: AnchorCalendar, duckdb: DuckDBResource
) -> dg.MaterializeResult:
    store = warehouse.warehouse
    year = latest_snapshot(store)
    anchor = anchor_calendar.present_day_anchor(int(year))
    with store.connect() as connection:
        truth_rows = parquet_source(store.data_path("truth", snapshot_year=year))
        labels = parquet_source(store.data_path("labels", snapshot_year=year))
        with store.writing("present_day") as path:
            sql = present_day_sql(truth_rows, labels, anchor.key)
            rows = write_query(
                connection,
                f"SELECT *, {int(year)} AS snapshot_year, '{anchor.key}' AS anchor FROM ({sql})",
                path,
            )
        unlabelled = connection.execute(
            "SELECT count_if(canonical_label IS NULL) "
            f"FROM {parquet_source(store.data_path('present_day'))}"
        ).fetchone()[0]
    store.write_report("present_day", {"snapshot_year": year, "anchor": anchor.key})
    warehouse.refresh_views(duckdb)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": rows,
            "snapshot_year": year,
            "anchor": anchor.key,
            "canonical_without_label": unlabelled,
        }
    )


def latest_snapshot(store: Warehouse) -> str:
    """The latest snapshot year; its truth must be materialized."""
    year = SNAPSHOT_YEARS[-1]
    if not store.has("truth", snapshot_year=year):
        raise FileNotFoundError(f"truth for the latest snapshot year {year} is not materialized")
    return year
