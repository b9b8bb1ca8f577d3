"""Checks of the truth stage: intervals, anchored truth tables, present-day answers."""

import filecmp
import tempfile
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from chronoscope_dagster.checks.expectations import (
    GE_SAMPLE_ROWS,
    suite_check_result,
    suite_per_snapshot,
)
from chronoscope_dagster.checks.partitions import checked_partitions
from chronoscope_dagster.resources import AnchorCalendar
from chronoscope_dagster.sql import sql_list
from chronoscope_dagster.truth.table import write_truth
from chronoscope_dagster.warehouse import Warehouse, parquet_source


@dg.asset_check(
    asset="fact_intervals",
    blocking=True,
    description="Every kept statement of claims is an interval or a counted drop; no interval "
    "ends before it starts; timeless rows carry no bound.",
)
def fact_intervals_reconcile(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "fact_intervals")]
    problems = []
    for year in years:
        report = warehouse.read_report("fact_intervals", snapshot_year=year)
        claims_rows = pq.ParquetFile(
            warehouse.data_path("claims", snapshot_year=year)
        ).metadata.num_rows
        rows = pq.ParquetFile(
            warehouse.data_path("fact_intervals", snapshot_year=year)
        ).metadata.num_rows
        if report["statements"] != claims_rows:
            problems.append(
                f"{year}: {report['statements']} statements read, claims has {claims_rows}"
            )
        if report["kept"] + sum(report["dropped"].values()) != report["statements"]:
            problems.append(f"{year}: kept + dropped != statements")
        if rows != report["kept"]:
            problems.append(f"{year}: {rows} rows != {report['kept']} kept")
    with warehouse.connect(views=True) as connection:
        inverted, bounded_timeless = connection.execute(
            f"""SELECT count_if(valid_until < valid_from),
                       count_if(is_timeless AND (valid_from IS NOT NULL OR valid_until IS NOT NULL))
                FROM fact_intervals WHERE snapshot_year IN ({sql_list(years, numeric=True)})"""
        ).fetchone()
    if inverted:
        problems.append(f"{inverted} intervals end before they start")
    if bounded_timeless:
        problems.append(f"{bounded_timeless} timeless rows have a bound")
    return dg.AssetCheckResult(
        passed=not problems and bool(years),
        metadata={"partitions": years, "problems": dg.MetadataValue.json(problems)},
    )


