"""extract_dump reads every supported layout and compression to the same Parquet content."""

from __future__ import annotations

import bz2
import gzip
import os
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from chronoscope_dagster.wikidata.block_ring import PREFIX
from chronoscope_dagster.wikidata.reader import (
    DumpFormatError,
    ExtractionReport,
    extract_dump,
    iter_blocks,
)
from chronoscope_dagster.wikidata.sample import (
    SPECIAL_VALUES,
    Date,
    Entity,
    Fact,
    Sample,
    render_dump,
    snapshot_facts,
)

YEAR = "2025"
BLOCK = 4096
PIDS = ("P39", "P108", "P26", "P31", "P54")


def _sample() -> Sample:
    entities = {
        f"Q{n}": Entity(
            f"Q{n}",
            f"Entity {n} ünïcode" if n % 7 == 0 else f"Entity {n}",
            f"description of {n}" if n % 3 else "",
            [f"alias {n}", f"other {n}"] if n % 4 == 0 else [],
        )
        for n in range(1, 91)
    }
    facts = []
    for n in range(1, 71):
        for k, pid in enumerate(PIDS[: 1 + n % len(PIDS)]):
            value = f"Q{(n * 7 + k * 13) % 90 + 1}"
            if value == f"Q{n}":
                value = f"Q{n % 90 + 1}"
            if (n + k) % 11 == 0:
                value = SPECIAL_VALUES[(n + k) % 2]
            start = Date(1990 + n % 30, (n + k) % 13, 0) if (n + k) % 3 else None
            if start and start.month and (n + k) % 2:
                start = Date(start.year, start.month, 1 + n % 28)
            end = Date(2021 + n % 8, 0, 0) if n % 4 == 1 and start else None
            point = Date(2000 + k, 5, 17) if n % 9 == 0 and not start else None
            rank = ("normal", "preferred", "deprecated", "normal", "normal")[(n * 3 + k) % 5]
            qualifiers: list[tuple[str, str]] = []
            if n % 5 == 0:
                qualifiers.append(("P1365", f"Q{(n + 3) % 90 + 1}"))
            if n % 6 == 0:
                qualifiers.append(("P1545", str(n)))
            facts.append(
                Fact(
                    "test",
                    f"Q{n}",
                    pid,
                    value,
                    start,
                    end,
                    n % 10 == 3 and end is None,
                    point,
                    rank,
                    tuple(qualifiers),
                )
            )
    return Sample(entities, facts)


SAMPLE = _sample()
ARRAY_TEXT = gzip.decompress(render_dump(SAMPLE, YEAR))
ENTITY_LINES = [
    line.rstrip(b",") for line in ARRAY_TEXT.split(b"\n") if line not in (b"", b"[", b"]")
]
JSONL_TEXT = b"\n".join(ENTITY_LINES) + b"\n"


def _zstd_frames(data: bytes, parts: int) -> bytes:
    size = len(data) // parts + 1
    compressor = zstandard.ZstdCompressor()
    return b"".join(compressor.compress(data[i : i + size]) for i in range(0, len(data), size))


def _shards(directory: Path) -> Path:
    directory.mkdir()
    third = len(ENTITY_LINES) // 3
    parts = [b"\n".join(ENTITY_LINES[i : i + third]) + b"\n" for i in (0, third)]
    parts.append(b"\n".join(ENTITY_LINES[2 * third :]) + b"\n")
    (directory / "part-0.jsonl").write_bytes(parts[0])
    (directory / "part-1.jsonl.zst").write_bytes(_zstd_frames(parts[1], 2))
    (directory / "part-2.json.bz2").write_bytes(bz2.compress(parts[2]))
    (directory / "README.txt").write_text("not a dump")
    return directory


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def write(directory: Path) -> Path:
        path = directory / name
        path.write_bytes(data)
        return path

    return write


