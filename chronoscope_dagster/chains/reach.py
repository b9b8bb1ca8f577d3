"""What the chains rooted in one shard of a snapshot's subjects can reach, loaded by DuckDB.

A chain starts from a root subject (turn 1's) and goes on to subjects its facts lead to: the
values of the root (whose kind decides a pronoun), the bridged hops of
``bridged_multi_pid`` (a value's value's value) and the related subjects of
``cross_entity_then`` (holders of one of the root's values of a relation, and those values).
A shard's index holds every fact of its roots, and of the values and hops only what the
families ask of them; the related subjects, which a shard of thousands of roots draws by the
hundred thousand, are written apart once and indexed a chunk of roots at a time
(``ChunkedRelated``). DuckDB computes over the whole snapshot the few things that are not a
subject's own: which labels two subjects share, when an entity first appears in a dated
statement, and who holds a value (``HolderGroup``), once per snapshot
(``write_snapshot_index``), and in the same pass each shard's scope: the rows of those tables
and of the sources that its chains can reach, which its step reads instead of the whole
snapshot's (each process of the step builds its part's index from it). An index so loaded
decides every question its chains ask as the whole snapshot's would, so a shard's chains do
not depend on the shard count, while its time and memory follow its roots and one chunk, not
the snapshot.
"""

from __future__ import annotations

import sys
import tempfile
from array import array
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
from duckdb.sqltypes import BOOLEAN, TINYINT, VARCHAR

from chronoscope_dagster.chains.evidence import python_dates
from chronoscope_dagster.chains.facts import (
    INTERVAL_COLUMNS,
    HolderGroup,
    RelatedChunk,
    Shard,
    SnapshotFacts,
    SnapshotWide,
    naming,
)
from chronoscope_dagster.chains.families.bridged_multi_pid import BRIDGES
from chronoscope_dagster.chains.families.cross_entity_then import DIGIT, MAX_RELATED, RELATIONS
from chronoscope_dagster.sql import sql_list, sql_string
from chronoscope_dagster.wikidata.extract import LIFESPANS_SCHEMA
from chronoscope_dagster.wikidata.properties import default_catalog

SOURCES = ("truth", "labels", "fact_intervals", "lifespans", "present_day")
SNAPSHOT_TABLES = ("gold_rows", "undecided_rows", "subject_names", "relation_rows",
                   "holder_groups", "first_seen", "subject_order", "unnameable")  # fmt: skip
SCOPES = "scopes"
"""The directory of a snapshot index (``write_snapshot_index``) that holds each shard's
scope: the rows of the ``SCOPE_TABLES`` its steps can reach, a directory per shard."""
SCOPE_TABLES = {"gold_rows": "scope_gold", "undecided_rows": "scope_undecided",
                "subject_names": "scope_shared", "relation_rows": "scope_relation_rows",
                "holder_groups": "scope_holder_groups", "first_seen": "scope_first_seen",
                "subject_order": "scope_subject_order", "present_day": "scope_present",
                "fact_intervals": "scope_intervals", "labels": "scope_labels",
                "lifespans": "scope_lifespan_rows"}  # fmt: skip
"""The snapshot tables and ``SOURCES`` a shard step reads from its shard's scope, by the
table ``_write_scopes`` computes each from (``src_truth`` is read by the snapshot index
only, ``unnameable`` is one count of the whole snapshot)."""
HOP_PIDS = tuple(sorted({pid for targets in BRIDGES.values() for pid in targets}))
LIFESPAN_COLUMNS = ("qid", "bound", "date", "precision")
ROOTS_PER_PART = 100
SCOPE_PASS_GOLDS_PER_MB = 1_667
"""About how many golds of roots (decidable truth rows) the shards of one pass of
``_write_scopes`` hold per MB of DuckDB's memory limit (500,000 per 300MB): the 50k linked
dump's 598,594 in one pass peaked within a 300MB limit, the 400k dump's 5.05M did not."""
GOLDS_PER_CHUNK = 80_000
"""About how many truth rows of related subjects (``cross_entity_then``) a shard's index holds
at a time: consecutive parts of ``ROOTS_PER_PART`` roots make a chunk up to this many (each
part counted alone, so a chunk shares more than this count says), whatever the dump's size."""
DEFAULT_ROOT_ROWS_PER_SHARD = 130_000
"""Truth rows of root subjects per shard by default: about 10,000 roots of the linked dumps
(12.7 rows a root: 631,156 rows of 49,757 roots at 50k entities, 5 shards), whose steps of
10,000 roots peaked at 486 MB at 50k, 540 MB at 200k and 574 MB at 400k with a 300MB DuckDB
limit (README, "Chain generation")."""


def root_rows_sql(truth: str) -> str:
    """The count of the truth rows (SQL of ``truth``'s rows) of chain properties: the facts of
    the roots chains may start from, which a shard's index holds and shards divide. An item
    whose only chain property is ``instance of`` (most of a real dump) is a root of one row."""
    return f"SELECT count(*) FROM {truth} WHERE pid IN ({sql_list(default_catalog().chain_pids)})"


ROOT_ROWS_PER_WORKER = 50_000
"""A shard step starts a process per core only while each gets at least this many truth rows
of roots: below, a process's start and its selection cost more than it saves."""