@dg.asset_check(
    asset="truth",
    blocking=True,
    description="Recomputed independently from fact_intervals: every gold value of every truth "
    "row holds within the row's anchor scope (the anchor lies inside the value's interval), and "
    "every value that holds there is in the row.",
)
def truth_values_hold_at_anchor(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = sql_list(
        [p["snapshot_year"] for p in checked_partitions(context, warehouse, "truth")], numeric=True
    )
    holds = """
        (t.anchor_scope = 'timeless' AND i.is_timeless)
        OR (t.anchor_scope <> 'timeless' AND (i.is_timeless OR (
            coalesce(i.valid_from, '-infinity'::DATE) <= t.scope_end
            AND coalesce(i.valid_until, 'infinity'::DATE) >= t.scope_start
            AND (NOT i.end_unknown OR i.certain_until >= t.scope_start)
            AND NOT i.start_unknown)))
    """
    with warehouse.connect(views=True) as connection:
        connection.execute(
            f"""CREATE TEMP TABLE scoped AS
            SELECT snapshot_year, anchor, anchor_scope, subject_qid, pid, value_qids,
                   anchor_date AS scope_start,
                   CASE anchor_scope WHEN 'year' THEN make_date(year(anchor_date), 12, 31)
                        ELSE anchor_date END AS scope_end
            FROM truth WHERE snapshot_year IN ({years})"""
        )
        unsupported = connection.execute(
            f"""SELECT count(*) FROM (
                SELECT snapshot_year, anchor, anchor_scope, subject_qid, pid, scope_start,
                       scope_end, unnest(value_qids) AS value_qid FROM scoped) t
            WHERE NOT EXISTS (
                SELECT 1 FROM fact_intervals i
                WHERE i.snapshot_year = t.snapshot_year AND i.subject_qid = t.subject_qid
                  AND i.pid = t.pid AND i.value_qid = t.value_qid AND ({holds}))"""
        ).fetchone()[0]
        missing = connection.execute(
            f"""SELECT count(*) FROM (
                SELECT DISTINCT t.snapshot_year, t.anchor, t.subject_qid, t.pid, i.value_qid,
                       t.value_qids
                FROM scoped t JOIN fact_intervals i
                  ON i.snapshot_year = t.snapshot_year AND i.subject_qid = t.subject_qid
                 AND i.pid = t.pid AND ({holds}))
            WHERE NOT list_contains(value_qids, value_qid)"""
        ).fetchone()[0]
        values = connection.execute("SELECT sum(len(value_qids)) FROM scoped").fetchone()[0] or 0
    return dg.AssetCheckResult(
        passed=unsupported == 0 and missing == 0 and values > 0,
        metadata={
            "values_checked": int(values),
            "values_not_valid_at_anchor": unsupported,
            "valid_values_missing": missing,
        },
    )


@dg.asset_check(
    asset="truth",
    blocking=True,
    description="(snapshot_year, anchor, subject, property) is unique and the canonical value "
    "belongs to the row's value set (it is absent only when the set is empty).",
)
def truth_keys_and_canonical(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = sql_list(
        [p["snapshot_year"] for p in checked_partitions(context, warehouse, "truth")], numeric=True
    )
    with warehouse.connect(views=True) as connection:
        rows, duplicates, outside, missing_canonical = connection.execute(
            f"""SELECT count(*),
                   count(*) - count(DISTINCT (snapshot_year, anchor, anchor_scope, subject_qid, pid)),
                   count_if(canonical_value_qid IS NOT NULL
                            AND NOT list_contains(value_qids, canonical_value_qid)),
                   count_if((canonical_value_qid IS NULL) <> (len(value_qids) = 0))
                FROM truth WHERE snapshot_year IN ({years})"""
        ).fetchone()
    return dg.AssetCheckResult(
        passed=rows > 0 and duplicates == 0 and outside == 0 and missing_canonical == 0,
        metadata={
            "rows": rows,
            "duplicate_keys": duplicates,
            "canonical_outside_set": outside,
            "canonical_missing": missing_canonical,
        },
    )


@dg.asset_check(
    asset="truth",
    blocking=True,
    description="Recomputing truth from the same intervals and anchors gives a byte-identical file.",
)
def truth_deterministic(
    context: dg.AssetCheckExecutionContext,
    warehouse: dg.ResourceParam[Warehouse],
    anchor_calendar: AnchorCalendar,
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "truth")]
    differing = []
    with tempfile.TemporaryDirectory() as scratch, warehouse.connect() as connection:
        for year in years:
            intervals = parquet_source(warehouse.data_path("fact_intervals", snapshot_year=year))
            again = Path(scratch) / f"truth-{year}.parquet"
            write_truth(connection, intervals, anchor_calendar.anchors(int(year)), again)
            if not filecmp.cmp(
                again, warehouse.data_path("truth", snapshot_year=year), shallow=False
            ):
                differing.append(year)
    return dg.AssetCheckResult(
        passed=not differing and bool(years),
        metadata={"partitions": years, "differing": differing},
    )


TRUTH_EXPECTATIONS = {
    "subject_qid_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="subject_qid", regex="^Q[1-9][0-9]*$"
    ),
    "pid_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="pid", regex="^P[1-9][0-9]*$"
    ),
    "scope_in_set": lambda gxe: gxe.ExpectColumnValuesToBeInSet(
        column="anchor_scope", value_set=["day", "year", "timeless"]
    ),
    "canonical_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="canonical_value_qid", regex="^Q[1-9][0-9]*$"
    ),
    "n_values_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="n_values", min_value=0, max_value=500
    ),
    "anchor_date_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="anchor_year", min_value=1000, max_value=2100
    ),
    "has_rows": lambda gxe: gxe.ExpectTableRowCountToBeBetween(min_value=1),
}


@dg.asset_check(
    asset="truth",
    blocking=True,
    description="Great-expectations suite on truth (formats, value sets, ranges), on a seeded "
    f"sample of at most {GE_SAMPLE_ROWS:,} rows per snapshot year.",
)
def truth_expectations(
    context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = [p["snapshot_year"] for p in checked_partitions(context, warehouse, "truth")]
    columns = ["subject_qid", "pid", "anchor_scope", "canonical_value_qid", "n_values",
               "year(anchor_date) AS anchor_year"]  # fmt: skip
    with warehouse.connect(views=True) as connection:
        rows, failures = suite_per_snapshot(connection, "truth", columns, years, TRUTH_EXPECTATIONS)
    return suite_check_result(years, rows, failures)


@dg.asset_check(
    asset="present_day",
    blocking=True,
    description="One row per (subject, property), each with a non-empty value set that holds "
    "the canonical value and is the truth of the latest day anchor (or timeless).",
)
def present_day_consistent(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    report = warehouse.read_report("present_day")
    with warehouse.connect(views=True) as connection:
        rows, duplicates, bad_canonical, not_in_truth = connection.execute(
            f"""SELECT count(*),
                   count(*) - count(DISTINCT (subject_qid, pid)),
                   count_if(NOT list_contains(value_qids, canonical_value_qid)),
                   count_if(NOT EXISTS (
                       SELECT 1 FROM truth t
                       WHERE t.snapshot_year = {int(report["snapshot_year"])}
                         AND (t.anchor = '{report["anchor"]}' OR t.anchor_scope = 'timeless')
                         AND t.subject_qid = p.subject_qid AND t.pid = p.pid
                         AND t.value_qids = p.value_qids))
                FROM present_day p"""
        ).fetchone()
    return dg.AssetCheckResult(
        passed=rows > 0 and duplicates == 0 and bad_canonical == 0 and not_in_truth == 0,
        metadata={
            "rows": rows,
            "duplicate_keys": duplicates,
            "canonical_outside_set": bad_canonical,
            "rows_not_in_truth": not_in_truth,
            "anchor": report["anchor"],
        },
    )
