"""Checks of the ingest stage: claims and labels.

Each check validates the partition its run materialized, or every materialized
partition when it runs on its own (the CI check job).
"""

import dagster as dg
import pyarrow.parquet as pq

from chronoscope_dagster.checks.expectations import (
    GE_SAMPLE_ROWS,
    suite_check_result,
    suite_per_snapshot,
)
from chronoscope_dagster.checks.partitions import checked_partitions
from chronoscope_dagster.sql import sql_list
from chronoscope_dagster.warehouse import Warehouse
from chronoscope_dagster.wikidata.properties import default_catalog
from chronoscope_dagster.wikidata.reader import ExtractionReport

QID_PATTERN = "^Q[1-9][0-9]*$"


@dg.asset_check(
    asset="claims",
    blocking=True,
    description="Every line of the dump is accounted for (lines = structural + entities + "
    "rejected; entities = items + skipped; statements seen = kept + dropped), and the Parquet "
    "files hold exactly the kept statements and labelled items.",
)
def claims_reconcile(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    problems: list[str] = []
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "claims")]
    for year in years:
        report = warehouse.read_report("claims", snapshot_year=year)
        counts = report["counts"]
        extraction = ExtractionReport(counts=counts)
        problems += [f"{year}: {error}" for error in extraction.reconciliation_errors]
        claims_rows = pq.ParquetFile(
            warehouse.data_path("claims", snapshot_year=year)
        ).metadata.num_rows
        if claims_rows != counts.get("statements_kept", 0):
            problems.append(
                f"{year}: {claims_rows} claim rows != {counts.get('statements_kept', 0)} kept"
            )
        labelled = counts.get("items", 0) - counts.get("items_without_english_label", 0)
        label_rows = pq.ParquetFile(
            warehouse.data_path("labels", snapshot_year=year)
        ).metadata.num_rows
        if label_rows != labelled:
            problems.append(f"{year}: {label_rows} label rows != {labelled} labelled items")
    return dg.AssetCheckResult(
        passed=not problems and bool(years),
        metadata={"partitions": years, "problems": dg.MetadataValue.json(problems[:50])},
    )


@dg.asset_check(
    asset="claims",
    blocking=True,
    description="No deprecated statement, malformed QID, unknown property or malformed date is "
    "kept: dates and precisions come together, precisions lie in 0-14, an unknown end has no date.",
)
def claims_well_formed(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "claims")]
    pids = sql_list(default_catalog().pids)
    date_checks = " + ".join(
        f"count_if(({name}_date IS NULL) <> ({name}_precision IS NULL)) "
        f"+ count_if({name}_precision NOT BETWEEN 0 AND 14) "
        f"+ count_if(({name}_date IS NULL) <> ({name}_calendar IS NULL))"
        for name in ("start", "end", "point_in_time")
    )
    with warehouse.connect(views=True) as connection:
        row = connection.execute(
            f"""
            SELECT
              count(*) AS rows,
              count_if(rank NOT IN ('preferred', 'normal')) AS bad_rank,
              count_if(NOT regexp_full_match(subject_qid, '{QID_PATTERN}')) AS bad_subject,
              count_if(NOT regexp_full_match(value_qid, '{QID_PATTERN}')) AS bad_value,
              count_if(pid NOT IN ({pids})) AS unknown_pid,
              {date_checks} AS bad_dates,
              count_if(end_unknown AND end_date IS NOT NULL) AS unknown_end_with_date
            FROM claims WHERE snapshot_year IN ({sql_list(years, numeric=True)})
            """
        ).fetchone()
    names = ["rows", "bad_rank", "bad_subject", "bad_value", "unknown_pid", "bad_dates",
             "unknown_end_with_date"]  # fmt: skip
    counts = dict(zip(names, (int(v or 0) for v in row), strict=True))
    violations = sum(v for k, v in counts.items() if k != "rows")
    return dg.AssetCheckResult(
        passed=violations == 0 and counts["rows"] > 0,
        metadata={"partitions": years, **counts},
    )


