"""Streaming a dump through the extractor on every core, in bounded memory.

One process decompresses and cuts the stream into blocks of whole lines; with
several workers it writes each block into a slot of one shared-memory ring, and
worker processes parse the blocks in place (only a slot's offset and length
cross the pipe, never the block's bytes: pickling every block cost the parent
more than the parse saved). The results come back in input order and are
appended to Parquet files as they arrive, so memory holds a fixed ring and a few
results, and the output does not depend on the number of workers. Workers end
with the parent, however it ends, and the ring does not outlive the run
(``block_ring``). Formats:
``.json.gz`` (one or several gzip members), ``.json.bz2`` (one or several
streams), ``.jsonl.zst`` / ``.json.zst`` (every frame, not only the first) and
uncompressed ``.json`` / ``.jsonl``; a directory is read as the sorted list of
the dump files it holds (shards)."""

from __future__ import annotations

import bz2
import io
import mmap
import multiprocessing
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from chronoscope_dagster.parquet import RowGroupWriter
from chronoscope_dagster.processes import usable_cores
from chronoscope_dagster.wikidata.block_ring import BlockRing, attach_ring
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
    input_read_bytes: int = 0
    """Of ``input_bytes``, how many the decompressor has read (ahead of the counts by the
    blocks in flight)."""
    seconds: float = 0.0
    workers: int = 1

    def get(self, key: str) -> int:
        return self.counts.get(key, 0)

    @classmethod
    def combined(cls, parts: list[ExtractionReport], input_bytes: int) -> ExtractionReport:
        """The report of a dump of ``input_bytes`` extracted in ``parts``: counts summed,
        seconds of extraction summed (CPU-side work, whichever steps ran in parallel)."""
        return cls(
            counts=sum((part.counts for part in parts), Counter()),
            input_bytes=input_bytes,
            input_read_bytes=input_bytes,
            seconds=sum(part.seconds for part in parts),
            workers=max((part.workers for part in parts), default=1),
        )

    def progress_text(self) -> str:
        """Counts so far, the input read, its rate and the time left at that rate."""
        done = self.input_read_bytes / self.input_bytes if self.input_bytes else 1.0
        rate = self.input_read_bytes / 1e6 / max(self.seconds, 1e-9)
        left = f"about {self.seconds * (1 - done) / done:.0f} s left" if done else "starting"
        return (
            f"{self.get('lines'):,} lines, {self.get('items'):,} items, "
            f"{self.get('statements_kept'):,} statements kept; "
            f"{self.input_read_bytes / 1e6:,.0f} of {self.input_bytes / 1e6:,.0f} MB read "
            f"({rate:.1f} MB/s, {left})"
        )

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


def open_dump(raw: io.BufferedReader, name: str) -> io.BufferedIOBase:
    """A binary stream of the decompressed dump read from ``raw``, the file named ``name``
    (its suffix says the compression)."""
    if name.endswith(".gz"):
        from isal import igzip_threaded

        return igzip_threaded.open(raw, "rb", threads=1)
    if name.endswith(".bz2"):
        return bz2.open(raw, "rb")
    if name.endswith(".zst"):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(
            raw, read_across_frames=True, closefd=False
        )
    return raw


