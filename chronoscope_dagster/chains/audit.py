"""The rules of ``chains.evidence`` recomputed in SQL, for the checks.

Written apart from the generator's code on purpose: a check that reused
``SnapshotFacts`` would agree with it by construction. Relations are named by
the caller: ``turns`` (merged, with ``snapshot_year``), ``fact_intervals`` and
``lifespans`` (both with ``snapshot_year``).
"""

from __future__ import annotations

import duckdb

from chronoscope_dagster.chains.evidence import MAX_GAP_DAYS
from chronoscope_dagster.truth.intervals import span_end_sql, span_start_sql
from chronoscope_dagster.truth.table import memory_limit_bytes, subject_ranges

KNOWN = "NOT i.start_unknown AND NOT (i.end_unknown AND i.certain_until IS NULL)"
"""An interval row (aliased ``i``) whose days of validity are known: its start is known (or
it is timeless), and an end at an unknown date holds only to its start's span."""
KNOWN_UNTIL = "CASE WHEN i.end_unknown THEN i.certain_until ELSE i.valid_until END"


def lifespan_sql(lifespans: str) -> str:
    """Per (snapshot_year, qid): the first and last day the subject may have existed."""
    return f"""
    SELECT snapshot_year, qid,
           coalesce(min({span_start_sql("life")}) FILTER (WHERE bound = 'start'),
                    '-infinity'::DATE) AS life_start,
           coalesce(max({span_end_sql("life")}) FILTER (WHERE bound = 'end'),
                    'infinity'::DATE) AS life_end
    FROM (SELECT *, date AS life_date, precision AS life_precision FROM {lifespans})
    GROUP BY ALL"""


def existence_sql(intervals: str, lifespans: str) -> str:
    """``lifespan_sql`` and ``exists_from``: the recorded start, or without one the first
    start of any dated statement the entity takes part in, as subject or as value (a bound
    for timeless values only: coverage is clipped to the recorded lifespan alone)."""
    return f"""
    WITH seen AS (
        SELECT snapshot_year, qid, min(valid_from) AS first_seen
        FROM (SELECT snapshot_year, subject_qid AS qid, valid_from FROM {intervals}
              WHERE valid_from IS NOT NULL AND NOT is_timeless
              UNION ALL
              SELECT snapshot_year, value_qid, valid_from FROM {intervals}
              WHERE valid_from IS NOT NULL AND NOT is_timeless)
        GROUP BY ALL
    )
    SELECT snapshot_year, qid,
           coalesce(l.life_start, '-infinity'::DATE) AS life_start,
           coalesce(l.life_end, 'infinity'::DATE) AS life_end,
           CASE WHEN coalesce(l.life_start, '-infinity'::DATE) = '-infinity'::DATE
                THEN coalesce(s.first_seen, '-infinity'::DATE) ELSE l.life_start END
               AS exists_from
    FROM ({lifespan_sql(lifespans)}) l FULL JOIN seen s USING (snapshot_year, qid)"""


def turn_scopes_sql(turns: str, intervals: str, lifespans: str) -> str:
    """Every turn with the days of its scope (a day, a year, a span of years, or the present:
    the snapshot's last day) and its subject's lifespan (``existence_sql``)."""
    return f"""
    SELECT t.*, s.scope_start, s.scope_end,
           coalesce(l.life_start, '-infinity'::DATE) AS life_start,
           coalesce(l.life_end, 'infinity'::DATE) AS life_end,
           coalesce(l.exists_from, '-infinity'::DATE) AS exists_from
    FROM {turns} t
    JOIN (
        SELECT DISTINCT snapshot_year, scope_anchor,
            CASE WHEN scope_anchor IS NULL THEN make_date(snapshot_year, 12, 31)
                 WHEN length(scope_anchor) = 10 THEN CAST(scope_anchor AS DATE)
                 ELSE make_date(CAST(left(scope_anchor, 4) AS INTEGER), 1, 1) END AS scope_start,
            CASE WHEN scope_anchor IS NULL THEN make_date(snapshot_year, 12, 31)
                 WHEN length(scope_anchor) = 10 THEN CAST(scope_anchor AS DATE)
                 ELSE make_date(CAST(right(scope_anchor, 4) AS INTEGER), 12, 31) END AS scope_end
        FROM {turns}
    ) s ON s.snapshot_year = t.snapshot_year AND s.scope_anchor IS NOT DISTINCT FROM t.scope_anchor
    LEFT JOIN ({existence_sql(intervals, lifespans)}) l
      ON l.snapshot_year = t.snapshot_year AND l.qid = t.subject_qid"""


