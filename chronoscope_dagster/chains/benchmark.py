"""The benchmark's ``turns`` and ``chains``: every family of every snapshot merged, one chain
per item (family, turn 1's subject and property) kept, from the latest snapshot that generated
one, and the reasons the facts leave a scope undecided."""

from __future__ import annotations

import duckdb

from chronoscope_dagster.chains.evidence import DROP_REASONS
from chronoscope_dagster.chains.families.common import SELECTION_REASONS

REFUSAL_REASONS = (*DROP_REASONS, *SELECTION_REASONS)
REFUSAL_MEANINGS = {
    "incomplete_scope": "a single-holder property's known holders leave a gap in the scope",
    "before_lifespan": "the scope lies before the subject or value existed",
    "after_lifespan": "the scope lies after the subject or value ceased to exist",
    "open_ended_count": "a count asked of a property that may have several holders at once",
    "open_ended_change": "a change asked of a property that may have several holders at once",
    "incomplete_count": "a count over a span the known holders do not cover",
    "no_evidence": "a 'no' that no complete set of facts supports",
    "unknown_start": "a statement with an end but no known start may hold in the scope",
    "unknown_end": "a statement that ended at an unrecorded date may hold in the scope",
    "scope_insensitive": "no scored turn's gold depends on the time scope",
    "wrong_pronoun": "the property's templates refer to the subject with the wrong pronoun",
    "ambiguous_reference": "a pronoun could mean the subject or the previous answer",
    "too_short": "the chain does not reach its family's length",
}
"""What each of ``REFUSAL_REASONS`` means, in a line (``chains.evidence``,
``chains.families.common``)."""
TURNS_SQL = "SELECT * FROM merged ORDER BY family, chain_id, turn_index"
CHAINS_SQL = """
    SELECT chain_id, family, snapshot_year, anchor, chain_length AS length,
           scope_shifts, implicit_share, span_years
    FROM merged WHERE turn_index = 0 ORDER BY family, chain_id"""
CHAINS_BY_FAMILY_SQL = (
    "SELECT family, count(*) FROM merged WHERE turn_index = 0 GROUP BY 1 ORDER BY 1"
)


def merge_snapshots(connection: duckdb.DuckDBPyConnection, turns_sql: str) -> None:
    """The temporary table ``merged``: the turns of ``turns_sql``, one chain per item (a
    family's chain about one subject and property: turn 1's), from the latest snapshot that
    generated one. Each snapshot draws its own years for an item, so keeping every
    snapshot's chain would ask the same item up to four times; the latest snapshot's facts
    are the most complete (``TURNS_SQL``, ``CHAINS_SQL`` read it)."""
    connection.execute(
        f"""CREATE TEMP TABLE merged AS
        WITH all_turns AS ({turns_sql}),
        items AS (
            SELECT chain_id, family, subject_qid, pid, snapshot_year FROM all_turns
            WHERE turn_index = 0),
        kept AS (
            SELECT chain_id, snapshot_year FROM items
            QUALIFY row_number() OVER (PARTITION BY family, subject_qid, pid
                                       ORDER BY snapshot_year DESC, chain_id) = 1)
        SELECT t.* FROM all_turns t JOIN kept USING (chain_id, snapshot_year)"""
    )
