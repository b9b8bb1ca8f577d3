"""Parquet files whose bytes depend only on their rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 1 << 17


class RowGroupWriter:
    """A zstd Parquet file written in row groups of exactly ``row_group_rows`` rows (the last
    one shorter), however the tables or batches it is handed cut them: a file written in one
    piece, in shards then concatenated, or query by query has the same bytes."""

    def __init__(self, path: Path, schema: pa.Schema, row_group_rows: int = ROW_GROUP_ROWS):
        self._writer = pq.ParquetWriter(path, schema, compression="zstd")
        self._row_group_rows = row_group_rows
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self.rows = 0

    def write(self, rows: pa.Table | pa.RecordBatch) -> None:
        if not rows.num_rows:
            return
        if isinstance(rows, pa.RecordBatch):
            rows = pa.Table.from_batches([rows])
        self._pending.append(rows)
        self._pending_rows += rows.num_rows
        self.rows += rows.num_rows
        while self._pending_rows >= self._row_group_rows:
            self._flush(self._row_group_rows)

    def close(self) -> None:
        if self._pending_rows:
            self._flush(self._pending_rows)
        self._writer.close()

    def __enter__(self) -> RowGroupWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _flush(self, rows: int) -> None:
        pending = pa.concat_tables(self._pending)
        self._writer.write_table(pending.slice(0, rows).combine_chunks(), row_group_size=rows)
        rest = pending.slice(rows)
        self._pending, self._pending_rows = [rest], rest.num_rows