def uncovered_sql(turns: str, intervals: str, lifespans: str, functional: list[str]) -> str:
    """Entity and count turns of single-holder properties whose scope (clipped to the
    subject's lifespan and the snapshot) has a gap of more than ``MAX_GAP_DAYS`` days that
    no certain interval of any value covers: chain_id, turn_index, longest_gap."""
    pids = ", ".join(f"'{pid}'" for pid in sorted(functional)) or "NULL"
    return f"""
    WITH scoped AS (
        SELECT chain_id, turn_index, snapshot_year, subject_qid, pid,
               greatest(scope_start, life_start) AS lo,
               least(scope_end, life_end, make_date(snapshot_year, 12, 31)) AS hi
        FROM ({turn_scopes_sql(turns, intervals, lifespans)})
        WHERE answer_kind IN ('entity', 'count') AND pid IN ({pids})
    ), scopes AS (
        SELECT DISTINCT snapshot_year, subject_qid, pid, lo, hi FROM scoped WHERE lo <= hi
    ), pieces AS (
        SELECT s.snapshot_year, s.subject_qid, s.pid, s.lo, s.hi,
               greatest(coalesce(i.valid_from, '-infinity'::DATE), s.lo) AS piece_from,
               least(coalesce({KNOWN_UNTIL}, 'infinity'::DATE), s.hi) AS piece_until
        FROM scopes s JOIN {intervals} i
          ON i.snapshot_year = s.snapshot_year AND i.subject_qid = s.subject_qid AND i.pid = s.pid
        WHERE {KNOWN}
    ), reached AS (
        SELECT *, max(piece_until) OVER (
                   PARTITION BY snapshot_year, subject_qid, pid, lo, hi
                   ORDER BY piece_from, piece_until
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
        FROM pieces WHERE piece_from <= piece_until
    ), gaps AS (
        SELECT snapshot_year, subject_qid, pid, lo, hi,
               greatest(max(piece_from - greatest(coalesce(reach + 1, lo), lo)),
                        hi - max(piece_until)) AS longest_gap
        FROM reached GROUP BY snapshot_year, subject_qid, pid, lo, hi
    )
    SELECT t.chain_id, t.turn_index,
           coalesce(g.longest_gap, t.hi - t.lo + 1) AS longest_gap
    FROM scoped t LEFT JOIN gaps g USING (snapshot_year, subject_qid, pid, lo, hi)
    WHERE t.lo <= t.hi AND coalesce(g.longest_gap, t.hi - t.lo + 1) > {MAX_GAP_DAYS}"""


def timeless_outside_lifespan_sql(turns: str, intervals: str, lifespans: str) -> str:
    """Gold values of entity turns that only timeless statements support, at a scope that lies
    wholly before or after the subject's or the value's lifespan: chain_id, turn_index,
    value_qid."""
    return f"""
    WITH golds AS (
        SELECT chain_id, turn_index, snapshot_year, subject_qid, pid, scope_start, scope_end,
               scope_end < exists_from OR scope_start > life_end AS subject_outside,
               unnest(gold_qids) AS value_qid
        FROM ({turn_scopes_sql(turns, intervals, lifespans)})
        WHERE answer_kind = 'entity'
    ), support AS (
        SELECT snapshot_year, subject_qid, pid, value_qid, bool_and(is_timeless) AS only_timeless
        FROM {intervals} GROUP BY ALL
    )
    SELECT g.chain_id, g.turn_index, g.value_qid
    FROM golds g JOIN support s USING (snapshot_year, subject_qid, pid, value_qid)
    LEFT JOIN ({existence_sql(intervals, lifespans)}) v
      ON v.snapshot_year = g.snapshot_year AND v.qid = g.value_qid
    WHERE s.only_timeless
      AND (g.subject_outside OR g.scope_end < coalesce(v.exists_from, '-infinity'::DATE)
           OR g.scope_start > coalesce(v.life_end, 'infinity'::DATE))"""


