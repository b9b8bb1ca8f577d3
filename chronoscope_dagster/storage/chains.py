"""Where the chains stage reads and writes in a home: a snapshot's sources, the families'
partitions and reports, and the parts a shard step writes until the merge; with the work the
chain steps run in processes of their own (the snapshot index, a shard's generation, the
merge, ``turns`` and ``chains``, the determinism check's regeneration), which reads here, calls
the core and writes here."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.chains.benchmark import (
    CHAINS_BY_FAMILY_SQL,
    CHAINS_SQL,
    REFUSAL_REASONS,
    TURNS_SQL,
    merge_snapshots,
)
from chronoscope_dagster.chains.determinism import differing_families
from chronoscope_dagster.chains.facts import Shard, SnapshotFacts
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.jsonl import import_chains
from chronoscope_dagster.chains.reach import (
    SOURCES,
    indexed_root_count,
    indexed_shard_roots,
    root_rows_sql,
    scoped,
    shard_count,
    source_facts,
    worker_count,
    write_snapshot_index,
)
from chronoscope_dagster.chains.records import TURNS_SCHEMA, generate_families, merged_turns_sql
from chronoscope_dagster.processes import cores_for_a_step, in_own_process, step_workers
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.warehouse import Warehouse, parquet_source, write_query

REFUSED_FILE = "refused.parquet"
REFUSED_SCHEMA = pa.schema(
    [("subject_qid", pa.string()), ("pid", pa.string()), ("scope", pa.string()),
     ("reason", pa.string())]
)  # fmt: skip


def snapshot_sources(warehouse: Warehouse, year: str) -> dict[str, str]:
    """SQL reading each of the ``SOURCES`` of snapshot ``year`` (``present_day`` has one)."""
    files = {name: warehouse.data_path(name, snapshot_year=year) for name in SOURCES[:4]}
    files["present_day"] = warehouse.data_path("present_day")
    return {name: parquet_source(path) for name, path in files.items()}


def root_row_count(warehouse: Warehouse, year: str) -> int:
    """The truth rows of the root subjects of snapshot ``year`` (``root_rows_sql``)."""
    truth = parquet_source(warehouse.data_path("truth", snapshot_year=year))
    with warehouse.connect() as connection:
        [(count,)] = connection.execute(root_rows_sql(truth)).fetchall()
    return count


def warehouse_facts(
    warehouse: Warehouse,
    year: str,
    shard: Shard | None = None,
    *,
    indexed: bool = False,
    scope: int | None = None,
) -> SnapshotFacts:
    """The index of one snapshot of a home for the chains rooted in ``shard`` (every subject
    without one); ``indexed``: from the snapshot index ``write_chain_index`` wrote, and from
    the ``scope`` of one of its shards if given (``shard`` a part of it)."""
    sources = snapshot_sources(warehouse, year)
    return source_facts(
        year, sources, shard, config=warehouse.duckdb_settings(),
        snapshot_index=chain_index_dir(warehouse, year) if indexed else None, scope=scope,
    )  # fmt: skip


CHAIN_INDEX = "chain_index"


def chain_index_dir(warehouse: Warehouse, year: str) -> Path:
    """Where a snapshot's shard steps read its snapshot-wide tables until the merge."""
    return warehouse.partition_dir(warehouse.shard_asset(CHAIN_INDEX), snapshot_year=year)


def write_chain_index(warehouse: Warehouse, year: str, shards: int = 1) -> list[range]:
    """Write what every shard step of snapshot ``year`` reads of the whole snapshot, and of
    several ``shards`` each one's scope (``write_snapshot_index``), once, before the steps;
    the shards of each scope pass."""
    directory = chain_index_dir(warehouse, year)
    shutil.rmtree(directory, ignore_errors=True)
    return write_snapshot_index(
        snapshot_sources(warehouse, year), directory, shards=shards,
        config=warehouse.duckdb_settings(),
    )  # fmt: skip


def drop_chain_index(warehouse: Warehouse, year: str) -> None:
    warehouse.drop_shards(CHAIN_INDEX, snapshot_year=year)


def family_turns_sql(warehouse: Warehouse) -> str:
    """Every materialized family partition's turns, with its ``snapshot_year``."""
    return " UNION ALL ".join(
        f"SELECT *, {int(p['snapshot_year'])} AS snapshot_year "
        f"FROM {parquet_source(warehouse.data_path(f'family_{family}', **p))}"
        for family in FAMILIES
        for p in warehouse.partitions(f"family_{family}")
    )


@dataclass(frozen=True)
class TurnsAndChains:
    """What ``write_turns_and_chains`` wrote: turns, chains, (family, chains) rows, and the
    counts of an import (none where the families were merged)."""

    turns: int
    chains: int
    by_family: list[tuple[str, int]]
    imported: Counter[str]


def write_turns_and_chains(warehouse: Warehouse, import_file: str | None) -> TurnsAndChains:
    """The benchmark's ``turns`` and ``chains``: every materialized family partition's turns
    merged over snapshots (``merge_snapshots``), or those of the chains of ``import_file``."""
    imported: Counter[str] = Counter()
    with warehouse.connect() as connection:
        if import_file:
            table, imported = import_chains(Path(import_file).expanduser())
            connection.register("imported", table)
            sources = "SELECT * FROM imported"
        else:
            sources = family_turns_sql(warehouse)
        merge_snapshots(connection, sources)
        with warehouse.writing("turns") as path:
            turns = write_query(connection, TURNS_SQL, path)
        with warehouse.writing("chains") as path:
            chains = write_query(connection, CHAINS_SQL, path)
        by_family = connection.execute(CHAINS_BY_FAMILY_SQL).fetchall()
    return TurnsAndChains(turns, chains, by_family, imported)


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


