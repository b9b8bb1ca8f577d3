"""A chain shard's files: its families' turns and refusals, where the merge reads them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.chains.facts import Shard
from chronoscope_dagster.chains.reach import warehouse_facts
from chronoscope_dagster.chains.records import generate_families
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.warehouse import Warehouse

REFUSED_FILE = "refused.parquet"
REFUSED_SCHEMA = pa.schema(
    [("subject_qid", pa.string()), ("pid", pa.string()), ("scope", pa.string()),
     ("reason", pa.string())]
)  # fmt: skip


@dataclass(frozen=True)
class ShardFamily:
    """What one shard of a family leaves for the merge besides its files."""

    chains: int
    no_explicit_question: Counter[str]
    unnameable_subjects: int


def write_shard_families(
    warehouse: Warehouse,
    year: str,
    families: Sequence[str],
    language: str,
    seed: int,
    workers: int,
    shard: Shard,
    key: str,
) -> dict[str, ShardFamily]:
    """Generate the ``families`` of the chains rooted in ``shard`` of snapshot ``year`` and
    write each one's turns and refusals as the part ``key`` of its family; return the rest."""
    left = {}
    outputs = generate_families(
        partial(warehouse_facts, warehouse, year), families, language, seed, workers, shard
    )
    for family, output in outputs:
        parts = warehouse.shard_asset(f"family_{family}")
        warehouse.write_table(parts, output.table, snapshot_year=year, shard=key)
        refused = sorted(output.refused, key=lambda row: tuple(value or "" for value in row))
        columns = {name: [row[i] for row in refused] for i, name in enumerate(REFUSED_SCHEMA.names)}
        with warehouse.writing(parts, REFUSED_FILE, snapshot_year=year, shard=key) as path:
            pq.write_table(pa.table(columns, schema=REFUSED_SCHEMA), path, compression="zstd")
        left[family] = ShardFamily(
            len(output.chains), output.no_explicit_question, output.unnameable_subjects
        )
    return left


def merged_refusals(warehouse: Warehouse, family: str, year: str, keys: Sequence[str]) -> Counter:
    """Per reason, the refusals of a family's parts ``keys``, a refusal made in several
    shards once (counted in DuckDB, within its memory limit)."""
    parts = warehouse.shard_asset(f"family_{family}")
    files = ", ".join(
        sql_string(
            str(warehouse.partition_dir(parts, snapshot_year=year, shard=key) / REFUSED_FILE)
        )
        for key in keys
    )
    with warehouse.connect() as connection:
        rows = connection.execute(
            f"""SELECT reason, count(*) FROM (
                    SELECT DISTINCT * FROM read_parquet([{files}], hive_partitioning = false))
                GROUP BY reason"""
        ).fetchall()
    return Counter(dict(rows))