def iter_blocks(paths: list[Path], block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Blocks of whole lines from the decompressed files, in order."""
    for view in line_blocks(paths, block_bytes):
        yield bytes(view)


def line_blocks(
    paths: list[Path], block_bytes: int, report: ExtractionReport | None = None
) -> Iterator[memoryview]:
    """Blocks of whole lines, each a view of one reused buffer, valid until the next is
    asked for. A block is what is left of the last one after its last newline, then
    ``block_bytes`` more, cut after the last newline (a line longer than that makes the
    block grow until it ends). ``report.input_read_bytes`` follows the (compressed) bytes read."""
    decompression_errors = _decompression_errors()
    buffer = bytearray(2 * block_bytes)
    files_done_bytes = 0
    for path in paths:
        try:
            with open(path, "rb") as raw, open_dump(raw, path.name) as stream:
                filled = 0
                while True:
                    if filled + block_bytes > len(buffer):
                        buffer.extend(bytes(filled + block_bytes - len(buffer)))
                    with memoryview(buffer) as window:
                        read = _read_fully(stream, window[filled : filled + block_bytes])
                    if not read:
                        break
                    filled += read
                    if report is not None:
                        report.input_read_bytes = files_done_bytes + raw.tell()
                    cut = buffer.rfind(b"\n", 0, filled) + 1
                    if cut:
                        with memoryview(buffer) as window, window[:cut] as block:
                            yield block
                        buffer[: filled - cut] = buffer[cut:filled]
                        filled -= cut
                if filled:
                    with memoryview(buffer) as window, window[:filled] as block:
                        yield block
            files_done_bytes += path.stat().st_size
        except FileNotFoundError:
            raise
        except decompression_errors as error:
            raise DumpFormatError(f"{path}: cannot decompress: {error}") from error


def _read_fully(stream: io.BufferedIOBase, into: memoryview) -> int:
    """Bytes read into ``into``: all of it, unless the stream ends first."""
    total = 0
    while total < len(into):
        read = stream.readinto(into[total:])
        if not read:
            break
        total += read
    return total


def _decompression_errors() -> tuple[type[Exception], ...]:
    import zstandard

    return (OSError, EOFError, ValueError, zstandard.ZstdError)


_worker_extractor: Extractor | None = None
_worker_ring: mmap.mmap | None = None


def _extract_block(block: bytes) -> ChunkResult:
    global _worker_extractor
    if _worker_extractor is None:
        _worker_extractor = Extractor()
    lines = block.split(b"\n")
    if not lines[-1]:
        lines.pop()
    return _worker_extractor.extract_lines(lines)


def _attach_ring(path: str, parent: int) -> None:
    global _worker_ring
    _worker_ring = attach_ring(path, parent)


def _extract_slot(offset: int, length: int) -> ChunkResult:
    assert _worker_ring is not None, "the worker was started without the block ring"
    return _extract_block(_worker_ring[offset : offset + length])


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
        workers = 1 if small else usable_cores()
    report = ExtractionReport(workers=workers, input_bytes=input_bytes)
    extractor = Extractor()
    started = time.perf_counter()
    claims_writer = RowGroupWriter(claims_out, extractor.schema)
    labels_writer = RowGroupWriter(labels_out, LABELS_SCHEMA)
    lifespans_writer = (
        RowGroupWriter(lifespans_out, LIFESPANS_SCHEMA) if lifespans_out is not None else None
    )
    try:
        for result in _results(paths, workers, block_bytes, report):
            claims_writer.write(result.claims)
            labels_writer.write(result.labels)
            if lifespans_writer is not None:
                lifespans_writer.write(result.lifespans)
            report.counts.update(result.counts)
            if progress is not None:
                report.seconds = time.perf_counter() - started
                progress(report)
    finally:
        claims_writer.close()
        labels_writer.close()
        if lifespans_writer is not None:
            lifespans_writer.close()
    report.seconds = time.perf_counter() - started
    return report


def _results(
    paths: list[Path], workers: int, block_bytes: int, report: ExtractionReport
) -> Iterator[ChunkResult]:
    blocks = line_blocks(paths, block_bytes, report)
    if workers == 1:
        for block in blocks:
            yield _extract_block(bytes(block))
        return
    slot_bytes = 2 * block_bytes
    slots = 2 * workers
    with (
        BlockRing(slots * slot_bytes) as ring,
        ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_attach_ring,
            initargs=(ring.path, os.getpid()),
        ) as pool,
    ):
        free = deque(range(0, slots * slot_bytes, slot_bytes))
        in_flight: deque[tuple[Future[ChunkResult], int | None]] = deque()
        for block in blocks:
            shared = len(block) <= slot_bytes
            while len(in_flight) >= slots or (shared and not free):
                future, offset = in_flight.popleft()
                yield future.result()
                if offset is not None:
                    free.append(offset)
            if shared:
                offset = free.popleft()
                ring.memory[offset : offset + len(block)] = block
                in_flight.append((pool.submit(_extract_slot, offset, len(block)), offset))
            else:
                in_flight.append((pool.submit(_extract_block, bytes(block)), None))
        while in_flight:
            yield in_flight.popleft()[0].result()