def worker_count(rows: int, cores: int) -> int:
    """Processes for a shard step of ``rows`` truth rows of roots on ``cores`` cores."""
    return max(1, min(cores, rows // ROOT_ROWS_PER_WORKER))


def shard_count(rows: int, rows_per_shard: int, at_least: int = 1) -> int:
    """How many shards hold ``rows`` truth rows of roots at most ``rows_per_shard`` each
    (about: a hash of the subject divides them), and at least ``at_least``."""
    return max(at_least, -(-rows // rows_per_shard))


def scoped(count: int) -> bool:
    """Whether the steps of ``count`` shards each read their shard's scope of the snapshot
    index (``write_snapshot_index``), and their roots only: the only shard reads it whole."""
    return count > 1


def source_facts(
    year: str,
    sources: Mapping[str, str],
    shard: Shard | None = None,
    *,
    config: Mapping[str, str | int] | None = None,
    snapshot_index: Path | None = None,
    scope: int | None = None,
) -> SnapshotFacts:
    """The index of one snapshot for the chains rooted in ``shard`` (every subject without
    one), its ``SOURCES`` read by the SQL ``sources`` (by name) on a DuckDB of settings
    ``config``; the snapshot-wide tables from ``snapshot_index`` (``write_snapshot_index``)
    when given, else computed here; with a ``scope``, the index of the shard of that index
    whose scope it wrote (``shard`` is then one of its parts: ``Shard.split``), from the
    scope's rows only."""
    pids = default_catalog().chain_pids
    if snapshot_index is not None:
        tables = _index_relations(snapshot_index)
        if scope is not None:
            scoped = scope_relations(snapshot_index, scope)
            tables.update(scoped)
            sources = {name: scoped.get(name, source) for name, source in sources.items()}
    with _source_views(sources, config) as connection:
        if snapshot_index is None:
            _create_snapshot_tables(connection, pids)
        else:
            _create_views(connection, tables)
        reached = _reach(connection, shard or Shard(0, 1), pids, int(year), config)
    return SnapshotFacts(int(year), **reached)


def _parquet(path: Path) -> str:
    return f"read_parquet({sql_string(str(path))})"


def _index_relations(snapshot_index: Path) -> dict[str, str]:
    """SQL reading each of the ``SNAPSHOT_TABLES`` of a snapshot index, by name."""
    return {name: _parquet(snapshot_index / f"{name}.parquet") for name in SNAPSHOT_TABLES}


def _create_views(connection: duckdb.DuckDBPyConnection, relations: Mapping[str, str]) -> None:
    for name, relation in relations.items():
        connection.execute(f"CREATE VIEW {name} AS SELECT * FROM {relation}")


def write_snapshot_index(
    sources: Mapping[str, str],
    directory: Path,
    *,
    shards: int = 1,
    config: Mapping[str, str | int] | None = None,
) -> list[range]:
    """Compute once what every shard of a snapshot reads of the whole snapshot
    (``SNAPSHOT_TABLES``: the decidable truth rows, the subjects' names, the holder groups,
    first appearances) into Parquet files of ``directory``, so a shard step only joins its
    roots against them; with several ``shards``, each one's scope too (``_write_scopes``), so
    a step reads its shard's rows rather than the snapshot's: its time and memory then
    follow the shard, not the snapshot. Returns the shards of each scope pass (none for one
    shard)."""
    directory.mkdir(parents=True, exist_ok=True)
    with _source_views(sources, config) as connection:
        _create_snapshot_tables(connection, default_catalog().chain_pids)
        for name in SNAPSHOT_TABLES:
            path = sql_string(str(directory / f"{name}.parquet"))
            connection.execute(f"COPY {name} TO {path} (FORMAT parquet, COMPRESSION zstd)")
    return _write_scopes(sources, directory, shards, config=config) if scoped(shards) else []


def _write_scopes(
    sources: Mapping[str, str],
    snapshot_index: Path,
    count: int,
    *,
    config: Mapping[str, str | int] | None = None,
) -> list[range]:
    """Per shard of ``count``, every row its chains can reach of the ``SCOPE_TABLES``, from
    the snapshot index's files: what the index of its roots holds, and of its related
    subjects, the rows of its roots' relations and holder blocks, and its subjects' order.
    Each part of the shard (``Shard.split``) reaches a subset of it, so an index built from
    the scope is the one built from the snapshot. Consecutive shards of about
    ``SCOPE_PASS_GOLDS_PER_MB`` golds per MB of DuckDB's memory limit share a pass over the
    snapshot, keyed by shard, so a pass fits the limit and the snapshot is read once per pass,
    not once per shard; Parquet files per table and shard (``scope_relations``). Returns the
    shards of each pass."""
    with duckdb.connect(":memory:", config=dict(config or {})) as connection:
        [(total, limit)] = connection.execute(
            f"""SELECT any_value(total), parse_formatted_bytes(current_setting('memory_limit'))
                FROM {_parquet(snapshot_index / "subject_order.parquet")}"""
        ).fetchall()
    golds_per_pass = SCOPE_PASS_GOLDS_PER_MB * limit // 1_000_000
    per_pass = max(1, golds_per_pass * count // max(total or 1, 1))
    passes = [range(first, min(first + per_pass, count)) for first in range(0, count, per_pass)]
    for passed in passes:
        with _source_views(sources, config) as connection:
            connection.execute("SET preserve_insertion_order = false")
            _create_views(connection, _index_relations(snapshot_index))
            _create_scopes(connection, count, passed)
            for name, table in SCOPE_TABLES.items():
                directory = snapshot_index / SCOPES / name
                directory.mkdir(parents=True, exist_ok=True)
                connection.execute(
                    f"""COPY {table} TO {sql_string(str(directory))} (FORMAT parquet,
                        PARTITION_BY (part), OVERWRITE_OR_IGNORE, COMPRESSION zstd)"""
                )
                for shard in passed:
                    if not (empty := directory / f"part={shard}").exists():
                        empty.mkdir()
                        path = sql_string(str(empty / "data_0.parquet"))
                        connection.execute(
                            f"""COPY (SELECT * EXCLUDE (part) FROM {table} WHERE false)
                                TO {path} (FORMAT parquet)"""
                        )
    return passes


def _create_scopes(connection: duckdb.DuckDBPyConnection, count: int, shards: range) -> None:
    """The ``SCOPE_TABLES``' tables of the ``shards`` of ``count``, keyed by shard (``part``)."""
    connection.execute(f"""CREATE TEMP TABLE roots AS
        SELECT qid, {_shard_of(count)} AS part FROM subject_order
        WHERE {_shard_of(count)} BETWEEN {shards[0]} AND {shards[-1]}""")
    _create_needed_holders(connection)
    _create_core(connection, key="part")
    _index_scope(
        connection,
        "SELECT part, qid FROM roots",
        f"""SELECT c.part, c.qid AS subject_qid, p.pid FROM core c ANTI JOIN roots r USING (part, qid)
            CROSS JOIN (SELECT unnest([{sql_list(("P31", *HOP_PIDS))}]) AS pid) p
            UNION SELECT h.part, h.subject_qid, h.pid FROM holder_pairs h
            ANTI JOIN roots r ON r.part = h.part AND r.qid = h.subject_qid""",
        key="part",
    )
    _create_index(connection, default_catalog().chain_pids, prefix="scope", key="part")
    connection.execute("""CREATE TEMP TABLE scope_relation_rows AS
        SELECT r.part, g.* FROM relation_rows g JOIN roots r ON r.qid = g.subject_qid""")
    connection.execute("""CREATE TEMP TABLE scope_holder_groups AS
        SELECT DISTINCT part, relation, value_qid, anchor, subject_qid, position, size
        FROM needed_holders""")
    connection.execute("""CREATE TEMP TABLE scope_subject_order AS
        SELECT r.part, o.* FROM subject_order o JOIN roots r USING (qid)""")


def scope_relations(snapshot_index: Path, shard: int) -> dict[str, str]:
    """SQL of each of the ``SCOPE_TABLES`` of one shard's scope in a snapshot index."""
    return {
        name: f"read_parquet({sql_string(f'{snapshot_index / SCOPES / name}/part={shard}/*.parquet')}"
        ", hive_partitioning = false)"
        for name in SCOPE_TABLES
    }


def indexed_root_count(
    snapshot_index: Path, *, config: Mapping[str, str | int] | None = None
) -> int:
    """The root subjects of a snapshot, from its index (``write_snapshot_index``): the
    subjects of its decidable truth rows."""
    path = sql_string(str(snapshot_index / "gold_rows.parquet"))
    with duckdb.connect(":memory:", config=dict(config or {})) as connection:
        [(count,)] = connection.execute(
            f"SELECT count(DISTINCT subject_qid) FROM read_parquet({path})"
        ).fetchall()
    return count


@contextmanager
def _source_views(
    sources: Mapping[str, str], config: Mapping[str, str | int] | None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A private in-memory DuckDB of settings ``config`` with each of ``sources`` as
    ``src_<name>``."""
    with duckdb.connect(":memory:", config=dict(config or {})) as connection:
        for name, source in sources.items():
            connection.execute(f"CREATE VIEW src_{name} AS SELECT * FROM {source}")
        yield connection


def table_facts(
    snapshot_year: int,
    truth: pa.Table,
    labels: pa.Table,
    present_day: pa.Table | None = None,
    pids: tuple[str, ...] | None = None,
    *,
    intervals: pa.Table | None = None,
    lifespan_rows: pa.Table | None = None,
    shard: Shard | None = None,
) -> SnapshotFacts:
    """The index of a snapshot given as tables (``fact_intervals`` and ``lifespans`` rows may
    be left out: no coverage, no lifespan), loaded as from files."""
    if "uncertain_value_qids" not in truth.column_names:
        truth = truth.append_column(
            "uncertain_value_qids", pa.nulls(truth.num_rows, pa.list_(pa.string()))
        )
    if intervals is None:
        intervals = INTERVALS_SCHEMA.empty_table()
    if lifespan_rows is None:
        lifespan_rows = LIFESPANS_SCHEMA.empty_table()
    if present_day is None:
        present_day = PRESENT_SCHEMA.empty_table()
    with duckdb.connect(":memory:") as connection:
        sources = {"truth": truth, "labels": labels, "fact_intervals": intervals,
                   "lifespans": lifespan_rows, "present_day": present_day}  # fmt: skip
        for name, table in sources.items():
            connection.register(f"src_{name}", table)
        pids = pids or default_catalog().chain_pids
        _create_snapshot_tables(connection, pids)
        reached = _reach(connection, shard or Shard(0, 1), pids, snapshot_year, None)
    return SnapshotFacts(snapshot_year, **reached)


def _reach(
    connection: duckdb.DuckDBPyConnection,
    shard: Shard,
    pids: tuple[str, ...],
    year: int,
    config: Mapping[str, str | int] | None,
) -> dict:
    """What the index of ``shard`` is built from (``SnapshotFacts``' arguments but the year),
    from the relations ``src_<name>`` of ``SOURCES`` and the ``SNAPSHOT_TABLES`` of the
    properties ``pids`` on ``connection``; the related subjects of its roots are written apart
    for ``ChunkedRelated``. The caller closes the connection before building the index, so
    that DuckDB's memory is returned first."""
    unnameable, roots = _create_roots(connection, shard)
    _create_needed_holders(connection)
    _create_core(connection)
    related = ChunkedRelated.written(connection, pids, year, config)
    _index_scope(
        connection,
        "SELECT qid FROM roots",
        f"""SELECT c.qid AS subject_qid, p.pid FROM core c ANTI JOIN roots r ON r.qid = c.qid
            CROSS JOIN (SELECT unnest([{sql_list(("P31", *HOP_PIDS))}]) AS pid) p""",
    )
    index = _fetch_index(connection, pids)
    wide = SnapshotWide(
        roots=roots if scoped(shard.count) else None,
        shared_label_subjects=index.pop("shared"),
        unnameable_subjects=unnameable,
        first_seen=index.pop("first_seen"),
        related=related,
    )
    return {**index, "wide": wide}


def _index_scope(
    connection: duckdb.DuckDBPyConnection,
    subjects: str | None,
    pairs: str | None,
    key: str | None = None,
) -> None:
    """What an index holds: every fact of the subjects (SQL of ``qid``, distinct), and of
    other subjects only the (``subject_qid``, ``pid``) pairs (SQL, distinct), as
    ``index_subjects``, ``index_pairs`` and all of them ``reached``; with a ``key`` column in
    both, one index per key. Both are kept as sets, so an index joins them."""
    keyed = f"{key}, " if key else ""
    typed = f"NULL::BIGINT AS {key}, " if key else ""
    connection.execute(f"""CREATE OR REPLACE TEMP TABLE index_subjects AS SELECT DISTINCT * FROM (
        {subjects or f"SELECT {typed}NULL::VARCHAR AS qid WHERE false"})""")
    connection.execute(f"""CREATE OR REPLACE TEMP TABLE index_pairs AS SELECT DISTINCT * FROM (
        {pairs or f"SELECT {typed}NULL::VARCHAR AS subject_qid, NULL::VARCHAR AS pid WHERE false"})""")
    connection.execute(f"""CREATE OR REPLACE TEMP TABLE reached AS
        SELECT {keyed}qid FROM index_subjects
        UNION SELECT DISTINCT {keyed}subject_qid FROM index_pairs""")


INDEX_TABLES = {"gold_rows": "index_gold", "undecided": "index_undecided",
                "present_day": "index_present", "intervals": "index_intervals",
                "labels": "index_labels", "lifespan_rows": "index_lifespan_rows"}  # fmt: skip
"""``SnapshotFacts``' table arguments, by the ``_create_index`` table that holds each."""


SNAPSHOT_RELATIONS = {"gold": "gold_rows", "undecided": "undecided_rows",
                      "present": "src_present_day", "intervals": "src_fact_intervals",
                      "labels": "src_labels", "lifespan_rows": "src_lifespans",
                      "first_seen": "first_seen", "shared": "subject_names"}  # fmt: skip
"""What ``_create_index`` reads each of its tables from by default: the snapshot's."""
UNION_RELATIONS = {name: f"index_{name}" for name in SNAPSHOT_RELATIONS}
"""The tables of an index (``_create_index``'s default prefix), which the chunks of
``ChunkedRelated`` are indexed from: each chunk's scope is a part of that index's."""


def _create_index(
    connection: duckdb.DuckDBPyConnection,
    pids: tuple[str, ...],
    *,
    relations: Mapping[str, str] = SNAPSHOT_RELATIONS,
    prefix: str = "index",
    key: str | None = None,
) -> None:
    """The tables of an index of what ``_index_scope`` set, read from ``relations`` (by the
    ``SNAPSHOT_RELATIONS`` names): ``<prefix>_<name>`` for each of them (``INDEX_TABLES``,
    ``first_seen``, and ``shared``, each subject's shared-label flag). With a ``key``, one
    index per value of the scope's ``key`` column, which every table leads with. The rules of
    what an index holds are here only: which rows of a reached subject, and the labels,
    lifespans and first appearances of the entities its rows name."""
    keyed = f"{key}, " if key else ""

    def reached_rows(relation: str, columns: tuple[str, ...] | None = None) -> str:
        picked = ", ".join(f"x.{c}" for c in columns) if columns else "x.*"
        subjects_key = f"c.{key}, " if key else ""
        pairs_key = f"p.{key}, " if key else ""
        return f"""SELECT {subjects_key}{picked} FROM {relations[relation]} x
            JOIN index_subjects c ON c.qid = x.subject_qid
            UNION ALL
            SELECT {pairs_key}{picked} FROM {relations[relation]} x
            JOIN index_pairs p ON p.subject_qid = x.subject_qid AND p.pid = x.pid"""

    def table(name: str, sql: str) -> None:
        connection.execute(f"CREATE OR REPLACE TEMP TABLE {prefix}_{name} AS {sql}")

    by_anchor = "ORDER BY anchor NULLS FIRST, subject_qid, pid"
    table("gold", f"{reached_rows('gold')} {by_anchor}")
    table("undecided", f"{reached_rows('undecided')} {by_anchor}")
    table("present", reached_rows("present", ("subject_qid", "pid", "value_qids")))
    table(
        "intervals",
        f"""SELECT * FROM ({reached_rows("intervals", INTERVAL_COLUMNS)})
        WHERE pid IN ({sql_list(pids)})""",
    )
    connection.execute(f"""CREATE OR REPLACE TEMP TABLE bounded AS
        SELECT {keyed}qid FROM reached UNION SELECT {keyed}unnest(value_qids) FROM {prefix}_gold""")
    table(
        "labels",
        f"""WITH named AS (
            SELECT {keyed}qid FROM bounded
            UNION SELECT {keyed}unnest(value_qids) FROM {prefix}_present
            UNION SELECT {keyed}value_qid FROM {prefix}_intervals)
        SELECT {keyed}l.qid, l.label, l.aliases, l.description
        FROM {relations["labels"]} l JOIN named n USING (qid)""",
    )
    lifespan_columns = ", ".join(f"l.{c}" for c in LIFESPAN_COLUMNS)
    table(
        "lifespan_rows",
        f"""SELECT {keyed}{lifespan_columns}
        FROM {relations["lifespan_rows"]} l JOIN bounded b USING (qid)""",
    )
    table(
        "first_seen",
        f"""SELECT {keyed}f.qid, f.first
        FROM {relations["first_seen"]} f JOIN bounded b USING (qid)""",
    )
    table(
        "shared",
        f"""SELECT {keyed}s.qid, s.shared
        FROM {relations["shared"]} s JOIN reached r USING (qid)""",
    )


def _fetch_index(connection: duckdb.DuckDBPyConnection, pids: tuple[str, ...]) -> dict:
    """``_create_index`` as ``SnapshotFacts``' arguments (``_read_index``)."""
    _create_index(connection, pids)
    return _read_index(connection)


def _read_index(connection: duckdb.DuckDBPyConnection) -> dict:
    """The tables ``_create_index`` makes as ``SnapshotFacts``' arguments: its tables, the
    shared-label subjects (``shared``) and ``first_seen``."""
    index = {
        argument: connection.sql(f"SELECT * FROM {table}").to_arrow_table()
        for argument, table in INDEX_TABLES.items()
    }
    shared = frozenset(
        qid for (qid,) in connection.execute("SELECT qid FROM index_shared WHERE shared").fetchall()
    )
    return {**index, "shared": shared, "first_seen": _first_seen(connection)}


CHUNK_TABLES = {
    "index_gold": "ORDER BY anchor NULLS FIRST, subject_qid, pid",
    "index_undecided": "ORDER BY anchor NULLS FIRST, subject_qid, pid",
    "index_present": "", "index_intervals": "", "index_labels": "",
    "index_lifespan_rows": "", "index_first_seen": "", "index_shared": "",
    "chunk_pairs": "", "chunk_holders": "",
}  # fmt: skip
"""The files ``ChunkedRelated`` writes, each a table of ``_create_index`` (then the order
``_create_index`` gives it) or of the chunks' pairs and holder groups, by ``chunk``."""


class ChunkedRelated:
    """The related subjects of a shard's roots (``cross_entity_then``), a chunk of roots (in
    QID order, about ``GOLDS_PER_CHUNK`` truth rows of related subjects) at a time: the shard
    step writes what each chunk needs of the snapshot once, by chunk (Parquet files in a
    directory of its own, removed with this object), and ``load`` indexes one chunk's rows,
    so the shard holds one chunk's related subjects rather than all of them, and a chunk's
    load reads its own rows rather than every chunk's."""

    def __init__(
        self,
        directory: tempfile.TemporaryDirectory,
        chunks: dict[str, int],
        pids: tuple[str, ...],
        year: int,
        config: Mapping[str, str | int] | None,
    ):
        self.directory, self.chunks, self.pids, self.year = directory, chunks, pids, year
        self.config = dict(config or {})

    @classmethod
    def written(
        cls,
        connection: duckdb.DuckDBPyConnection,
        pids: tuple[str, ...],
        year: int,
        config: Mapping[str, str | int] | None,
    ) -> ChunkedRelated:
        """Write the related subjects of the ``roots`` on ``connection`` (with their
        ``needed_holders`` and ``holder_pairs``): their facts, and per chunk of roots the
        pairs and the holder groups it draws."""
        spill = (config or {}).get("temp_directory")
        if spill:
            Path(str(spill)).mkdir(parents=True, exist_ok=True)
        directory = tempfile.TemporaryDirectory(prefix="chain-related-", dir=spill or None)
        connection.execute("""CREATE TEMP TABLE part_pairs AS
            SELECT part, subject_qid, pid FROM holder_pairs h
            WHERE NOT EXISTS (SELECT 1 FROM roots r WHERE r.qid = h.subject_qid)""")
        _index_scope(connection, None, "SELECT DISTINCT subject_qid, pid FROM part_pairs")
        _create_index(connection, pids)
        connection.execute(f"""CREATE TEMP TABLE part_chunks AS
            WITH golds AS (
                SELECT p.part, count(*) AS golds FROM part_pairs p
                JOIN index_gold g USING (subject_qid, pid) GROUP BY p.part)
            SELECT part, CAST(sum(coalesce(golds, 0)) OVER (ORDER BY part) AS BIGINT)
                         // {GOLDS_PER_CHUNK} AS chunk
            FROM (SELECT DISTINCT part FROM roots) LEFT JOIN golds USING (part)""")
        connection.execute("""CREATE TEMP TABLE chunk_pairs AS
            SELECT DISTINCT c.chunk, p.subject_qid, p.pid FROM part_pairs p
            JOIN part_chunks c USING (part)""")
        connection.execute("""CREATE TEMP TABLE chunk_holders AS
            SELECT DISTINCT c.chunk, h.* EXCLUDE (part) FROM needed_holders h
            JOIN part_chunks c USING (part)""")
        _index_scope(connection, None, "SELECT * FROM chunk_pairs", key="chunk")
        _create_index(
            connection, pids, relations=UNION_RELATIONS, prefix="chunk_index", key="chunk"
        )
        for name in CHUNK_TABLES:
            path = sql_string(str(Path(directory.name) / f"{name}.parquet"))
            source = name if name.startswith("chunk_") else f"chunk_{name}"
            connection.execute(
                f"COPY (SELECT * FROM {source} ORDER BY chunk) TO {path} (FORMAT parquet)"
            )
        chunks = dict(
            connection.execute(
                "SELECT qid, chunk FROM roots JOIN part_chunks USING (part)"
            ).fetchall()
        )
        return cls(directory, chunks, pids, year, config)

    def chunk_of(self, root: str) -> int:
        return self.chunks.get(root, -1)

    def load(self, chunk: int) -> RelatedChunk:
        """The index of one chunk's related subjects: only that chunk's rows of each file
        (they are written in chunk order, so DuckDB reads only the row groups of the chunk)."""
        with duckdb.connect(":memory:", config=self.config) as connection:
            for name, order in CHUNK_TABLES.items():
                path = sql_string(str(Path(self.directory.name) / f"{name}.parquet"))
                connection.execute(
                    f"""CREATE VIEW {name} AS SELECT * EXCLUDE (chunk) FROM read_parquet({path})
                        WHERE chunk = {chunk} {order}"""
                )
            holders = _holders(connection, "SELECT * FROM chunk_holders")
            subjects = frozenset(
                q for (q,) in connection.execute("SELECT subject_qid FROM chunk_pairs").fetchall()
            )
            if not subjects:
                return RelatedChunk(holders)
            index = _read_index(connection)
        wide = SnapshotWide(
            roots=None,
            shared_label_subjects=index.pop("shared"),
            unnameable_subjects=0,
            first_seen=index.pop("first_seen"),
            related=NO_RELATED,
        )
        return RelatedChunk(holders, SnapshotFacts(self.year, **index, wide=wide), subjects)


class _NoRelated:
    """The related source of an index that draws no related subjects."""

    def chunk_of(self, root: str) -> int:
        return -1

    def load(self, chunk: int) -> RelatedChunk:
        return RelatedChunk({})


NO_RELATED = _NoRelated()


def _create_gold_rows(connection: duckdb.DuckDBPyConnection, pids: tuple[str, ...]) -> None:
    """``gold_rows``: the truth rows with a canonical value of the properties ``pids`` and no
    value of unknown validity; ``undecided_rows``: the (subject, property, anchor) where a
    value may or may not hold, with the reason (``unknown_start`` where a statement of the
    pair has no known start, else ``unknown_end``)."""
    wanted = sql_list(pids)
    connection.execute(f"""CREATE TEMP TABLE gold_rows AS
        SELECT anchor, subject_qid, pid, value_qids, canonical_value_qid FROM src_truth
        WHERE pid IN ({wanted}) AND canonical_value_qid IS NOT NULL
          AND len(coalesce(uncertain_value_qids, [])) = 0""")  # fmt: skip
    connection.execute(f"""CREATE TEMP TABLE undecided_rows AS
        WITH unknown_start AS (
            SELECT DISTINCT subject_qid, pid FROM src_fact_intervals
            WHERE pid IN ({wanted}) AND start_unknown)
        SELECT t.anchor, t.subject_qid, t.pid,
               CASE WHEN u.pid IS NULL THEN 'unknown_end' ELSE 'unknown_start' END AS reason
        FROM src_truth t LEFT JOIN unknown_start u USING (subject_qid, pid)
        WHERE t.pid IN ({wanted}) AND len(coalesce(t.uncertain_value_qids, [])) > 0""")  # fmt: skip


def _create_snapshot_tables(connection: duckdb.DuckDBPyConnection, pids: tuple[str, ...]) -> None:
    """The ``SNAPSHOT_TABLES`` of the snapshot whose ``SOURCES`` are ``src_<name>`` on
    ``connection``, for the properties ``pids``."""
    _create_gold_rows(connection, pids)
    _create_subject_names(connection)
    _create_holder_groups(connection)
    _create_subject_order(connection)
    connection.execute("""CREATE TEMP TABLE unnameable AS
        SELECT count(*) FILTER (WHERE unnameable) AS subjects FROM subject_names""")
    connection.execute("""CREATE TEMP TABLE first_seen AS
        WITH dated AS (
            SELECT subject_qid AS qid, valid_from FROM src_fact_intervals
            WHERE valid_from IS NOT NULL AND NOT is_timeless
            UNION ALL
            SELECT value_qid, valid_from FROM src_fact_intervals
            WHERE valid_from IS NOT NULL AND NOT is_timeless)
        SELECT qid, min(valid_from) AS first FROM dated GROUP BY qid""")  # fmt: skip


def _create_subject_order(connection: duckdb.DuckDBPyConnection) -> None:
    """``subject_order``: per subject with a gold, where its golds start (``start``) among the
    ``total`` golds of the snapshot in its locality order, which ``Shard`` cuts in runs.
    Among a subject's values of the ``cross_entity_then`` relations, its hub is the one the
    most subjects hold (an employer, a party, a country), and its region the hub's own hub
    (the employer's country), else the hub. The order is a hash of the region, of the hub,
    of the value a MinHash picks among those values (each a hash of the QID where the
    subject has none), then the QID number. Subjects of one region sit together, and within
    it those of one employer, team or party, so a shard's roots share the holders and values
    they reach (a country's regions and organizations, a party's members) instead of each
    reaching its own, as they do where a hash of the QID picks the shard."""
    connection.execute("""CREATE TEMP TABLE subject_order AS
        WITH held AS (
            SELECT DISTINCT subject_qid, pid, unnest(value_qids) AS value FROM relation_rows),
        holders AS (SELECT value, count(DISTINCT subject_qid) AS holders FROM held GROUP BY value),
        hubs AS (
            SELECT subject_qid AS qid, first(value ORDER BY holders DESC, value) AS hub,
                   md5_number_lower(min(md5(pid || '=' || value) || pid || '=' || value)) AS key
            FROM held JOIN holders USING (value) GROUP BY subject_qid),
        keys AS (
            SELECT s.qid, md5_number_lower(coalesce(h.hub, s.hub)) AS region,
                   md5_number_lower(s.hub) AS hub, s.key
            FROM hubs s LEFT JOIN hubs h ON h.qid = s.hub),
        golds AS (SELECT subject_qid AS qid, count(*) AS golds FROM gold_rows GROUP BY subject_qid)
        SELECT qid,
            CAST(coalesce(sum(golds) OVER (
                ORDER BY coalesce(region, md5_number_lower(qid)), coalesce(hub, 0),
                         coalesce(key, 0), CAST(qid[2:] AS BIGINT)
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT) AS start,
            CAST(sum(golds) OVER () AS BIGINT) AS total
        FROM golds LEFT JOIN keys USING (qid)""")  # fmt: skip


def _create_subject_names(connection: duckdb.DuckDBPyConnection) -> None:
    """``subject_names``: per subject with a gold, whether it is nameable
    without digits (``plain``: a holder of ``cross_entity_then``), named with a label
    another subject shares, or not nameable at all (``SnapshotFacts.subject_name``). Python
    decides each row inside DuckDB, a vector at a time, so the table stays within DuckDB's
    memory limit at any snapshot size."""
    connection.create_function(
        "name_kind", _name_kinds, [VARCHAR, VARCHAR, BOOLEAN], TINYINT, type="arrow",
        null_handling="special", side_effects=False,
    )  # fmt: skip
    connection.execute(f"""CREATE TEMP TABLE subject_names AS
        WITH labelled AS (
            SELECT s.subject_qid AS qid, l.label, l.description,
                   count(l.label) OVER (PARTITION BY l.label) > 1 AS shared
            FROM (SELECT DISTINCT subject_qid FROM gold_rows) s
            LEFT JOIN src_labels l ON l.qid = s.subject_qid),
        kinds AS (SELECT qid, shared, name_kind(label, description, shared) AS kind FROM labelled)
        SELECT qid, kind = {_PLAIN} AS plain, shared,
               kind = {_UNNAMEABLE} AS unnameable
        FROM kinds""")  # fmt: skip


def _create_holder_groups(connection: duckdb.DuckDBPyConnection) -> None:
    """``relation_rows``: the golds of the ``cross_entity_then`` relations, with whether the
    subject is ``plain`` and the pair timeless; ``holder_groups``: the plain holders of each
    (relation, value, year or '' for timeless), with the group's size and each one's
    position in it by QID number."""
    connection.execute(f"""CREATE TEMP TABLE relation_rows AS
        SELECT g.*, k.plain,
               bool_and(g.anchor IS NULL) OVER (PARTITION BY g.subject_qid, g.pid) AS timeless
        FROM gold_rows g JOIN subject_names k ON k.qid = g.subject_qid
        WHERE g.pid IN ({sql_list(RELATIONS)})""")  # fmt: skip
    connection.execute("""CREATE TEMP TABLE holder_groups AS
        WITH holders AS (
            SELECT pid AS relation, unnest(value_qids) AS value_qid,
                   coalesce(anchor, '') AS anchor, subject_qid
            FROM relation_rows WHERE plain AND (timeless OR length(anchor) = 4))
        SELECT *,
            row_number() OVER (PARTITION BY relation, value_qid, anchor
                               ORDER BY CAST(subject_qid[2:] AS BIGINT)) - 1 AS position,
            count(*) OVER (PARTITION BY relation, value_qid, anchor) AS size
        FROM holders""")  # fmt: skip


def _create_needed_holders(connection: duckdb.DuckDBPyConnection) -> None:
    """``needed_holders``: the members of the holder blocks the roots draw related subjects
    from (``cross_entity_then``), with their group's size and their position in it;
    ``holder_pairs``: per part of the roots, the (subject, property) a root may ask of a related
    subject (a member of a block it draws, or its own value of a relation): a property of the
    root, and its ``instance of``, which decides its pronoun; all ``cross_entity_then`` asks
    of a related subject."""
    blocks = f"CAST((size + {MAX_RELATED - 1}) // {MAX_RELATED} AS UBIGINT)"
    connection.execute(f"""CREATE TEMP TABLE root_blocks AS
        WITH root_years AS (
            SELECT DISTINCT g.subject_qid, g.anchor FROM gold_rows g
            SEMI JOIN roots r ON r.qid = g.subject_qid
            WHERE length(g.anchor) = 4),
        root_relations AS (
            SELECT * FROM relation_rows g SEMI JOIN roots r ON r.qid = g.subject_qid),
        asked AS (
            SELECT subject_qid, pid, unnest(value_qids) AS value_qid, anchor FROM root_relations
            WHERE NOT timeless AND length(anchor) = 4
            UNION ALL
            SELECT r.subject_qid, r.pid, unnest(r.value_qids), y.anchor
            FROM root_relations r JOIN root_years y USING (subject_qid)
            WHERE r.timeless),
        groups AS (
            SELECT subject_qid AS root, pid AS relation, value_qid, anchor FROM asked
            UNION SELECT subject_qid, pid, value_qid, '' FROM asked),
        sizes AS (
            SELECT DISTINCT relation, value_qid, anchor, size FROM holder_groups
            SEMI JOIN groups USING (relation, value_qid, anchor)),
        root_blocks AS (
            SELECT DISTINCT g.root, h.relation, h.value_qid, h.anchor,
                CAST(('0x' || sha256(g.root)[1:16]) AS UBIGINT) % {blocks} AS block
            FROM groups g JOIN sizes h USING (relation, value_qid, anchor))
        SELECT b.*, r.part FROM root_blocks b JOIN roots r ON r.qid = b.root""")  # fmt: skip
    connection.execute(f"""CREATE TEMP TABLE member_blocks AS
        WITH needed_blocks AS (
            SELECT DISTINCT part, relation, value_qid, anchor, block FROM root_blocks),
        member_blocks AS (
            SELECT *, CAST(position // {MAX_RELATED} AS UBIGINT) AS block FROM holder_groups
            UNION ALL
            SELECT *, {blocks} - 1 FROM holder_groups
            WHERE size > {MAX_RELATED} AND size % {MAX_RELATED} <> 0
                AND position < {MAX_RELATED} - size % {MAX_RELATED})
        SELECT m.*, n.part FROM member_blocks m
        JOIN needed_blocks n USING (relation, value_qid, anchor, block)""")  # fmt: skip
    connection.execute("""CREATE TEMP TABLE needed_holders AS
        SELECT DISTINCT part, relation, value_qid, anchor, size, position, subject_qid
        FROM member_blocks""")
    connection.execute("""CREATE TEMP TABLE holder_pairs AS
        WITH root_pids AS (
            SELECT DISTINCT subject_qid AS root, pid FROM gold_rows SEMI JOIN roots r
            ON r.qid = gold_rows.subject_qid),
        block_pids AS (
            SELECT DISTINCT b.part, b.relation, b.value_qid, b.anchor, b.block, p.pid
            FROM root_blocks b JOIN root_pids p USING (root)),
        root_values AS (
            SELECT r.part, g.subject_qid AS root, unnest(g.value_qids) AS subject_qid
            FROM relation_rows g JOIN roots r ON r.qid = g.subject_qid),
        drawn AS (
            SELECT DISTINCT m.part, m.subject_qid, p.pid FROM member_blocks m
            JOIN block_pids p USING (part, relation, value_qid, anchor, block)
            UNION SELECT v.part, v.subject_qid, p.pid FROM root_values v JOIN root_pids p USING (root))
        SELECT part, subject_qid, pid FROM drawn
        UNION SELECT part, subject_qid, 'P31' FROM drawn""")  # fmt: skip


def _create_core(connection: duckdb.DuckDBPyConnection, key: str | None = None) -> None:
    """``core``: the roots, their values and the values of those three bridged hops deep (with
    a ``key`` column of ``roots``, per value of it). A shard's index holds every fact of a
    root, and of the others their ``instance of`` (a pronoun's kind) and the properties of a
    bridged hop: all a family asks of them but ``cross_entity_then``, whose related subjects
    a chunk holds (``ChunkedRelated``)."""
    hops = sql_list(HOP_PIDS)
    keyed = f"d.{key}, " if key else ""

    def values(of: str, where: str = "") -> str:
        return f"""SELECT DISTINCT {keyed}unnest(g.value_qids) AS qid
            FROM gold_rows g JOIN {of} d ON d.qid = g.subject_qid {where}"""

    connection.execute(f"""CREATE TEMP TABLE core AS
        WITH d0 AS (SELECT {key + ", " if key else ""}qid FROM roots),
        d1 AS ({values("d0")}),
        d2 AS ({values("d1", f"WHERE g.pid IN ({hops})")}),
        d3 AS ({values("d2", f"WHERE g.pid IN ({hops})")})
        SELECT * FROM d0 UNION SELECT * FROM d1 UNION SELECT * FROM d2 UNION SELECT * FROM d3""")  # fmt: skip


def _create_roots(
    connection: duckdb.DuckDBPyConnection, shard: Shard
) -> tuple[int, frozenset[str]]:
    """``roots``: the subjects of ``shard`` (``shard_roots_sql``), with their ``part``:
    ``ROOTS_PER_PART`` of them in QID order, of which ``ChunkedRelated`` makes chunks.
    Returns how many subjects of the snapshot cannot be named (``SnapshotFacts.subject_name``)
    and the roots."""
    connection.execute(f"""CREATE TEMP TABLE roots AS
        SELECT qid, (row_number() OVER (ORDER BY CAST(qid[2:] AS BIGINT)) - 1)
                    // {ROOTS_PER_PART} AS part
        FROM ({shard_roots_sql("subject_order", shard)})""")  # fmt: skip
    [(unnameable,)] = connection.execute("SELECT subjects FROM unnameable").fetchall()
    roots = frozenset(qid for (qid,) in connection.execute("SELECT qid FROM roots").fetchall())
    return unnameable, roots


def shard_roots_sql(order: str, shard: Shard) -> str:
    """SQL of the QIDs of the subjects ``shard`` holds, of a snapshot whose ``subject_order``
    is the SQL ``order``."""
    return f"SELECT qid FROM {order} WHERE {_shard_of(shard.count)} = {shard.index}"


def _shard_of(count: int) -> str:
    """SQL of the shard of ``count`` that holds a subject of ``subject_order``'s columns: the
    run of about equal golds in the snapshot's locality order where its golds start."""
    return f"start * {count} // total"


def indexed_shard_roots(
    snapshot_index: Path, shard: Shard, *, config: Mapping[str, str | int] | None = None
) -> frozenset[str]:
    """The subjects ``shard`` holds, from a snapshot's index (``write_snapshot_index``)."""
    order = f"read_parquet({sql_string(str(snapshot_index / 'subject_order.parquet'))})"
    with duckdb.connect(":memory:", config=dict(config or {})) as connection:
        rows = connection.execute(shard_roots_sql(order, shard)).fetchall()
    return frozenset(qid for (qid,) in rows)


_UNNAMEABLE, _NAMED_WITH_DIGITS, _PLAIN = 0, 1, 2


def _name_kinds(labels: pa.Array, descriptions: pa.Array, shared: pa.Array) -> pa.Array:
    """Per subject, whether ``naming`` cannot name it, names it with a digit, or without."""
    kinds = []
    for label, description, is_shared in zip(
        labels.to_pylist(), descriptions.to_pylist(), shared.to_pylist(), strict=True
    ):
        name = naming(label, description, bool(is_shared))
        kinds.append(
            _UNNAMEABLE if name is None else _NAMED_WITH_DIGITS if DIGIT.search(name) else _PLAIN
        )
    return pa.array(kinds, pa.int8())


def _first_seen(connection: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """For each entity of ``bounded`` (the reached subjects and their golds' values, whose
    existence bounds a timeless value), the first day of any dated statement it takes part in,
    as subject or value, anywhere in the snapshot."""
    table = python_dates(connection.sql("SELECT * FROM index_first_seen").to_arrow_table())
    return {
        qid: day.toordinal()
        for qid, day in zip(
            table.column("qid").to_pylist(), table.column("first").to_pylist(), strict=True
        )
    }


def _holders(connection: duckdb.DuckDBPyConnection, members: str) -> dict[tuple, HolderGroup]:
    """The holder groups the roots' related subjects come from, with the members of the
    blocks they draw (``cross_entity_then``; SQL ``members`` of ``needed_holders``' columns).
    A subject is in many groups (one per year it holds a value), so its QID is one interned
    string shared by all of them."""
    reader = connection.sql(
        f"""SELECT relation, value_qid, anchor, any_value(size) AS size,
                  list(position ORDER BY position) AS positions,
                  list(subject_qid ORDER BY position) AS members
           FROM ({members}) GROUP BY relation, value_qid, anchor"""
    ).to_arrow_reader(1 << 16)
    groups = {}
    for batch in reader:
        for relation, value, anchor, size, positions, members in zip(
            *(column.to_pylist() for column in batch.columns), strict=True
        ):
            key = (sys.intern(relation), sys.intern(value), sys.intern(anchor) if anchor else None)
            groups[key] = HolderGroup(size, array("I", positions), tuple(map(sys.intern, members)))
    return groups


INTERVALS_SCHEMA = pa.schema(
    [("subject_qid", pa.string()), ("pid", pa.string()), ("value_qid", pa.string()),
     ("valid_from", pa.date32()), ("valid_until", pa.date32()), ("certain_until", pa.date32()),
     ("is_timeless", pa.bool_()), ("end_unknown", pa.bool_()), ("start_unknown", pa.bool_())]
)  # fmt: skip
PRESENT_SCHEMA = pa.schema(
    [("subject_qid", pa.string()), ("pid", pa.string()), ("value_qids", pa.list_(pa.string()))]
)