def unsupported_sql(turns: str, intervals: str, lifespans: str) -> str:
    """Golds no statement known to hold in the scope supports: chain_id, turn_index,
    value_qid. An entity turn's gold value needs a timeless statement or one of known start
    whose known days reach into the scope (``KNOWN``: a statement with an end but no known
    start, or one that ended at an unknown date, decides nothing there); a "yes" to a value
    held throughout a span needs the value's dated statements of known days to cover every
    day of it."""
    return f"""
    WITH scoped AS ({turn_scopes_sql(turns, intervals, lifespans)}),
    golds AS (
        SELECT chain_id, turn_index, snapshot_year, subject_qid, pid, scope_start, scope_end,
               unnest(gold_qids) AS value_qid
        FROM scoped WHERE answer_kind = 'entity'
    ), entity_unsupported AS (
        SELECT g.chain_id, g.turn_index, g.value_qid FROM golds g
        WHERE NOT EXISTS (
            SELECT 1 FROM {intervals} i
            WHERE i.snapshot_year = g.snapshot_year AND i.subject_qid = g.subject_qid
              AND i.pid = g.pid AND i.value_qid = g.value_qid AND {KNOWN}
              AND (i.is_timeless OR (i.valid_from <= g.scope_end
                   AND coalesce({KNOWN_UNTIL}, 'infinity'::DATE) >= g.scope_start)))
    ), held AS (
        SELECT chain_id, turn_index, snapshot_year, subject_qid, pid, asked_qid AS value_qid,
               scope_start AS lo, scope_end AS hi
        FROM scoped WHERE answer_kind = 'yes_no' AND answer = 'yes' AND asked_qid IS NOT NULL
    ), pieces AS (
        SELECT h.chain_id, h.turn_index, h.value_qid, h.lo, h.hi,
               greatest(i.valid_from, h.lo) AS piece_from,
               least(coalesce({KNOWN_UNTIL}, 'infinity'::DATE), h.hi) AS piece_until
        FROM held h JOIN {intervals} i
          ON i.snapshot_year = h.snapshot_year AND i.subject_qid = h.subject_qid
         AND i.pid = h.pid AND i.value_qid = h.value_qid
        WHERE {KNOWN} AND NOT i.is_timeless
    ), reached AS (
        SELECT *, max(piece_until) OVER (
                   PARTITION BY chain_id, turn_index ORDER BY piece_from, piece_until
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
        FROM pieces WHERE piece_from <= piece_until
    ), gaps AS (
        SELECT chain_id, turn_index,
               greatest(max(piece_from - greatest(coalesce(reach + 1, lo), lo)),
                        max(hi) - max(piece_until)) AS longest_gap
        FROM reached GROUP BY chain_id, turn_index
    )
    SELECT chain_id, turn_index, value_qid FROM entity_unsupported
    UNION ALL
    SELECT h.chain_id, h.turn_index, h.value_qid
    FROM held h LEFT JOIN gaps g USING (chain_id, turn_index)
    WHERE coalesce(g.longest_gap, 1) > 0"""


BYTES_PER_CHECKED_TURN = 4_000
"""Memory ``gold_mismatch_sql`` takes per turn it checks, with a margin: on 2 threads with a
300MB limit, the turns of the 400k linked entities ran out of memory in one query, and
150,000 turns a query passed."""


