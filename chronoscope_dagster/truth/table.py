"""Anchored truth tables and present-day answers, in DuckDB SQL.

``truth`` has one row per (anchor, subject, property) where some value holds:

* ``value_qids``: every value valid within the anchor's scope (a day, or any
  day of a year), sorted by QID number. Any of them is a correct answer.
* ``canonical_value_qid``: the one shown as *the* answer, by a total order:
  preferred rank first, then the most recent start (no start counts as the
  oldest), then the lowest QID number. Deterministic whatever the input order.
* ``uncertain_value_qids``: values whose statement ended at an unknown date,
  or started at an unknown one, and may or may not hold in the scope (see
  ``intervals``); never gold.
* Timeless facts (no time qualifier) of a (subject, property) that has no
  dated statement are stored once, with ``anchor_scope = 'timeless'`` and no
  anchor. Where a (subject, property) mixes timeless and dated statements, the
  timeless values belong to the set at every anchor.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import duckdb
import pyarrow as pa

from chronoscope_dagster.parquet import RowGroupWriter
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.truth.anchors import Anchor, anchors_table

RANK_SCORE = "CASE rank WHEN 'preferred' THEN 2 WHEN 'normal' THEN 1 ELSE 0 END"
QID_NUMBER = "CAST(substr(value_qid, 2) AS BIGINT)"

TRUTH_SCHEMA = pa.schema(
    [
        pa.field("anchor", pa.string()),
        pa.field("anchor_date", pa.date32()),
        pa.field("anchor_scope", pa.string(), nullable=False),
        pa.field("subject_qid", pa.string(), nullable=False),
        pa.field("pid", pa.string(), nullable=False),
        pa.field("value_qids", pa.list_(pa.string()), nullable=False),
        pa.field("canonical_value_qid", pa.string()),
        pa.field("uncertain_value_qids", pa.list_(pa.string()), nullable=False),
        pa.field("n_values", pa.int32(), nullable=False),
    ]
)


def _sorted_qids(condition: str) -> str:
    """The QIDs of the group meeting ``condition``, sorted by number (no ordered aggregate)."""
    return (
        f"list_transform(list_sort(coalesce(list({QID_NUMBER}) FILTER (WHERE {condition}), [])), "
        "lambda n: 'Q' || n)"
    )


def truth_sql(intervals: str, anchors: str | None) -> str:
    """Truth rows, ordered by anchor, subject and property.

    With ``anchors`` (a relation of anchors), the rows of those anchors; with None,
    the timeless rows. ``intervals`` holds the kept intervals and a column
    ``all_timeless`` telling whether its (subject, property) has no dated statement.
    """
    if anchors is None:
        hits = f"""
        SELECT NULL::VARCHAR AS anchor, NULL::DATE AS anchor_date, 'timeless' AS anchor_scope,
               subject_qid, pid, value_qid, rank, valid_from, TRUE AS certain
        FROM {intervals} WHERE all_timeless"""
    else:
        hits = f"""
        SELECT a.anchor, a.anchor_date, a.anchor_scope, i.subject_qid, i.pid, i.value_qid,
               i.rank, i.valid_from,
               NOT i.start_unknown AND (NOT i.end_unknown
                   OR (i.valid_from IS NOT NULL AND i.certain_until >= a.scope_start))
                   AS certain
        FROM {intervals} i JOIN {anchors} a
          ON coalesce(i.valid_from, i.possible_from, '-infinity'::DATE) <= a.scope_end
         AND coalesce(i.valid_until, 'infinity'::DATE) >= a.scope_start
        WHERE NOT i.is_timeless
        UNION ALL
        SELECT a.anchor, a.anchor_date, a.anchor_scope, i.subject_qid, i.pid, i.value_qid,
               i.rank, i.valid_from, TRUE AS certain
        FROM {intervals} i CROSS JOIN {anchors} a
        WHERE i.is_timeless AND NOT i.all_timeless"""
    return f"""
    WITH hits AS ({hits}
    ), per_value AS (
        SELECT anchor, subject_qid, pid, value_qid,
               any_value(anchor_date) AS anchor_date, any_value(anchor_scope) AS anchor_scope,
               bool_or(certain) AS certain,
               max({RANK_SCORE}) FILTER (WHERE certain) AS rank_score,
               max(valid_from) FILTER (WHERE certain) AS latest_start
        FROM hits
        GROUP BY anchor, subject_qid, pid, value_qid
    )
    SELECT anchor, any_value(anchor_date) AS anchor_date, any_value(anchor_scope) AS anchor_scope,
           subject_qid, pid,
           {_sorted_qids("certain")} AS value_qids,
           arg_max(value_qid, (rank_score, coalesce(latest_start, '-infinity'::DATE),
                               -{QID_NUMBER})) FILTER (WHERE certain) AS canonical_value_qid,
           {_sorted_qids("NOT certain")} AS uncertain_value_qids,
           CAST(count(*) FILTER (WHERE certain) AS INTEGER) AS n_values
    FROM per_value
    GROUP BY anchor, subject_qid, pid
    ORDER BY anchor, subject_qid, pid
    """


ROW_GROUP_ROWS = 1 << 16
TRUTH_ORDER = "anchor NULLS FIRST, subject_qid, pid"
"""The order of the truth table: timeless rows (no anchor) first, then by anchor key."""
BYTES_PER_ROW_ANCHOR = 128
"""Memory a truth query takes per interval row and anchor it joins, with a margin over
what was measured (4M statements at 8 anchors a query ran within 1.5 GB, not within 1 GB)."""


def write_truth(
    connection: duckdb.DuckDBPyConnection,
    intervals: str,
    anchors: list[Anchor],
    path: Path,
    anchors_per_query: int = 8,
    row_anchors_per_query: int | None = None,
) -> int:
    """Write the truth of ``intervals`` at ``anchors`` to one Parquet file; return its rows.

    The timeless rows come first, then the anchors in key order, a few per query, so memory
    holds a few anchors' rows at a time. Where interval rows times anchors exceed
    ``row_anchors_per_query`` (default: the connection's memory limit over
    ``BYTES_PER_ROW_ANCHOR``), each query takes one anchor and a range of subjects. The file
    is in one global order (timeless, then anchor, subject, property) and its bytes are the
    same whatever the split.
    """
    connection.execute(
        f"""CREATE OR REPLACE TEMP TABLE _truth_intervals AS
        SELECT i.*, bool_and(i.is_timeless) OVER (PARTITION BY i.subject_qid, i.pid)
                   AS all_timeless
        FROM {intervals} i
        ORDER BY i.subject_qid"""
    )
    budget = row_anchors_per_query or memory_limit_bytes(connection) // BYTES_PER_ROW_ANCHOR
    [(interval_rows,)] = connection.execute("SELECT count(*) FROM _truth_intervals").fetchall()
    ranges = ["TRUE"]
    if interval_rows * anchors_per_query > budget:
        anchors_per_query = 1
        ranges = subject_ranges(connection, "_truth_intervals", max(budget, 1))
    ordered = sorted(anchors, key=lambda anchor: anchor.key)
    batches = [
        ordered[i : i + anchors_per_query] for i in range(0, len(ordered), anchors_per_query)
    ]
    with RowGroupWriter(path, TRUTH_SCHEMA, ROW_GROUP_ROWS) as groups:
        for batch in [None, *batches]:
            if batch is not None:
                connection.register("_truth_anchors", anchors_table(batch))
            for condition in ranges:
                sql = truth_sql(
                    f"(SELECT * FROM _truth_intervals WHERE {condition})",
                    None if batch is None else "_truth_anchors",
                )
                for record_batch in connection.sql(sql).to_arrow_reader(ROW_GROUP_ROWS):
                    groups.write(record_batch.cast(TRUTH_SCHEMA))
    connection.execute("DROP TABLE _truth_intervals")
    return groups.rows


def subject_ranges(
    connection: duckdb.DuckDBPyConnection, relation: str, rows_per_range: int
) -> list[str]:
    """Conditions on ``subject_qid`` that split ``relation`` into consecutive ranges of
    subjects, in order, each of about ``rows_per_range`` rows at most (plus, at its end, the
    rows of one subject)."""
    starts = [
        start
        for (start,) in connection.execute(
            f"""WITH per_subject AS (
                SELECT subject_qid, count(*) AS n FROM {relation} GROUP BY subject_qid
            ), cumulative AS (
                SELECT subject_qid,
                       sum(n) OVER (ORDER BY subject_qid ROWS UNBOUNDED PRECEDING) - n AS before
                FROM per_subject
            )
            SELECT min(subject_qid) FROM cumulative
            GROUP BY before // {int(rows_per_range)} ORDER BY 1"""
        ).fetchall()
    ]
    bounds = [sql_string(start) for start in starts[1:]]
    if not bounds:
        return ["TRUE"]
    return [
        f"subject_qid < {bounds[0]}",
        *(f"subject_qid >= {lo} AND subject_qid < {hi}" for lo, hi in pairwise(bounds)),
        f"subject_qid >= {bounds[-1]}",
    ]


