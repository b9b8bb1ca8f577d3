"""Streaming a dump through the extractor on every core, in bounded memory.

One process decompresses and cuts the stream into blocks of whole lines (a
byte range each); worker processes parse the blocks; the results come back in
input order and are appended to Parquet files as they arrive, so memory holds
at most a few blocks per worker and the output does not depend on the number
of workers. Formats: ``.json.gz`` (one or several gzip members),
``.json.bz2`` (one or several streams), ``.jsonl.zst`` / ``.json.zst`` (every
frame, not only the first) and uncompressed ``.json`` / ``.jsonl``; a
directory is read as the sorted list of the dump files it holds (shards).
"""

from __future__ import annotations

import bz2
import io
import multiprocessing
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from chronoscope_dagster.wikidata.extract import (
    LABELS_SCHEMA,
    LIFESPAN_DROPS,
    LIFESPANS_SCHEMA,
    LINE_REJECTS,
    STATEMENT_DROPS,
    ChunkResult,
    Extractor,
)

DUMP_SUFFIXES = (".json.gz", ".json.bz2", ".jsonl.zst", ".json.zst", ".jsonl", ".json")
BLOCK_BYTES = 4 << 20
# With the worker count left automatic, an input whose (compressed) size times this is
# below one block is parsed in process: starting workers would cost more than the parse.
SMALL_INPUT_RATIO = 8


class DumpFormatError(ValueError):
    """The file is not a dump this reader understands, or its compression is damaged."""


@dataclass
class ExtractionReport:
    """Counts of everything read; ``reconciles`` says whether they add up."""

    counts: Counter[str] = field(default_factory=Counter)
    input_bytes: int = 0
    seconds: float = 0.0
    workers: int = 1

    def get(self, key: str) -> int:
        return self.counts.get(key, 0)

    @property
    def line_rejects(self) -> dict[str, int]:
        return {reason: self.get(f"rejected:{reason}") for reason in LINE_REJECTS}

    @property
    def statement_drops(self) -> dict[str, int]:
        return {reason: self.get(f"dropped:{reason}") for reason in STATEMENT_DROPS}

    @property
    def lifespan_drops(self) -> dict[str, int]:
        return {reason: self.get(f"lifespan_dropped:{reason}") for reason in LIFESPAN_DROPS}

    @property
    def reconciliation_errors(self) -> list[str]:
        errors = []
        lines = (
            self.get("lines_structural")
            + self.get("entities_seen")
            + sum(self.line_rejects.values())
        )
        if lines != self.get("lines"):
            errors.append(f"lines {self.get('lines')} != structural + entities + rejected {lines}")
        entities = self.get("items") + self.get("entities_skipped_non_item")
        if entities != self.get("entities_seen"):
            errors.append(
                f"entities_seen {self.get('entities_seen')} != items + skipped {entities}"
            )
        statements = self.get("statements_kept") + sum(self.statement_drops.values())
        if statements != self.get("statements_seen"):
            errors.append(
                f"statements_seen {self.get('statements_seen')} != kept + dropped {statements}"
            )
        lifespans = self.get("lifespan_kept") + sum(self.lifespan_drops.values())
        if lifespans != self.get("lifespan_seen"):
            errors.append(
                f"lifespan_seen {self.get('lifespan_seen')} != kept + dropped {lifespans}"
            )
        return errors

    @property
    def reconciles(self) -> bool:
        return not self.reconciliation_errors


def dump_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.name.endswith(DUMP_SUFFIXES))
        if not files:
            raise DumpFormatError(
                f"{path}: directory holds no dump files ({', '.join(DUMP_SUFFIXES)})"
            )
        return files
    if not path.exists():
        raise FileNotFoundError(f"dump not found: {path}")
    if not path.name.endswith(DUMP_SUFFIXES):
        raise DumpFormatError(
            f"{path}: unknown dump format; expected one of {', '.join(DUMP_SUFFIXES)}"
        )
    return [path]


