"""The benchmark's ``turns`` and ``chains``: every family of every snapshot merged, a chain
generated from several snapshots (same content, so the same id) kept once, from the earliest,
and the scopes the facts did not decide summed over the snapshots."""

from __future__ import annotations

from collections import Counter

import duckdb

from chronoscope_dagster.chains.evidence import DROP_REASONS
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.families.common import SELECTION_REASONS
from chronoscope_dagster.warehouse import Warehouse, parquet_source

REFUSAL_REASONS = (*DROP_REASONS, *SELECTION_REASONS)
TURNS_SQL = "SELECT * FROM merged ORDER BY family, chain_id, turn_index"
CHAINS_SQL = """
    SELECT chain_id, family, snapshot_year, anchor, chain_length AS length,
           scope_shifts, implicit_share, span_years
    FROM merged WHERE turn_index = 0 ORDER BY family, chain_id"""
CHAINS_BY_FAMILY_SQL = (
    "SELECT family, count(*) FROM merged WHERE turn_index = 0 GROUP BY 1 ORDER BY 1"
)


def family_turns_sql(warehouse: Warehouse) -> str:
    """Every materialized family partition's turns, with its ``snapshot_year``."""
    return " UNION ALL ".join(
        f"SELECT *, {int(p['snapshot_year'])} AS snapshot_year "
        f"FROM {parquet_source(warehouse.data_path(f'family_{family}', **p))}"
        for family in FAMILIES
        for p in warehouse.partitions(f"family_{family}")
    )


def merge_snapshots(connection: duckdb.DuckDBPyConnection, turns_sql: str) -> None:
    """The temporary table ``merged``: the turns of ``turns_sql``, each chain from the earliest
    snapshot that generated it (``TURNS_SQL``, ``CHAINS_SQL`` read it)."""
    connection.execute(
        f"""CREATE TEMP TABLE merged AS
        WITH all_turns AS ({turns_sql}),
        first_snapshot AS (
            SELECT chain_id, min(snapshot_year) AS snapshot_year FROM all_turns GROUP BY 1)
        SELECT t.* FROM all_turns t JOIN first_snapshot USING (chain_id, snapshot_year)"""
    )


def refusals_by_family(warehouse: Warehouse) -> list[tuple]:
    """Per family, the (subject, property, scope) the facts did not decide, by reason
    (``REFUSAL_REASONS``), summed over snapshot years."""
    rows = []
    for family in FAMILIES:
        totals: Counter[str] = Counter()
        for partition in warehouse.partitions(f"family_{family}"):
            totals.update(warehouse.read_report(f"family_{family}", **partition)["scopes_refused"])
        rows.append((family, *(totals[reason] for reason in REFUSAL_REASONS)))
    return rows
