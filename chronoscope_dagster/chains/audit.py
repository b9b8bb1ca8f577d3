"""The rules of ``chains.evidence`` recomputed in SQL over the warehouse, for the checks.

Written apart from the generator's code on purpose: a check that reused
``SnapshotFacts`` would agree with it by construction. Relations are named by
the caller: ``turns`` (merged, with ``snapshot_year``), ``fact_intervals`` and
``lifespans`` (both with ``snapshot_year``).
"""

from __future__ import annotations

from chronoscope_dagster.chains.evidence import MAX_GAP_DAYS
from chronoscope_dagster.truth.intervals import span_end_sql, span_start_sql


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
               least(coalesce(CASE WHEN i.end_unknown THEN i.certain_until ELSE i.valid_until END,
                              'infinity'::DATE), s.hi) AS piece_until
        FROM scopes s JOIN {intervals} i
          ON i.snapshot_year = s.snapshot_year AND i.subject_qid = s.subject_qid AND i.pid = s.pid
        WHERE NOT (i.end_unknown AND i.certain_until IS NULL)
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
    wholly before or after the subject's lifespan: chain_id, turn_index, value_qid."""
    return f"""
    WITH golds AS (
        SELECT chain_id, turn_index, snapshot_year, subject_qid, pid,
               unnest(gold_qids) AS value_qid
        FROM ({turn_scopes_sql(turns, intervals, lifespans)})
        WHERE answer_kind = 'entity' AND (scope_end < exists_from OR scope_start > life_end)
    ), support AS (
        SELECT snapshot_year, subject_qid, pid, value_qid, bool_and(is_timeless) AS only_timeless
        FROM {intervals} GROUP BY ALL
    )
    SELECT g.chain_id, g.turn_index, g.value_qid
    FROM golds g JOIN support s USING (snapshot_year, subject_qid, pid, value_qid)
    WHERE s.only_timeless"""


def gold_mismatch_sql(turns: str, truth: str, intervals: str, lifespans: str) -> str:
    """Entity turns checked against truth: ``checked`` and ``wrong``, where the expected gold
    is the truth row's value set at the turn's anchor (or the timeless row), less the values
    only timeless statements support when the scope lies wholly outside the lifespan."""
    return f"""
    WITH scoped AS (
        SELECT *, scope_end < exists_from OR scope_start > life_end AS outside_lifespan
        FROM ({turn_scopes_sql(turns, intervals, lifespans)}) WHERE answer_kind = 'entity'
    ), timeless AS (
        SELECT snapshot_year, subject_qid, pid, list(value_qid) AS timeless_qids
        FROM (SELECT snapshot_year, subject_qid, pid, value_qid
              FROM {intervals} GROUP BY ALL HAVING bool_and(is_timeless))
        GROUP BY ALL
    ), compared AS (
        SELECT u.gold_qids,
               CASE WHEN u.outside_lifespan
                    THEN list_filter(t.value_qids, lambda v: NOT list_contains(
                             coalesce(x.timeless_qids, []), v))
                    ELSE t.value_qids END AS expected
        FROM scoped u
        LEFT JOIN timeless x USING (snapshot_year, subject_qid, pid)
        LEFT JOIN {truth} t
          ON t.snapshot_year = u.snapshot_year AND t.subject_qid = u.subject_qid
         AND t.pid = u.pid
         AND (t.anchor = u.scope_anchor
              OR (u.scope_anchor IS NULL AND t.anchor_scope = 'timeless'))
    )
    SELECT count(*) AS checked, count_if(expected IS NULL OR expected <> gold_qids) AS wrong
    FROM compared"""