def open_dump(path: Path) -> io.BufferedIOBase:
    """A binary stream of the decompressed dump."""
    name = path.name
    if name.endswith(".gz"):
        from isal import igzip_threaded

        return igzip_threaded.open(path, "rb", threads=1)
    if name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if name.endswith(".zst"):
        import zstandard

        raw = open(path, "rb")  # noqa: SIM115 - closed with the reader (closefd)
        return zstandard.ZstdDecompressor().stream_reader(
            raw, read_across_frames=True, closefd=True
        )
    return open(path, "rb")


def iter_blocks(paths: list[Path], block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Blocks of whole lines from the decompressed files, in order."""
    decompression_errors = _decompression_errors()
    for path in paths:
        try:
            with open_dump(path) as stream:
                pending = b""
                while data := stream.read(block_bytes):
                    data = pending + data
                    cut = data.rfind(b"\n") + 1
                    pending = data[cut:]
                    if cut:
                        yield data[:cut]
                if pending:
                    yield pending
        except FileNotFoundError:
            raise
        except decompression_errors as error:
            raise DumpFormatError(f"{path}: cannot decompress: {error}") from error


def _decompression_errors() -> tuple[type[Exception], ...]:
    import zstandard

    return (OSError, EOFError, ValueError, zstandard.ZstdError)


_worker_extractor: Extractor | None = None


def _extract_block(block: bytes) -> ChunkResult:
    global _worker_extractor
    if _worker_extractor is None:
        _worker_extractor = Extractor()
    lines = block.split(b"\n")
    if not lines[-1]:
        lines.pop()
    return _worker_extractor.extract_lines(lines)


def extract_dump(
    path: Path,
    claims_out: Path,
    labels_out: Path,
    *,
    lifespans_out: Path | None = None,
    workers: int | None = None,
    block_bytes: int = BLOCK_BYTES,
    progress: Callable[[ExtractionReport], None] | None = None,
) -> ExtractionReport:
    """Extract claims, labels and (with ``lifespans_out``) lifespans of a dump into Parquet
    files; return the counts."""
    paths = dump_files(path)
    input_bytes = sum(p.stat().st_size for p in paths)
    if not workers:
        small = input_bytes * SMALL_INPUT_RATIO < block_bytes
        workers = 1 if small else os.cpu_count() or 1
    report = ExtractionReport(workers=workers, input_bytes=input_bytes)
    extractor = Extractor()
    started = time.perf_counter()
    claims_writer = pq.ParquetWriter(claims_out, extractor.schema, compression="zstd")
    labels_writer = pq.ParquetWriter(labels_out, LABELS_SCHEMA, compression="zstd")
    lifespans_writer = (
        pq.ParquetWriter(lifespans_out, LIFESPANS_SCHEMA, compression="zstd")
        if lifespans_out is not None
        else None
    )
    try:
        for result in _results(paths, workers, block_bytes):
            if result.claims.num_rows:
                claims_writer.write_table(result.claims)
            if result.labels.num_rows:
                labels_writer.write_table(result.labels)
            if lifespans_writer is not None and result.lifespans.num_rows:
                lifespans_writer.write_table(result.lifespans)
            report.counts.update(result.counts)
            if progress is not None:
                progress(report)
    finally:
        claims_writer.close()
        labels_writer.close()
        if lifespans_writer is not None:
            lifespans_writer.close()
    report.seconds = time.perf_counter() - started
    return report


def _results(paths: list[Path], workers: int, block_bytes: int) -> Iterator[ChunkResult]:
    blocks = iter_blocks(paths, block_bytes)
    if workers == 1:
        yield from map(_extract_block, blocks)
        return
    in_flight: deque[Future[ChunkResult]] = deque()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for block in blocks:
            in_flight.append(pool.submit(_extract_block, block))
            if len(in_flight) >= 2 * workers:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