CLAIMS_EXPECTATIONS = {
    "subject_qid_not_null": lambda gxe: gxe.ExpectColumnValuesToNotBeNull(column="subject_qid"),
    "value_qid_not_null": lambda gxe: gxe.ExpectColumnValuesToNotBeNull(column="value_qid"),
    "subject_qid_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="subject_qid", regex=QID_PATTERN
    ),
    "value_qid_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="value_qid", regex=QID_PATTERN
    ),
    "pid_in_property_list": lambda gxe: gxe.ExpectColumnValuesToBeInSet(
        column="pid", value_set=list(default_catalog().pids)
    ),
    "rank_in_set": lambda gxe: gxe.ExpectColumnValuesToBeInSet(
        column="rank", value_set=["preferred", "normal"]
    ),
    "start_precision_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="start_precision", min_value=0, max_value=14
    ),
    "end_precision_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="end_precision", min_value=0, max_value=14
    ),
    "calendar_in_set": lambda gxe: gxe.ExpectColumnValuesToBeInSet(
        column="start_calendar", value_set=["gregorian", "julian"], mostly=0.999
    ),
    "end_unknown_not_null": lambda gxe: gxe.ExpectColumnValuesToNotBeNull(column="end_unknown"),
    "has_rows": lambda gxe: gxe.ExpectTableRowCountToBeBetween(min_value=1),
}


@dg.asset_check(
    asset="claims",
    blocking=True,
    description="Great-expectations suite on claims (nulls, formats, value sets, ranges), on a "
    f"seeded sample of at most {GE_SAMPLE_ROWS:,} rows per snapshot year.",
)
def claims_expectations(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "claims")]
    columns = ["subject_qid", "value_qid", "pid", "rank", "start_precision", "end_precision",
               "start_calendar", "end_unknown"]  # fmt: skip
    with warehouse.connect(views=True) as connection:
        rows, failures = suite_per_snapshot(
            connection, "claims", columns, years, CLAIMS_EXPECTATIONS
        )
    return suite_check_result(years, rows, failures)


@dg.asset_check(
    asset="labels",
    blocking=True,
    description="One row per item and snapshot year, each with a well-formed QID and a "
    "non-empty label or alias.",
)
def labels_well_formed(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "labels")]
    with warehouse.connect(views=True) as connection:
        rows, duplicates, bad_qid, empty = connection.execute(
            f"""
            SELECT count(*), count(*) - count(DISTINCT (snapshot_year, qid)),
                   count_if(NOT regexp_full_match(qid, '{QID_PATTERN}')),
                   count_if(coalesce(label, '') = '' AND len(coalesce(aliases, [])) = 0)
            FROM labels WHERE snapshot_year IN ({sql_list(years, numeric=True)})
            """
        ).fetchone()
    return dg.AssetCheckResult(
        passed=rows > 0 and duplicates == 0 and bad_qid == 0 and empty == 0,
        metadata={"partitions": years, "rows": rows, "duplicate_qids": duplicates,
                  "malformed_qids": bad_qid, "empty_labels": empty},
    )  # fmt: skip


@dg.asset_check(
    asset="lifespans",
    blocking=True,
    description="As many rows as the extraction kept, every one a well-formed QID with a "
    "lifespan property whose bound is the property list's, and a precision in 0-14.",
)
def lifespans_well_formed(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "lifespans")]
    bounds = " OR ".join(
        f"(pid = '{pid}' AND bound = '{bound}')"
        for pid, bound in default_catalog().lifespan_properties.items()
    )
    kept = sum(
        warehouse.read_report("claims", snapshot_year=year)["counts"].get("lifespan_kept", 0)
        for year in years
    )
    with warehouse.connect(views=True) as connection:
        # count_if is NULL over no rows: a dump without lifespan statements is a legitimate subset
        rows, bad_qid, bad_bound, bad_precision = connection.execute(
            f"""
            SELECT count(*), coalesce(count_if(NOT regexp_full_match(qid, '{QID_PATTERN}')), 0),
                   coalesce(count_if(NOT ({bounds})), 0),
                   coalesce(count_if(precision NOT BETWEEN 0 AND 14), 0)
            FROM lifespans WHERE snapshot_year IN ({sql_list(years, numeric=True)})
            """
        ).fetchone()
    return dg.AssetCheckResult(
        passed=bool(years) and rows == kept and bad_qid == bad_bound == bad_precision == 0,
        metadata={"partitions": years, "rows": rows, "kept_by_extraction": kept,
                  "malformed_qids": bad_qid, "wrong_bounds": bad_bound,
                  "precisions_out_of_range": bad_precision},
    )  # fmt: skip