MID = len(ARRAY_TEXT) // 2 + 17
FORMATS: dict[str, tuple[Callable[[Path], Path], int]] = {
    "json.gz": (_write("dump.json.gz", gzip.compress(ARRAY_TEXT)), 2),
    "json.gz-multimember": (
        _write("dump.json.gz", gzip.compress(ARRAY_TEXT[:MID]) + gzip.compress(ARRAY_TEXT[MID:])),
        2,
    ),
    "json.bz2": (_write("dump.json.bz2", bz2.compress(ARRAY_TEXT)), 2),
    "json.bz2-multistream": (
        _write("dump.json.bz2", bz2.compress(ARRAY_TEXT[:MID]) + bz2.compress(ARRAY_TEXT[MID:])),
        2,
    ),
    "jsonl.zst-frames": (_write("dump.jsonl.zst", _zstd_frames(JSONL_TEXT, 5)), 0),
    "json.zst-frames": (_write("dump.json.zst", _zstd_frames(ARRAY_TEXT, 3)), 2),
    "jsonl": (_write("dump.jsonl", JSONL_TEXT), 0),
    "json": (_write("dump.json", ARRAY_TEXT), 2),
    "shards": (lambda d: _shards(d / "shards"), 0),
}


def _extract(path: Path, out: Path, workers: int) -> tuple[ExtractionReport, pa.Table, pa.Table]:
    out.mkdir(parents=True, exist_ok=True)
    claims, labels = out / "claims.parquet", out / "labels.parquet"
    report = extract_dump(path, claims, labels, workers=workers, block_bytes=BLOCK)
    return report, pq.read_table(claims), pq.read_table(labels)


def _content_counts(report: ExtractionReport) -> Counter[str]:
    counts = Counter(report.counts)
    del counts["lines"], counts["lines_structural"]
    return counts


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[ExtractionReport, pa.Table, pa.Table]:
    directory = tmp_path_factory.mktemp("reference")
    return _extract(FORMATS["jsonl"][0](directory), directory / "out", workers=1)


def test_reference_matches_the_sample(reference):
    report, claims, labels = reference
    facts = snapshot_facts(SAMPLE, YEAR)
    kept = [f for f in facts if f.rank != "deprecated" and f.value not in SPECIAL_VALUES]
    assert report.reconciles, report.reconciliation_errors
    assert report.get("entities_seen") == len(ENTITY_LINES)
    assert report.get("items") == len(SAMPLE.entities)
    assert report.get("statements_seen") == len(facts)
    assert report.get("statements_kept") == len(kept) == claims.num_rows
    assert report.get("dropped:deprecated") == sum(f.rank == "deprecated" for f in facts)
    assert labels.num_rows == len(SAMPLE.entities)
    pairs = zip(claims["subject_qid"].to_pylist(), claims["value_qid"].to_pylist(), strict=True)
    assert sorted(pairs) == sorted((f.subject, f.value) for f in kept)
    assert claims.column("q_replaces").null_count < claims.num_rows
    assert claims.column("q_series_ordinal").null_count < claims.num_rows
    assert claims.column("start_date").null_count < claims.num_rows


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_gives_the_same_tables(fmt, reference, tmp_path):
    ref_report, ref_claims, ref_labels = reference
    write, structural = FORMATS[fmt]
    path = write(tmp_path)
    report, claims, labels = _extract(path, tmp_path / "out", workers=1)
    assert report.reconciles, report.reconciliation_errors
    assert claims.equals(ref_claims)
    assert labels.equals(ref_labels)
    assert _content_counts(report) == _content_counts(ref_report)
    assert report.get("lines_structural") == structural
    assert report.get("lines") == len(ENTITY_LINES) + structural


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_workers_do_not_change_the_result(fmt, tmp_path):
    path = FORMATS[fmt][0](tmp_path)
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    dumps = [p for p in files if p.suffix != ".txt"]
    assert len(list(iter_blocks(dumps, BLOCK))) >= 6
    one = _extract(path, tmp_path / "one", workers=1)
    two = _extract(path, tmp_path / "two", workers=2)
    assert two[0].workers == 2
    assert two[0].counts == one[0].counts
    assert two[1].equals(one[1])
    assert two[2].equals(one[2])
    assert two[0].reconciles


