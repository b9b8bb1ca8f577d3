"""Which partitions a check looks at."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from chronoscope_dagster.warehouse import Warehouse


def checked_partitions(
    context: dg.AssetCheckExecutionContext, store: Warehouse, asset: str, key: str
) -> list[str]:
    """The partition the run materialized, else every materialized partition of ``asset``."""
    available = sorted({partition[key] for partition in store.partitions(asset)})
    run_partition = context.run.tags.get("dagster/partition")
    if run_partition in available:
        return [run_partition]
    return available


def sql_list(values: Iterable[str], *, numeric: bool = False) -> str:
    items = [str(int(v)) if numeric else "'" + str(v).replace("'", "''") + "'" for v in values]
    return ", ".join(items) if items else "NULL"
