"""Merging a family's shard tables: in memory and streamed through DuckDB, the same rows in the
same order, and the same Parquet bytes."""

import duckdb
import pyarrow.parquet as pq

from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.records import merged_turns, merged_turns_sql, turns_table
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.warehouse import write_query


def _chain(subject: str, pids: list[str]) -> Chain:
    turns = tuple(
        Turn(
            question=f"What was the {pid} of {subject}?",
            pid=pid,
            subject_qid=subject,
            subject_label=subject,
            gold_qids=("Q1",),
            gold_labels=("one",),
            gold_aliases=(),
            answer="one",
            canonical_qid="Q1",
            scope_year=2010,
            scope_anchor="2010",
            is_explicit=index == 0,
        )
        for index, pid in enumerate(pids)
    )
    return Chain("carryover", 2025, "2010", turns)


def test_the_streamed_merge_orders_chains_as_the_merge_in_memory(tmp_path):
    """Chains sort by their first subject's QID number (Q9 before Q10: not by text), a root's
    chains keep their shard's order, and the file is byte-identical to writing the merged
    table."""
    parts = [
        turns_table([_chain("Q10", ["P6", "P35"]), _chain("Q10", ["P35"]), _chain("Q300", ["P6"])]),
        turns_table([_chain("Q9", ["P39", "P6", "P35"]), _chain("Q25", ["P6"])]),
    ]
    files = []
    for index, part in enumerate(parts):
        files.append(tmp_path / f"part-{index}.parquet")
        pq.write_table(part, files[-1], compression="zstd")
    in_memory = merged_turns([pq.read_table(path) for path in files])
    sources = [f"read_parquet({sql_string(str(path))}, file_row_number = true)" for path in files]
    with duckdb.connect() as connection:
        write_query(connection, merged_turns_sql(sources), tmp_path / "streamed.parquet",
                    in_memory.schema)  # fmt: skip
    pq.write_table(in_memory, tmp_path / "whole.parquet", compression="zstd")
    streamed = pq.read_table(tmp_path / "streamed.parquet")
    assert streamed.equals(in_memory)
    firsts = [
        subject
        for subject, turn in zip(
            streamed.column("subject_qid").to_pylist(),
            streamed.column("turn_index").to_pylist(),
            strict=True,
        )
        if turn == 0
    ]
    assert firsts == ["Q9", "Q10", "Q10", "Q25", "Q300"]
    assert (tmp_path / "streamed.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


def test_a_merged_family_has_the_bytes_of_the_merge_in_memory_also_when_empty(tmp_path):
    """The partition a family's merge writes, with chains and without."""
    from chronoscope_dagster.storage.chains import write_merged_family
    from chronoscope_dagster.warehouse import Warehouse

    warehouse = Warehouse(tmp_path / "home")
    parts = warehouse.shard_asset("family_carryover")
    for chains, expected in (
        ([[_chain("Q10", ["P6"])], [_chain("Q9", ["P6", "P35"])]], ["Q9", "Q9", "Q10"]),
        ([[], []], []),
    ):
        tables = [turns_table(part) for part in chains]
        for index, table in enumerate(tables):
            warehouse.write_table(parts, table, snapshot_year="2025", shard=f"{index}-of-2")
        merged = write_merged_family(warehouse, "carryover", "2025", ["0-of-2", "1-of-2"])
        pq.write_table(merged_turns(tables), tmp_path / "whole.parquet", compression="zstd")
        written = warehouse.data_path("family_carryover", snapshot_year="2025")
        assert written.read_bytes() == (tmp_path / "whole.parquet").read_bytes()
        assert pq.read_table(written).column("subject_qid").to_pylist() == expected
        assert (merged.turns, merged.chains) == (len(expected), len(set(expected)))
