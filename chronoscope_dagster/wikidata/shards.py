"""A dump cut into shards, and the shards' extractions put back together.

``split_dump`` reads a dump once and writes ``count`` files of whole lines, shard
``i`` holding the lines that start in the ``i``-th part of the input, measured in
compressed bytes read and interpolated within a block (so shards are even up to the
decompressor's read-ahead, which is negligible on a large dump). The shards are contiguous runs of the dump in its order, so
extracting each one and concatenating the results in shard order gives exactly
the rows of extracting the whole dump, and ``RowGroupWriter`` makes that the same
file byte for byte. Shards are ``.jsonl.zst`` (zstd level 1: fast to write, read
by ``extract_dump`` like any dump).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from chronoscope_dagster.parquet import RowGroupWriter
from chronoscope_dagster.wikidata.reader import (
    BLOCK_BYTES,
    ExtractionReport,
    dump_files,
    line_blocks,
)

SHARD_SUFFIX = ".jsonl.zst"
ZSTD_LEVEL = 1


@dataclass(frozen=True)
class SplitReport:
    shards: list[Path]
    shard_bytes: list[int]
    """Decompressed bytes of each shard."""
    input_bytes: int
    seconds: float


def shard_name(index: int, count: int) -> str:
    return f"shard-{index:05d}-of-{count:05d}{SHARD_SUFFIX}"


def split_dump(
    path: Path,
    directory: Path,
    count: int,
    *,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> SplitReport:
    """Cut the dump at ``path`` into ``count`` shard files in ``directory`` (replacing any
    there); ``progress(bytes_read, input_bytes)`` is called once per block."""
    if count < 1:
        raise ValueError(f"shard count must be at least 1, not {count}")
    paths = dump_files(path)
    input_bytes = sum(p.stat().st_size for p in paths)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob(f"shard-*{SHARD_SUFFIX}"):
        stale.unlink()
    started = time.perf_counter()
    shards = [directory / shard_name(index, count) for index in range(count)]
    shard_bytes = [0] * count
    with ExitStack() as stack:
        writers = [
            stack.enter_context(
                zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(
                    stack.enter_context(shard.open("wb"))
                )
            )
            for shard in shards
        ]
        report = ExtractionReport(input_bytes=input_bytes)
        current, read_before = 0, 0
        for view in line_blocks(paths, block_bytes, report):
            block = bytes(view)
            read_after = report.input_read_bytes
            start = 0
            while current < count - 1:
                boundary = (current + 1) * input_bytes / count
                if boundary > read_after:
                    break
                share = (boundary - read_before) / max(read_after - read_before, 1)
                cut = block.find(b"\n", max(int(share * len(block)) - 1, start)) + 1 or len(block)
                shard_bytes[current] += cut - start
                writers[current].write(block[start:cut])
                start, current = cut, current + 1
            shard_bytes[current] += len(block) - start
            writers[current].write(block[start:])
            read_before = read_after
            if progress is not None:
                progress(read_after, input_bytes)
    return SplitReport(shards, shard_bytes, input_bytes, time.perf_counter() - started)


def concatenate_parquet(parts: Sequence[Path], out: Path, schema: pa.Schema) -> int:
    """The rows of ``parts``, in order, as one file of ``schema`` (the one they were written
    with: Parquet does not keep every Arrow name, such as a list's item field) written as
    ``RowGroupWriter`` writes; the row count."""
    rows = 0
    with RowGroupWriter(out, schema) as writer:
        for part in parts:
            parquet = pq.ParquetFile(part)
            for group in range(parquet.num_row_groups):
                table = parquet.read_row_group(group).cast(schema)
                writer.write(table)
                rows += table.num_rows
    return rows