def gold_mismatch_queries(
    connection: duckdb.DuckDBPyConnection, turns: str, truth: str, intervals: str, lifespans: str
) -> list[str]:
    """``gold_mismatch_sql`` over consecutive ranges of subjects, each of about as many turns
    as the connection's memory limit holds (``BYTES_PER_CHECKED_TURN``); their counts add up
    to the whole query's, since a turn and the truth rows it is checked against share their
    subject."""
    budget = max(memory_limit_bytes(connection) // BYTES_PER_CHECKED_TURN, 1)
    return [
        gold_mismatch_sql(
            f"(SELECT * FROM {turns} WHERE {subjects})",
            f"(SELECT * FROM {truth} WHERE {subjects})",
            intervals,
            lifespans,
        )
        for subjects in subject_ranges(connection, turns, budget)
    ]


def gold_mismatch_sql(turns: str, truth: str, intervals: str, lifespans: str) -> str:
    """Entity turns checked against truth: ``checked`` and ``wrong``, where the expected gold
    is the truth row's value set at the turn's anchor (or the timeless row), less the values
    only timeless statements support when the scope lies wholly outside the subject's or the
    value's lifespan. A value with a timeless statement is supported by a dated one only where
    that one overlaps the scope: Germany's undated membership of the WTO beside the dated one
    from 1995 does not make it a member in 1975."""
    return f"""
    WITH scoped AS (
        SELECT *, scope_end < exists_from OR scope_start > life_end AS subject_outside
        FROM ({turn_scopes_sql(turns, intervals, lifespans)}) WHERE answer_kind = 'entity'
    ), timeless AS (
        SELECT DISTINCT snapshot_year, subject_qid, pid, value_qid FROM {intervals}
        WHERE is_timeless
    ), rows AS (
        SELECT u.chain_id, u.turn_index, u.gold_qids, t.value_qids IS NULL AS no_truth,
               unnest(coalesce(t.value_qids, [NULL])) AS value_qid,
               u.snapshot_year, u.subject_qid, u.pid, u.scope_start, u.scope_end,
               u.subject_outside
        FROM scoped u
        LEFT JOIN {truth} t
          ON t.snapshot_year = u.snapshot_year AND t.subject_qid = u.subject_qid
         AND t.pid = u.pid
         AND (t.anchor = u.scope_anchor
              OR (u.scope_anchor IS NULL AND t.anchor_scope = 'timeless'))
    ), dated AS (
        SELECT DISTINCT r.chain_id, r.turn_index, r.value_qid
        FROM rows r JOIN {intervals} i
          ON i.snapshot_year = r.snapshot_year AND i.subject_qid = r.subject_qid
         AND i.pid = r.pid AND i.value_qid = r.value_qid AND NOT i.is_timeless
         AND i.valid_from <= r.scope_end
         AND coalesce(i.valid_until, 'infinity'::DATE) >= r.scope_start
    ), kept AS (
        SELECT r.chain_id, r.turn_index, any_value(r.gold_qids) AS gold_qids,
               bool_or(r.no_truth) AS no_truth,
               list_sort(list(r.value_qid) FILTER (WHERE r.value_qid IS NOT NULL AND NOT (
                   x.value_qid IS NOT NULL AND d.value_qid IS NULL AND (r.subject_outside
                       OR r.scope_end < coalesce(v.exists_from, '-infinity'::DATE)
                       OR r.scope_start > coalesce(v.life_end, 'infinity'::DATE)))))
                   AS expected
        FROM rows r
        LEFT JOIN timeless x USING (snapshot_year, subject_qid, pid, value_qid)
        LEFT JOIN dated d USING (chain_id, turn_index, value_qid)
        LEFT JOIN ({existence_sql(intervals, lifespans)}) v
          ON v.snapshot_year = r.snapshot_year AND v.qid = r.value_qid
        GROUP BY r.chain_id, r.turn_index
    )
    SELECT count(*) AS checked,
           count_if(no_truth OR expected IS NULL
                    OR expected <> list_sort(gold_qids)) AS wrong
    FROM kept"""