def refusals_by_reason(warehouse: Warehouse) -> dict[str, int]:
    """``refusals_by_family`` summed over families, by reason (every reason, in order)."""
    totals: Counter[str] = Counter()
    for _, *counts in refusals_by_family(warehouse):
        totals.update(dict(zip(REFUSAL_REASONS, counts, strict=True)))
    return {reason: totals[reason] for reason in REFUSAL_REASONS}


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
        partial(warehouse_facts, warehouse, year, indexed=True, scope=_scope(shard)),
        families, language, seed, workers, shard,
    )  # fmt: skip
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


def _scope(shard: Shard) -> int | None:
    """Which scope of the snapshot index a step of ``shard`` reads, if any."""
    return shard.index if scoped(shard.count) else None


@dataclass(frozen=True)
class MergedFamily:
    """What the merge of a family's parts wrote: turns, chains, the longest chain's length,
    and the first three chains' turns (chain id, turn index, question, answer)."""

    turns: int
    chains: int
    max_length: int
    preview: list[tuple[str, int, str, str]]


def write_merged_families(
    warehouse: Warehouse, families: Sequence[str], year: str, keys: Sequence[str]
) -> dict[str, tuple[MergedFamily, Counter[str]]]:
    """Each of ``families`` merged from its parts ``keys`` (``write_merged_family``), with its
    refusals by reason (``merged_refusals``)."""
    return {
        family: (
            write_merged_family(warehouse, family, year, keys),
            merged_refusals(warehouse, family, year, keys),
        )
        for family in families
    }


def write_merged_family(
    warehouse: Warehouse, family: str, year: str, keys: Sequence[str]
) -> MergedFamily:
    """Write a family's parts ``keys`` (in shard order) as its partition of snapshot ``year``,
    sorted by DuckDB within its memory limit and streamed to the file; a family without chains
    as pyarrow writes an empty table (the bytes of the merge in memory it replaces)."""
    asset, parts = f"family_{family}", warehouse.shard_asset(f"family_{family}")
    sources = [_numbered(warehouse.data_path(parts, snapshot_year=year, shard=key)) for key in keys]
    with warehouse.connect() as connection:
        with warehouse.writing(asset, snapshot_year=year) as path:
            turns = write_query(connection, merged_turns_sql(sources), path, TURNS_SCHEMA)
            if not turns:
                pq.write_table(TURNS_SCHEMA.empty_table(), path, compression="zstd")
        written = _numbered(warehouse.data_path(asset, snapshot_year=year))
        [(chains, max_length)] = connection.execute(
            f"SELECT count(*) FILTER (WHERE turn_index = 0), coalesce(max(chain_length), 0) "
            f"FROM {written}"
        ).fetchall()
        preview = connection.execute(
            f"""WITH numbered AS (
                    SELECT chain_id, turn_index, question, answer,
                           min(file_row_number) OVER (PARTITION BY chain_id) AS first_row
                    FROM {written})
                SELECT left(chain_id, 8), turn_index, question, answer FROM numbered
                WHERE first_row IN (SELECT DISTINCT first_row FROM numbered
                                    ORDER BY first_row LIMIT 3)
                ORDER BY first_row, turn_index"""
        ).fetchall()
    return MergedFamily(turns, chains, max_length, preview)


def _numbered(path: Path) -> str:
    """SQL reading one Parquet file with each row's ``file_row_number``."""
    return (
        f"read_parquet({sql_string(str(path))}, hive_partitioning = false, file_row_number = true)"
    )


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


def differing_by_year(
    warehouse: Warehouse, years: Sequence[str], max_roots: int, which: int
) -> dict[str, tuple[Shard, list[str]]]:
    """Per snapshot of ``years``, the shard regenerated (one, ``which``, of as many shards as
    hold about ``max_roots`` roots each) and the families whose stored chains
    rooted in it differ from those generated again (``differing_families``) over as many
    processes as a shard step would use, each snapshot in a process of its own
    (``in_own_process``). Each process selects its part from the whole snapshot index, not
    from a shard's scope as the step did (``write_chain_index``), so a scope that missed a
    row the chains need shows as a difference, as a nondeterministic generation does."""
    return {
        year: in_own_process(partial(_differing_families, warehouse, max_roots, which, year))
        for year in years
    }


def _differing_families(
    warehouse: Warehouse, max_roots: int, which: int, year: str
) -> tuple[Shard, list[str]]:
    write_chain_index(warehouse, year)
    try:
        index = chain_index_dir(warehouse, year)
        settings = warehouse.duckdb_settings()
        roots = indexed_root_count(index, config=settings)
        count = shard_count(roots, max_roots)
        shard = Shard(which % count, count)
        cores = cores_for_a_step()
        rows = root_row_count(warehouse, year) // count if cores > 1 else 0
        workers, _ = step_workers(worker_count(rows, cores), "the determinism check")
        assets = {family: f"family_{family}" for family in FAMILIES}
        stored = {f: warehouse.data_path(asset, snapshot_year=year) for f, asset in assets.items()}
        used = {f: warehouse.read_report(asset, snapshot_year=year) for f, asset in assets.items()}
        facts = partial(warehouse_facts, warehouse, year, indexed=True)
        held = None if count == 1 else indexed_shard_roots(index, shard, config=settings)
        return shard, differing_families(facts, shard, held, stored, used, workers or 1)
    finally:
        drop_chain_index(warehouse, year)
