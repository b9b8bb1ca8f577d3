"""Anchored truth tables and present-day answers, in DuckDB SQL.

``truth`` has one row per (anchor, subject, property) where some value holds:

* ``value_qids``: every value valid within the anchor's scope (a day, or any
  day of a year), sorted by QID number. Any of them is a correct answer.
* ``canonical_value_qid``: the one shown as *the* answer, by a total order:
  preferred rank first, then the most recent start (no start counts as the
  oldest), then the lowest QID number. Deterministic whatever the input order.
* ``uncertain_value_qids``: values whose statement ended at an unknown date
  and may or may not hold in the scope (see ``intervals``); never gold.
* Timeless facts (no time qualifier) of a (subject, property) that has no
  dated statement are stored once, with ``anchor_scope = 'timeless'`` and no
  anchor. Where a (subject, property) mixes timeless and dated statements, the
  timeless values belong to the set at every anchor.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

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


def truth_sql(intervals: str, anchors: str) -> str:
    """The truth rows from an intervals relation and an anchors relation."""
    return f"""
    WITH pairs AS (
        SELECT subject_qid, pid, bool_and(is_timeless) AS all_timeless
        FROM {intervals} GROUP BY subject_qid, pid
    ), dated_hits AS (
        SELECT a.anchor, a.anchor_date, a.anchor_scope, i.subject_qid, i.pid, i.value_qid,
               i.rank, i.valid_from,
               NOT i.end_unknown OR (i.valid_from IS NOT NULL AND i.certain_until >= a.scope_start)
                   AS certain
        FROM {intervals} i JOIN {anchors} a
          ON coalesce(i.valid_from, '-infinity'::DATE) <= a.scope_end
         AND coalesce(i.valid_until, 'infinity'::DATE) >= a.scope_start
        WHERE NOT i.is_timeless
    ), mixed_timeless_hits AS (
        SELECT a.anchor, a.anchor_date, a.anchor_scope, i.subject_qid, i.pid, i.value_qid,
               i.rank, i.valid_from, TRUE AS certain
        FROM {intervals} i JOIN pairs p USING (subject_qid, pid) CROSS JOIN {anchors} a
        WHERE i.is_timeless AND NOT p.all_timeless
    ), timeless_hits AS (
        SELECT NULL::VARCHAR AS anchor, NULL::DATE AS anchor_date, 'timeless' AS anchor_scope,
               i.subject_qid, i.pid, i.value_qid, i.rank, i.valid_from, TRUE AS certain
        FROM {intervals} i JOIN pairs p USING (subject_qid, pid)
        WHERE p.all_timeless
    ), hits AS (
        SELECT * FROM dated_hits UNION ALL SELECT * FROM mixed_timeless_hits
        UNION ALL SELECT * FROM timeless_hits
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
    ORDER BY anchor NULLS FIRST, anchor_scope, subject_qid, pid
    """


def present_day_sql(truth: str, labels: str, anchor: str) -> str:
    """Per (subject, property): the values at ``anchor`` (or timeless), with English labels."""
    return f"""
    WITH current AS (
        SELECT * FROM {truth}
        WHERE (anchor = '{anchor}' OR anchor_scope = 'timeless') AND n_values > 0
    ), exploded AS (
        SELECT c.subject_qid, c.pid, c.anchor, c.anchor_scope, c.canonical_value_qid,
               unnest(c.value_qids) AS value_qid
        FROM current c
    )
    SELECT e.subject_qid, e.pid,
           list(e.value_qid ORDER BY CAST(substr(e.value_qid, 2) AS BIGINT)) AS value_qids,
           list(l.label ORDER BY CAST(substr(e.value_qid, 2) AS BIGINT)) AS value_labels,
           any_value(e.canonical_value_qid) AS canonical_value_qid,
           any_value(l.label) FILTER (WHERE e.value_qid = e.canonical_value_qid) AS canonical_label,
           any_value(e.anchor_scope) = 'timeless' AS is_timeless
    FROM exploded e LEFT JOIN {labels} l ON l.qid = e.value_qid
    GROUP BY e.subject_qid, e.pid
    ORDER BY e.subject_qid, e.pid
    """


def register_anchors(connection: duckdb.DuckDBPyConnection, anchors: pa.Table) -> str:
    connection.register("_anchors", anchors)
    return "_anchors"
