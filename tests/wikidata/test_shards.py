"""A dump cut into shards and extracted shard by shard gives the whole dump's files, byte for
byte, and every line is counted once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from chronoscope_dagster.chains.facts import Shard
from chronoscope_dagster.chains.reach import shard_roots_sql
from chronoscope_dagster.parquet import RowGroupWriter
from chronoscope_dagster.wikidata.extract import LABELS_SCHEMA, LIFESPANS_SCHEMA, Extractor
from chronoscope_dagster.wikidata.reader import ExtractionReport, extract_dump, iter_blocks
from chronoscope_dagster.wikidata.shards import concatenate_parquet, split_dump
from tests.wikidata.test_fuzz import _fuzzed_lines
from tests.wikidata.test_reader_formats import BLOCK, FORMATS

OUTPUTS = {"claims": Extractor().schema, "labels": LABELS_SCHEMA, "lifespans": LIFESPANS_SCHEMA}


def _extract(dump: Path, out: Path) -> ExtractionReport:
    out.mkdir(parents=True, exist_ok=True)
    return extract_dump(
        dump,
        out / "claims.parquet",
        out / "labels.parquet",
        lifespans_out=out / "lifespans.parquet",
        workers=1,
        block_bytes=BLOCK,
    )


def _sharded(dump: Path, count: int, out: Path) -> tuple[list[Path], Counter[str]]:
    split = split_dump(dump, out / "shards", count, block_bytes=BLOCK)
    assert [path.name for path in split.shards] == sorted(path.name for path in split.shards)
    counts: Counter[str] = Counter()
    for index, shard in enumerate(split.shards):
        report = _extract(shard, out / f"part-{index}")
        assert report.reconciles, report.reconciliation_errors
        counts.update(report.counts)
    for name, schema in OUTPUTS.items():
        parts = [out / f"part-{index}" / f"{name}.parquet" for index in range(count)]
        concatenate_parquet(parts, out / f"{name}.parquet", schema)
    return split.shards, counts


@pytest.mark.parametrize("fmt", ["json.gz", "jsonl.zst-frames", "json.bz2-multistream", "shards"])
@pytest.mark.parametrize("count", [1, 3, 8])
def test_shards_concatenate_to_the_whole_dump(fmt, count, tmp_path):
    dump = FORMATS[fmt][0](tmp_path)
    whole = _extract(dump, tmp_path / "whole")
    shards, counts = _sharded(dump, count, tmp_path / "sharded")
    assert len(shards) == count
    assert counts == whole.counts
    for name in OUTPUTS:
        sharded = (tmp_path / "sharded" / f"{name}.parquet").read_bytes()
        assert sharded == (tmp_path / "whole" / f"{name}.parquet").read_bytes(), name
    texts = [zstandard.decompress(path.read_bytes(), max_output_size=1 << 30) for path in shards]
    assert all(text.endswith(b"\n") for text in texts if text)


@pytest.mark.parametrize("count", [2, 3, 7])
def test_shards_are_even_in_decompressed_bytes(count, tmp_path):
    from chronoscope_dagster.data import sample_dump_path

    split = split_dump(sample_dump_path("2025"), tmp_path, count)
    assert min(split.shard_bytes) > 0.9 * max(split.shard_bytes), split.shard_bytes


def test_every_line_of_a_damaged_dump_is_counted_once_over_the_shards(tmp_path):
    dump = tmp_path / "fuzz.jsonl"
    dump.write_bytes(b"\n".join(_fuzzed_lines(7)) + b"\n")
    assert len(list(iter_blocks([dump], BLOCK))) >= 4
    whole = _extract(dump, tmp_path / "whole")
    _, counts = _sharded(dump, 4, tmp_path / "sharded")
    assert counts == whole.counts
    assert sum(ExtractionReport(counts=counts).line_rejects.values()) > 0
    assert (tmp_path / "sharded" / "claims.parquet").read_bytes() == (
        tmp_path / "whole" / "claims.parquet"
    ).read_bytes()


def test_a_split_replaces_the_shards_of_an_earlier_split(tmp_path):
    dump = FORMATS["jsonl"][0](tmp_path)
    split_dump(dump, tmp_path / "shards", 5)
    again = split_dump(dump, tmp_path / "shards", 2)
    assert sorted((tmp_path / "shards").iterdir()) == again.shards


def test_a_split_needs_a_shard_and_a_dump(tmp_path):
    with pytest.raises(ValueError, match="at least 1"):
        split_dump(FORMATS["jsonl"][0](tmp_path), tmp_path / "shards", 0)
    with pytest.raises(FileNotFoundError, match="dump not found"):
        split_dump(tmp_path / "missing.json.gz", tmp_path / "shards", 2)


def test_row_groups_do_not_depend_on_how_the_rows_arrive(tmp_path):
    table = pa.table({"n": list(range(23)), "s": [f"row {n}" for n in range(23)]})
    files = []
    for name, cuts in {"one": [23], "rows": [1] * 23, "uneven": [7, 9, 0, 7]}.items():
        path = tmp_path / f"{name}.parquet"
        with RowGroupWriter(path, table.schema, row_group_rows=5) as writer:
            start = 0
            for size in cuts:
                writer.write(table.slice(start, size))
                start += size
        files.append(path.read_bytes())
        assert pq.ParquetFile(path).num_row_groups == 5
        assert pq.read_table(path).equals(table)
    assert files[0] == files[1] == files[2]


def test_a_shard_splits_into_parts_that_hold_exactly_its_subjects():
    """Shards are runs of a snapshot's locality order by golds; a shard's parts (a step's
    workers) are runs of its run, whatever the golds per subject."""
    golds = [1 + n * 7 % 13 for n in range(3000)]
    starts = [sum(golds[:n]) for n in range(len(golds))]
    subject_order = pa.table({"qid": [f"Q{n}" for n in range(1, 3001)], "start": starts,
                      "total": [sum(golds)] * len(golds)})  # fmt: skip

    connection = duckdb.connect()
    connection.register("subject_order", subject_order)

    def held(shard: Shard) -> set[str]:
        return {
            qid for (qid,) in connection.sql(shard_roots_sql("subject_order", shard)).fetchall()
        }

    shard = Shard(1, 3)
    parts = [held(part) for part in shard.split(4)]
    assert set().union(*parts) == held(shard)
    assert sum(map(len, parts)) == len(held(shard)) and all(parts)
    assert set().union(*(held(Shard(index, 3)) for index in range(3))) == set(
        subject_order["qid"].to_pylist()
    )
