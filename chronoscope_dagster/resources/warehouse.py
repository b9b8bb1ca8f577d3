from __future__ import annotations

import dagster as dg
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.warehouse import Warehouse, default_home


class WarehouseResource(dg.ConfigurableResource):
    """The data directory (Parquet per partition) and its DuckDB file of views."""

    home: str = Field(
        default_factory=lambda: str(default_home()),
        description="Data directory; defaults to $CHRONOSCOPE_HOME or ./.chronoscope.",
    )

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.home)

    def refresh_views(self, duckdb: DuckDBResource) -> list[str]:
        """Recreate the views of the DuckDB file (call from an asset in the duckdb_writer pool)."""
        warehouse = self.warehouse
        warehouse.home.mkdir(parents=True, exist_ok=True)
        with duckdb.get_connection() as connection:
            return warehouse.create_views(connection)
