"""Validity intervals of statements, in days, from their time qualifiers.

Rules (``valid_from`` and ``valid_until`` are both days of validity; a missing
bound is open):

* A start (P580) begins on the first day of its precision's span: a year-precision
  start on 1 January, a month-precision start on the 1st. Decade and coarser
  precisions span the calendar decade, century... containing the year (the
  1990s = 1990-1999).
* A day-precision end (P582) is exclusive: Wikidata's end time is the moment a
  statement stops being true, so the end day is the first day it no longer
  holds and ``valid_until`` is the day before. On a handover day the successor
  alone holds, and a term ending on 1 January of Y is not "in Y". One
  exception: an end equal to a day-precision start is a one-day term (an
  acting head for a single day) and holds on that day.
* A coarser end covers its whole span: a year-precision end runs to
  31 December, a month-precision end to the month's last day (the statement
  ended at some unrecorded point of that span; the truth stage counts it in).
* A statement with neither start nor end but a point in time (P585) is valid
  for the whole span of that point (a year-precision point covers the year). A
  point is ignored when a start or an end is present.
* A statement with an end but no start holds from a known lower bound only
  (``start_source``): for a single-holder property (``functional``), the day
  after the latest end of another statement of the same subject and property
  that ended before it (``predecessor``); or, for any property, the day after
  the end of the statement of the value its ``replaces`` (P1365) or
  ``follows`` (P155) qualifier names (``replaces``); the later of the two.
  Without either its start is unknown (``start_unknown``): it may have held at
  any time from ``possible_from`` (the later of the subject's and the value's
  recorded beginnings, birth P569 or inception P571, in ``lifespans``; open
  without them) to its end, so the truth stage lists its value as *uncertain*
  there, never as gold, and it decides no scope of that period. A recorded
  birth is a bound, not a start: nobody joins a party on the day they are
  born.
* A statement with no time qualifier at all is timeless: valid at every anchor.
* An end given as "unknown value" (``end_unknown``): the statement ended at a
  date nobody recorded. It is certainly valid on its start's span and of
  unknown validity after it, so the truth stage lists its value as *uncertain*
  from the day after that span on, never as gold. With no start either, the
  value is uncertain everywhere.
* Dropped and counted: self-loops (value = subject), deprecated statements
  (none reach here; counted for safety), and statements whose end precedes
  their start (``end_before_start``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from chronoscope_dagster.sql import sql_string

INTERVAL_DROPS = ("self_loop", "deprecated", "end_before_start")


def span_start_sql(column: str) -> str:
    """The first day of ``{column}_date`` at ``{column}_precision``."""
    date, precision = f"{column}_date", f"{column}_precision"
    return f"""CASE
        WHEN {date} IS NULL THEN NULL
        WHEN {precision} >= 9 THEN {date}
        ELSE make_date(
            CAST(floor(year({date}) / pow(10, 9 - {precision})) * pow(10, 9 - {precision}) AS BIGINT),
            1, 1)
    END"""


def span_end_sql(column: str) -> str:
    """The last day of ``{column}_date`` at ``{column}_precision``."""
    date, precision = f"{column}_date", f"{column}_precision"
    return f"""CASE
        WHEN {date} IS NULL THEN NULL
        WHEN {precision} >= 11 THEN {date}
        WHEN {precision} = 10 THEN last_day({date})
        WHEN {precision} = 9 THEN make_date(year({date}), 12, 31)
        ELSE make_date(
            CAST(floor(year({date}) / pow(10, 9 - {precision})) * pow(10, 9 - {precision})
                 + pow(10, 9 - {precision}) - 1 AS BIGINT),
            12, 31)
    END"""


def _exclusive_end() -> str:
    """The last valid day of a statement's end (see the module's rules)."""
    return f"""CASE
        WHEN end_date IS NULL THEN NULL
        WHEN end_precision >= 11 AND start_precision >= 11 AND end_date = start_date THEN end_date
        WHEN end_precision >= 11 THEN CAST(end_date - INTERVAL 1 DAY AS DATE)
        ELSE {span_end_sql("end")}
    END"""


END_PRECISIONS = ("day", "month", "year", "coarser", "none")
START_SOURCES = ("start", "predecessor", "replaces", "unknown")


def _end_precision_name() -> str:
    return """CASE WHEN end_date IS NULL THEN 'none' WHEN end_precision >= 11 THEN 'day'
        WHEN end_precision = 10 THEN 'month' WHEN end_precision = 9 THEN 'year'
        ELSE 'coarser' END"""


def _beginnings(lifespans: str | None) -> str:
    """Each entity's earliest recorded beginning (the first day of its earliest start)."""
    if lifespans is None:
        return "SELECT NULL::VARCHAR AS qid, NULL::DATE AS began WHERE false"
    return f"""SELECT qid, min({span_start_sql("start")}) AS began
        FROM (SELECT qid, date AS start_date, precision AS start_precision FROM {lifespans}
              WHERE bound = 'start')
        GROUP BY qid"""