_MEMORY_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
                 "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}  # fmt: skip


def memory_limit_bytes(connection: duckdb.DuckDBPyConnection) -> int:
    """The connection's ``memory_limit`` (DuckDB shows it as, e.g., ``953.6 MiB``)."""
    [shown] = connection.execute("SELECT current_setting('memory_limit')").fetchone()
    amount, unit = str(shown).split()
    return int(float(amount) * _MEMORY_UNITS[unit])


BYTES_PER_PRESENT_ROW = 1_000
"""Memory a present-day query takes per truth row it reads, with a margin: on 2 threads with a
300MB limit, 750,000 rows of the 400k linked entities ran out of memory in one query and
400,000 passed (the 1,044,470 rows of 1M realistic entities also ran out in one query)."""


def _current_sql(truth: str, anchor: str) -> str:
    return f"""SELECT * FROM {truth}
        WHERE (anchor = {sql_string(anchor)} OR anchor_scope = 'timeless') AND n_values > 0"""


def present_day_queries(
    connection: duckdb.DuckDBPyConnection,
    truth: str,
    labels: str,
    anchor: str,
    rows_per_query: int | None = None,
) -> list[str]:
    """``present_day_sql`` split into queries over consecutive ranges of subjects, each of
    about ``rows_per_query`` truth rows (default: the connection's memory limit over
    ``BYTES_PER_PRESENT_ROW``): their rows, one query after another, are the whole table in
    its order."""
    budget = rows_per_query or memory_limit_bytes(connection) // BYTES_PER_PRESENT_ROW
    ranges = subject_ranges(connection, f"({_current_sql(truth, anchor)})", max(budget, 1))
    return [present_day_sql(truth, labels, anchor, subjects) for subjects in ranges]


