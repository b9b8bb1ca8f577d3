"""The data directory: one Parquet file per asset partition, and DuckDB views over them.

Layout under the home directory (``CHRONOSCOPE_HOME``, default ``./.chronoscope``)::

    <asset>/<key>=<value>[/<key>=<value>]/data.parquet   partitioned assets (hive layout)
    <asset>/data.parquet                                 unpartitioned assets
    <asset>/.../report.json                              counts an asset's checks read back
    warehouse.duckdb                                     views named as the assets
    downloads/                                           fetched dumps
    shards/<asset>/<key>=<value>/shard=<i>-of-<n>/       a sharded step's parts, until merged

Every file is written to a temporary name and renamed, so a rerun replaces a
partition and never duplicates it, and a reader never sees half a file. The
views read the Parquet files, so the files are the truth and the DuckDB file can
be rebuilt at any time; ``query`` runs SQL on an in-memory DuckDB with the same
views, so reading never takes the DuckDB file's lock; ``reader`` is the same views
on a DuckDB that can open no file at all (``chronoscope sql``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from chronoscope_dagster.files import atomic_write, remove_dead_temporaries
from chronoscope_dagster.parquet import RowGroupWriter
from chronoscope_dagster.sql import sql_string

DEFAULT_HOME = ".chronoscope"
DATA_FILE = "data.parquet"
REPORT_FILE = "report.json"
DUCKDB_FILE = "warehouse.duckdb"
GLOB_CHARACTERS = frozenset("*?[]{}")
READ_ONLY_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
}
"""DuckDB settings under which a query reads only what it was handed: no file, URL or extension."""

VIEW_ASSETS = (
    "claims",
    "labels",
    "lifespans",
    "fact_intervals",
    "truth",
    "present_day",
    "chains",
    "turns",
    "benchmark_stats",
    "eval_sample",
    "paraphrased_subset",
    "predictions",
    "metrics",
    "paraphrase_predictions",
    "paraphrase_metrics",
    "leaderboard",
    "probe_corpus",
    "probe_runs",
)

VIEW_ALIASES = {
    "paraphrases": "paraphrased_subset",
    "probe_items": "probe_corpus",
    "probe_results": "probe_runs",
}
"""The view names of DESIGN.md's command-line contract where they differ from the asset's."""


QUERY_ROW_GROUP_ROWS = 1 << 16


def default_home() -> Path:
    return Path(os.environ.get("CHRONOSCOPE_HOME", DEFAULT_HOME)).expanduser().resolve()


class Warehouse:
    def __init__(self, home: Path | str | None = None):
        self.home = Path(home).expanduser().resolve() if home else default_home()
        if GLOB_CHARACTERS & set(str(self.home)):
            raise ValueError(
                f"home {str(self.home)!r} contains a glob character (one of * ? [ ] {{ }}), "
                "which would make the views read other directories; choose another path"
            )

    @property
    def duckdb_path(self) -> Path:
        return self.home / DUCKDB_FILE

    @property
    def response_cache_path(self) -> Path:
        """The SQLite cache of model answers every model step shares."""
        return self.home / "cache" / "responses.sqlite"

    def partition_dir(self, asset: str, **keys: str) -> Path:
        path = self.home / asset
        for key, value in keys.items():
            path = path / f"{key}={value}"
        return path

    def data_path(self, asset: str, **keys: str) -> Path:
        return self.partition_dir(asset, **keys) / DATA_FILE

    def has(self, asset: str, **keys: str) -> bool:
        """Whether the partition was written: a file of its own (its data, its report, or an
        export's files), not a writer's hidden temporary."""
        directory = self.partition_dir(asset, **keys)
        return directory.is_dir() and any(
            path.is_file() and not path.name.startswith(".") for path in directory.iterdir()
        )

    def data_version(self, asset: str, **keys: str) -> str:
        """A hash of what a partition holds: its files by relative path, but its report (which
        records timings) and temporaries. Assets give it to Dagster as their data version, so
        an input rebuilt into the same bytes leaves what depends on it fresh, and one rebuilt
        into other bytes makes it stale, partition by partition."""
        directory = self.partition_dir(asset, **keys)
        digest = hashlib.sha256()
        for path in sorted(directory.rglob("*")):
            relative = path.relative_to(directory)
            if (
                not path.is_file()
                or relative.name == REPORT_FILE
                or any(part.startswith(".") or "=" in part for part in relative.parts)
            ):
                continue
            digest.update(f"{relative}\n".encode())
            with path.open("rb") as file:
                digest.update(hashlib.file_digest(file, "sha256").digest())
        return digest.hexdigest()[:32]

    @contextmanager
    def writing(self, asset: str, filename: str = DATA_FILE, **keys: str) -> Iterator[Path]:
        """A temporary path to write; renamed over the partition's file when the block succeeds.
        Temporaries that killed writers left beside the file are removed first; the file follows
        the umask of the run that writes it."""
        directory = self.partition_dir(asset, **keys)
        directory.mkdir(parents=True, exist_ok=True)
        remove_dead_temporaries(directory / filename)
        with atomic_write(directory / filename, keep_mode=False) as temporary:
            yield temporary

    @staticmethod
    def shard_asset(asset: str) -> str:
        """Where the parts of a sharded step write, as an asset name of this home."""
        return f"shards/{asset}"

    def drop_shards(self, asset: str, **keys: str) -> None:
        """Remove the parts of ``asset``'s partition, once merged."""
        directory = self.partition_dir(self.shard_asset(asset), **keys)
        shutil.rmtree(directory, ignore_errors=True)
        for parent in directory.parents:
            if parent == self.home or not parent.exists() or any(parent.iterdir()):
                break
            parent.rmdir()

    def write_table(self, asset: str, table: pa.Table, **keys: str) -> Path:
        with self.writing(asset, **keys) as path:
            pq.write_table(table, path, compression="zstd")
        return self.data_path(asset, **keys)

    def write_report(self, asset: str, report: dict, **keys: str) -> None:
        with self.writing(asset, REPORT_FILE, **keys) as path:
            path.write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")

    def read_report(self, asset: str, **keys: str) -> dict:
        path = self.partition_dir(asset, **keys) / REPORT_FILE
        if not path.exists():
            raise FileNotFoundError(
                f"{asset} {keys or ''} has not been materialized in {self.home}"
            )
        return json.loads(path.read_text())

    def partitions(self, asset: str) -> list[dict[str, str]]:
        """The partition keys of an asset that have data, sorted."""
        root = self.home / asset
        found = []
        for path in sorted(root.rglob(DATA_FILE)) if root.exists() else ():
            parts = path.parent.relative_to(root).parts
            found.append(dict(part.split("=", 1) for part in parts))
        return found

    def view_sql(self, asset: str) -> str | None:
        """The ``SELECT`` behind an asset's view, or None while it has no data. Columns are
        matched by name across partitions: a partition written before a column was added reads
        it as null instead of hiding it from the others."""
        partitions = self.partitions(asset)
        if not partitions:
            return None
        depth = len(partitions[0])
        pattern = self.home / asset / Path(*(["*"] * depth)) / DATA_FILE
        source = sql_string(str(pattern))
        hive = str(depth > 0).lower()
        return f"SELECT * FROM read_parquet({source}, hive_partitioning = {hive}, union_by_name = true)"

    def create_views(self, connection: duckdb.DuckDBPyConnection) -> list[str]:
        created = []
        for asset in VIEW_ASSETS:
            sql = self.view_sql(asset)
            if sql is None:
                connection.execute(f"DROP VIEW IF EXISTS {asset}")
                continue
            connection.execute(f"CREATE OR REPLACE VIEW {asset} AS {sql}")
            created.append(asset)
        for alias, asset in VIEW_ALIASES.items():
            if asset in created:
                connection.execute(f"CREATE OR REPLACE VIEW {alias} AS SELECT * FROM {asset}")
                created.append(alias)
            else:
                connection.execute(f"DROP VIEW IF EXISTS {alias}")
        return created

    def duckdb_settings(self) -> dict[str, str | int]:
        """Spilling to ``<home>/.duckdb_spill``; threads from ``CHRONOSCOPE_DUCKDB_THREADS``
        (default: DuckDB's, one per core) and the memory bound from
        ``CHRONOSCOPE_DUCKDB_MEMORY_LIMIT`` (DuckDB's syntax, e.g. ``4GB``; default: DuckDB's,
        80% of RAM). A query over the bound spills, or fails with DuckDB's out-of-memory error
        naming the setting."""
        settings: dict[str, str | int] = {"temp_directory": str(self.home / ".duckdb_spill")}
        threads = os.environ.get("CHRONOSCOPE_DUCKDB_THREADS", "0")
        if not threads.isdigit():
            raise ValueError(f"CHRONOSCOPE_DUCKDB_THREADS={threads!r} is not a whole number")
        if int(threads) > 0:
            settings["threads"] = int(threads)
        if memory_limit := os.environ.get("CHRONOSCOPE_DUCKDB_MEMORY_LIMIT", "").strip():
            settings["memory_limit"] = memory_limit
        return settings

    def connect(self, *, views: bool = False) -> duckdb.DuckDBPyConnection:
        """A private in-memory DuckDB (reads never lock the DuckDB file), spilling under the home
        within ``duckdb_settings``. ``views`` adds the warehouse views."""
        connection = duckdb.connect(":memory:", config=self.duckdb_settings())
        if views:
            self.create_views(connection)
        return connection

    def reader(self) -> duckdb.DuckDBPyConnection:
        """The warehouse views on a DuckDB that cannot open any file, URL or extension itself.

        pyarrow reads the Parquet files and hands them to DuckDB, so the query is read-only by
        construction: ``COPY ... TO``, ``read_csv``, ``glob``, ``ATTACH`` and ``INSTALL`` all
        fail, and ``lock_configuration`` keeps a query from turning access back on.
        """
        connection = duckdb.connect(
            ":memory:", config={**READ_ONLY_CONFIG, **self.duckdb_settings()}
        )
        created = {}
        for asset in VIEW_ASSETS:
            dataset = self.dataset(asset)
            if dataset is not None:
                connection.register(asset, dataset)
                created[asset] = dataset
        for alias, asset in VIEW_ALIASES.items():
            if asset in created:
                connection.register(alias, created[asset])
        connection.execute("SET lock_configuration = true")
        return connection

    def dataset(self, asset: str) -> ds.Dataset | None:
        """An asset's partitions as one Arrow dataset (partition keys as columns, columns
        matched by name as in ``view_sql``), or None."""
        partitions = self.partitions(asset)
        if not partitions:
            return None
        fields = [
            pa.field(key, pa.int64() if key == "snapshot_year" else pa.string())
            for key in partitions[0]
        ]
        files = [str(self.data_path(asset, **keys)) for keys in partitions]
        schema = pa.unify_schemas([pq.read_schema(file) for file in files])
        if not fields:
            return ds.dataset(files, schema=schema, format="parquet")
        return ds.dataset(
            files,
            schema=pa.unify_schemas([schema, pa.schema(fields)]),
            format="parquet",
            partitioning=ds.partitioning(pa.schema(fields), flavor="hive"),
            partition_base_dir=str(self.home / asset),
        )

    def query(self, sql: str) -> pa.Table:
        with self.connect(views=True) as connection:
            return connection.sql(sql).to_arrow_table()


def shard_key(index: int, count: int) -> str:
    """The ``shard`` key of part ``index`` of ``count`` (sorts in order as text)."""
    return f"{index:05d}-of-{count:05d}"


def write_query(
    connection: duckdb.DuckDBPyConnection,
    sql: str | Sequence[str],
    path: Path,
    schema: pa.Schema | None = None,
) -> int:
    """Stream a query's rows (or several queries', one after another), in order, into one
    Parquet file; return the row count.

    pyarrow writes the file (not DuckDB's parallel writer) in row groups of a fixed size, so
    the bytes depend only on the rows: the same rows give an identical file, whatever query
    (a whole table, or sorted parts of it) gave them.
    """
    queries = [sql] if isinstance(sql, str) else sql
    readers = (connection.sql(query).to_arrow_reader(QUERY_ROW_GROUP_ROWS) for query in queries)
    first = next(readers)
    schema = schema or first.schema
    with RowGroupWriter(path, schema, QUERY_ROW_GROUP_ROWS) as writer:
        for reader in chain([first], readers):
            for batch in reader:
                writer.write(batch.cast(schema) if batch.schema != schema else batch)
    return writer.rows


def parquet_source(path: Path) -> str:
    """SQL for reading one Parquet file, its columns only (no hive columns from its path)."""
    return f"read_parquet({sql_string(str(path))}, hive_partitioning = false)"