def intervals_sql(claims: str, lifespans: str | None = None, functional: Iterable[str] = ()) -> str:
    """Every statement of ``claims`` (a relation) with its interval and fate; ``lifespans``
    (a relation of ``lifespans`` rows) bounds the statements whose start is unknown, and
    ``functional`` names the single-holder properties.

    Columns: subject_qid, pid, value_qid, rank, statement_id, valid_from,
    valid_until, certain_until, is_timeless, end_unknown, start_unknown, possible_from,
    start_source, time_source, end_precision, drop_reason (``end_precision`` names the end's
    precision: day, month, year, coarser or none; ``start_source``: start, predecessor,
    replaces or unknown for a statement with bounds, null otherwise).
    """
    single = ", ".join(sql_string(pid) for pid in sorted(functional)) or "NULL"
    return f"""
    WITH spans AS (
        SELECT subject_qid, pid, value_qid, rank, statement_id, end_unknown,
               {span_start_sql("start")} AS start_from,
               {span_end_sql("start")} AS start_until,
               {_exclusive_end()} AS end_until,
               {_end_precision_name()} AS end_precision_name,
               {span_start_sql("point_in_time")} AS point_from,
               {span_end_sql("point_in_time")} AS point_until,
               start_date IS NOT NULL OR end_date IS NOT NULL AS has_bounds,
               point_in_time_date IS NOT NULL AS has_point,
               coalesce(q_replaces, []) || coalesce(q_follows, []) AS predecessors
        FROM {claims}
    ), bounded AS MATERIALIZED (
        SELECT *,
            CASE WHEN has_bounds THEN start_from WHEN has_point THEN point_from END AS stated_from,
            CASE WHEN has_bounds THEN end_until WHEN has_point THEN point_until END AS valid_until,
            NOT has_bounds AND NOT has_point AND NOT end_unknown AS is_timeless,
            CASE WHEN has_bounds THEN 'start_end' WHEN has_point THEN 'point_in_time'
                 WHEN end_unknown THEN 'unknown_end' ELSE 'timeless' END AS time_source,
            row_number() OVER () AS row_id
        FROM spans
    ), ends AS (
        SELECT subject_qid, pid, value_qid, valid_until FROM bounded
        WHERE valid_until IS NOT NULL AND subject_qid <> value_qid AND rank <> 'deprecated'
          AND (stated_from IS NULL OR stated_from <= valid_until)
    ), end_only AS (
        SELECT row_id, subject_qid, pid, value_qid, valid_until, predecessors FROM bounded
        WHERE has_bounds AND stated_from IS NULL AND valid_until IS NOT NULL
    ), derived AS (
        SELECT o.row_id,
            max(e.valid_until) FILTER (WHERE o.pid IN ({single})) AS predecessor_until,
            max(e.valid_until) FILTER (WHERE list_contains(o.predecessors, e.value_qid))
                AS replaced_until
        FROM end_only o JOIN ends e
          ON e.subject_qid = o.subject_qid AND e.pid = o.pid AND e.valid_until < o.valid_until
        GROUP BY o.row_id
    ), started AS (
        SELECT b.*, d.predecessor_until, d.replaced_until,
            greatest(d.predecessor_until, d.replaced_until) + 1 AS derived_from,
            b.has_bounds AND b.stated_from IS NULL AND b.valid_until IS NOT NULL AS end_only
        FROM bounded b LEFT JOIN derived d USING (row_id)
    )
    SELECT s.subject_qid, s.pid, s.value_qid, s.rank, s.statement_id,
           coalesce(s.stated_from, CAST(s.derived_from AS DATE)) AS valid_from, s.valid_until,
           CASE WHEN s.end_unknown AND s.valid_until IS NULL THEN s.start_until END
               AS certain_until,
           s.is_timeless, s.end_unknown AND s.valid_until IS NULL AS end_unknown,
           s.end_only AND s.derived_from IS NULL AS start_unknown,
           CASE WHEN s.end_only AND s.derived_from IS NULL
                THEN greatest(subject_life.began, value_life.began) END AS possible_from,
           CASE WHEN NOT s.has_bounds THEN NULL
                WHEN NOT s.end_only THEN 'start'
                WHEN s.replaced_until IS NOT NULL
                     AND s.replaced_until >= coalesce(s.predecessor_until, s.replaced_until)
                     THEN 'replaces'
                WHEN s.predecessor_until IS NOT NULL THEN 'predecessor'
                ELSE 'unknown' END AS start_source,
           s.time_source, s.end_precision_name AS end_precision,
           CASE WHEN s.subject_qid = s.value_qid THEN 'self_loop'
                WHEN s.rank = 'deprecated' THEN 'deprecated'
                WHEN s.valid_until < s.stated_from THEN 'end_before_start' END AS drop_reason
    FROM started s
    LEFT JOIN ({_beginnings(lifespans)}) subject_life ON subject_life.qid = s.subject_qid
    LEFT JOIN ({_beginnings(lifespans)}) value_life ON value_life.qid = s.value_qid
    """