def test_a_line_longer_than_a_ring_slot_is_parsed_whole(tmp_path):
    """Blocks are whole lines, a line of several blocks included (it passes to a worker
    outside the shared-memory ring), and the parse is the same with one worker or two."""
    long_entity = orjson.loads(ENTITY_LINES[4])
    long_entity["aliases"] = {
        "en": [{"language": "en", "value": f"alias number {i}"} for i in range(2000)]
    }
    long_line = orjson.dumps(long_entity)
    assert len(long_line) > 3 * BLOCK
    lines = [*ENTITY_LINES[:4], long_line, *ENTITY_LINES[5:]]
    text = b"\n".join(lines) + b"\n"
    path = tmp_path / "long.json.gz"
    path.write_bytes(gzip.compress(text))
    blocks = list(iter_blocks([path], BLOCK))
    assert b"".join(blocks) == text
    assert all(block.endswith(b"\n") for block in blocks)
    assert any(len(block) > 2 * BLOCK for block in blocks)
    one = _extract(path, tmp_path / "one", workers=1)
    two = _extract(path, tmp_path / "two", workers=2)
    assert one[0].get("items") == len(SAMPLE.entities)
    assert two[0].counts == one[0].counts
    assert two[1].equals(one[1])
    assert two[2].equals(one[2])


@pytest.mark.parametrize("fmt", ["json.gz", "shards"])
def test_progress_follows_the_input_read_to_its_end(fmt, tmp_path):
    path = FORMATS[fmt][0](tmp_path)
    seen: list[tuple[int, str]] = []
    report = extract_dump(
        path,
        tmp_path / "c.parquet",
        tmp_path / "l.parquet",
        workers=2,
        block_bytes=BLOCK,
        progress=lambda r: seen.append((r.input_read_bytes, r.progress_text())),
    )
    read = [position for position, _ in seen]
    assert len(seen) >= 6 and read == sorted(read)
    assert 0 < read[0] <= report.input_bytes
    assert fmt != "shards" or read[0] < report.input_bytes  # (one small gzip is read at once)
    assert report.input_read_bytes == report.input_bytes
    assert "s left)" in seen[-1][1] and f"{report.get('items'):,} items" in seen[-1][1]


def _rings() -> set[Path]:
    """This process's rings (another test worker's come and go meanwhile)."""
    places = {Path("/dev/shm"), Path(tempfile.gettempdir())}
    mine = f"{PREFIX}{os.getpid()}-*"
    return {ring for place in places if place.is_dir() for ring in place.glob(mine)}


def test_the_block_ring_is_removed_after_a_run_and_after_a_failure(tmp_path):
    before = _rings()
    _extract(FORMATS["json.gz"][0](tmp_path), tmp_path / "out", workers=2)
    cut = tmp_path / "cut.json.gz"
    data = gzip.compress(ARRAY_TEXT)
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(DumpFormatError):
        _extract(cut, tmp_path / "cut", workers=2)
    assert _rings() == before


def test_truncated_gzip(tmp_path):
    path = tmp_path / "cut.json.gz"
    data = gzip.compress(ARRAY_TEXT)
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(DumpFormatError, match=str(path)):
        extract_dump(path, tmp_path / "c.parquet", tmp_path / "l.parquet", workers=1)
    with pytest.raises(DumpFormatError, match=str(path)):
        extract_dump(
            path, tmp_path / "c.parquet", tmp_path / "l.parquet", workers=2, block_bytes=BLOCK
        )


def test_gzip_missing_trailer(tmp_path):
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(ARRAY_TEXT)[:-4])
    with pytest.raises(DumpFormatError, match=str(path)):
        extract_dump(path, tmp_path / "c.parquet", tmp_path / "l.parquet", workers=1)


def test_corrupted_bz2(tmp_path):
    path = tmp_path / "bad.json.bz2"
    data = bytearray(bz2.compress(ARRAY_TEXT))
    for offset in range(len(data) // 2, len(data) // 2 + 64, 8):
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(DumpFormatError, match=str(path)):
        extract_dump(path, tmp_path / "c.parquet", tmp_path / "l.parquet", workers=1)


def test_unknown_suffix(tmp_path):
    path = tmp_path / "dump.json.xz"
    path.write_bytes(ARRAY_TEXT)
    with pytest.raises(DumpFormatError, match="unknown dump format"):
        extract_dump(path, tmp_path / "c.parquet", tmp_path / "l.parquet")


def test_directory_without_dumps(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("nothing")
    with pytest.raises(DumpFormatError, match="no dump files"):
        extract_dump(tmp_path / "empty", tmp_path / "c.parquet", tmp_path / "l.parquet")


def test_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        extract_dump(tmp_path / "absent.json.gz", tmp_path / "c.parquet", tmp_path / "l.parquet")