def present_day_sql(truth: str, labels: str, anchor: str, subjects: str = "TRUE") -> str:
    """Per (subject, property) of the subjects that satisfy ``subjects`` (a condition on
    ``subject_qid``): the values at ``anchor`` (or timeless), with English labels.

    Each pair's values are gathered by a plain ``list`` aggregate of (QID number, QID, label)
    and then sorted, rather than by an ordered aggregate (which DuckDB cannot spill) or a
    window over each pair, which needed more memory (300,000 pairs: over 192MB)."""
    return f"""
    WITH current AS (
        SELECT * FROM ({_current_sql(truth, anchor)}) WHERE {subjects}
    ), exploded AS (
        SELECT c.subject_qid, c.pid, c.anchor_scope, c.canonical_value_qid,
               unnest(c.value_qids) AS value_qid
        FROM current c
    ), pairs AS (
        SELECT e.subject_qid, e.pid,
               list_sort(list(struct_pack(number := CAST(substr(e.value_qid, 2) AS BIGINT),
                                          qid := e.value_qid, label := l.label))) AS found,
               any_value(e.canonical_value_qid) AS canonical_value_qid,
               any_value(e.anchor_scope) = 'timeless' AS is_timeless
        FROM exploded e LEFT JOIN {labels} l ON l.qid = e.value_qid
        GROUP BY e.subject_qid, e.pid
    )
    SELECT subject_qid, pid,
           list_transform(found, lambda v: v.qid) AS value_qids,
           list_transform(found, lambda v: v.label) AS value_labels,
           canonical_value_qid,
           list_filter(found, lambda v: v.qid = canonical_value_qid)[1].label AS canonical_label,
           is_timeless
    FROM pairs
    ORDER BY subject_qid, pid
    """