@dataclass(frozen=True)
class IntervalCounts:
    statements: int
    kept: int
    dropped: dict[str, int]
    by_source: dict[str, int]
    by_end_precision: dict[str, int]
    by_start_source: dict[str, int]

    @classmethod
    def combined(cls, parts: list[IntervalCounts]) -> IntervalCounts:
        """The counts of intervals built in parts (shards of the subjects)."""
        dropped: Counter[str] = Counter()
        by_source: Counter[str] = Counter()
        by_end_precision: Counter[str] = Counter()
        by_start_source: Counter[str] = Counter()
        for part in parts:
            dropped.update(part.dropped)
            by_source.update(part.by_source)
            by_end_precision.update(part.by_end_precision)
            by_start_source.update(part.by_start_source)
        return cls(
            statements=sum(part.statements for part in parts),
            kept=sum(part.kept for part in parts),
            dropped={reason: dropped[reason] for reason in INTERVAL_DROPS},
            by_source={
                source: by_source[source]
                for source in sorted(by_source, key=lambda key: (key is None, key or ""))
            },
            by_end_precision={name: by_end_precision[name] for name in END_PRECISIONS},
            by_start_source={name: by_start_source[name] for name in START_SOURCES},
        )


INTERVAL_ORDER = "subject_qid, pid, value_qid, statement_id, valid_from NULLS FIRST"
"""The order of the intervals table (a subject's rows together)."""


def build_intervals(
    connection: duckdb.DuckDBPyConnection,
    claims: str,
    target: str = "fact_intervals",
    *,
    lifespans: str | None = None,
    functional: Iterable[str] = (),
) -> IntervalCounts:
    """Create table ``target`` of kept intervals from relation ``claims`` (``lifespans`` and
    ``functional`` as ``intervals_sql`` takes them); return the counts."""
    sql = intervals_sql(claims, lifespans, functional)
    connection.execute(f"CREATE OR REPLACE TEMP TABLE _intervals_all AS {sql}")
    connection.execute(
        f"""CREATE OR REPLACE TEMP TABLE {target} AS
        SELECT * EXCLUDE (drop_reason, end_precision) FROM _intervals_all WHERE drop_reason IS NULL
        ORDER BY {INTERVAL_ORDER}"""
    )
    total = connection.execute("SELECT count(*) FROM _intervals_all").fetchone()[0]
    dropped = dict(
        connection.execute(
            "SELECT drop_reason, count(*) FROM _intervals_all "
            "WHERE drop_reason IS NOT NULL GROUP BY 1 ORDER BY 1"
        ).fetchall()
    )
    by_source = dict(
        connection.execute(
            f"SELECT time_source, count(*) FROM {target} GROUP BY 1 ORDER BY 1"
        ).fetchall()
    )
    by_end_precision = dict(
        connection.execute(
            "SELECT end_precision, count(*) FROM _intervals_all GROUP BY 1"
        ).fetchall()
    )
    by_start_source = dict(
        connection.execute(
            f"SELECT start_source, count(*) FROM {target} WHERE start_source IS NOT NULL GROUP BY 1"
        ).fetchall()
    )
    connection.execute("DROP TABLE _intervals_all")
    kept = total - sum(dropped.values())
    return IntervalCounts(
        statements=total,
        kept=kept,
        dropped={reason: dropped.get(reason, 0) for reason in INTERVAL_DROPS},
        by_source=by_source,
        by_end_precision={name: by_end_precision.get(name, 0) for name in END_PRECISIONS},
        by_start_source={name: by_start_source.get(name, 0) for name in START_SOURCES},
    )
