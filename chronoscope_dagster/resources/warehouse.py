"""The home's warehouse as Dagster sees it: the resource ``warehouse`` is the ``Warehouse``
itself (assets and checks name ``warehouse: ResourceParam[Warehouse]``), built from the same
home as the ``duckdb`` resource, so the two cannot disagree."""

from __future__ import annotations

from dagster_duckdb import DuckDBResource

from chronoscope_dagster.warehouse import Warehouse


def refresh_views(warehouse: Warehouse, duckdb: DuckDBResource) -> list[str]:
    """Recreate the views of the DuckDB file (call from an asset in the duckdb_writer pool)."""
    warehouse.home.mkdir(parents=True, exist_ok=True)
    with duckdb.get_connection() as connection:
        return warehouse.create_views(connection)
