"""Which partitions a check looks at."""

from __future__ import annotations

import dagster as dg

from chronoscope_dagster.warehouse import Warehouse


def checked_partitions(
    context: dg.AssetCheckExecutionContext, warehouse: Warehouse, asset: str
) -> list[dict[str, str]]:
    """The partition the run materialized (its keys by dimension), else every materialized
    partition of ``asset``."""
    available = warehouse.partitions(asset)
    tags = context.run.tags
    for partition in available:
        if len(partition) == 1 and tags.get("dagster/partition") in partition.values():
            return [partition]
        if partition and all(
            tags.get(f"dagster/partition/{dimension}") == value
            for dimension, value in partition.items()
        ):
            return [partition]
    return available
