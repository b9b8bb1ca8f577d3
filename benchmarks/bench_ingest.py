"""Ingest throughput: claims and labels extraction beside plain `gzip -dc` and ISA-L's
`igzip -dc` on the same file.

    python benchmarks/bench_ingest.py [--entities 50000] [--workers 1 2] [--keep DIR]
    python benchmarks/bench_ingest.py --dump DUMP.json.gz [--workers 1 2]

With ``--dump``, times an existing dump (e.g. made by ``benchmarks/realistic_dump.py``)
instead of building one.

Builds a synthetic dump of N entities shaped like real ones (labels, descriptions
and aliases in many languages, sitelinks, statements of extracted and other
properties with qualifiers and references), then times `gzip -dc` (one core)
and the extraction at each worker count, and prints entities/s and MB/s, in
total and per core used. Sizes are configurable up to millions of entities;
generation streams, so memory stays flat.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from isal import igzip

from chronoscope_dagster.wikidata.properties import default_catalog
from chronoscope_dagster.wikidata.reader import extract_dump

LANGUAGES = [
    "en", "de", "fr", "es", "it", "nl", "pl", "pt", "ru", "sv", "ja", "zh", "ar", "fa", "uk",
    "ca", "cs", "fi", "he", "hu", "id", "ko", "no", "ro", "sr", "tr", "vi", "da", "el", "eo",
]  # fmt: skip
OTHER_PIDS = ["P18", "P569", "P570", "P1082", "P856", "P214", "P227", "P244", "P625", "P373"]


def _item(pid: str, qid: int) -> dict:
    return {
        "snaktype": "value",
        "property": pid,
        "hash": f"{qid:040x}",
        "datavalue": {"value": {"entity-type": "item", "numeric-id": qid, "id": f"Q{qid}"},
                      "type": "wikibase-entityid"},
        "datatype": "wikibase-item",
    }  # fmt: skip


def _time(pid: str, year: int, precision: int) -> dict:
    month = "00" if precision < 10 else "06"
    day = "00" if precision < 11 else "15"
    return {
        "snaktype": "value",
        "property": pid,
        "hash": f"{year:040x}",
        "datavalue": {
            "value": {"time": f"+{year}-{month}-{day}T00:00:00Z", "timezone": 0, "before": 0,
                      "after": 0, "precision": precision,
                      "calendarmodel": "http://www.wikidata.org/entity/Q1985727"},
            "type": "time",
        },
        "datatype": "time",
    }  # fmt: skip


def _reference(rng: random.Random) -> dict:
    return {
        "hash": f"{rng.getrandbits(160):040x}",
        "snaks": {"P248": [_item("P248", rng.randrange(1, 10**7))],
                  "P813": [_time("P813", rng.randrange(2013, 2025), 11)]},
        "snaks-order": ["P248", "P813"],
    }  # fmt: skip


def synthetic_entity(number: int, rng: random.Random, pids: list[str]) -> dict:
    qid = f"Q{number}"
    languages = rng.sample(LANGUAGES, rng.randrange(3, len(LANGUAGES)))
    name = f"Entity {number} {rng.getrandbits(32):08x}"
    claims: dict[str, list] = {}
    for pid in rng.sample(pids, rng.randrange(2, 9)) + rng.sample(OTHER_PIDS, rng.randrange(1, 6)):
        statements = []
        for index in range(rng.choice((1, 1, 1, 2, 3, 5))):
            if pid in OTHER_PIDS:
                mainsnak = {"snaktype": "value", "property": pid, "datatype": "string",
                            "datavalue": {"value": f"value-{number}-{index}", "type": "string"}}  # fmt: skip
            else:
                mainsnak = _item(pid, rng.randrange(1, 10**8))
            statement = {
                "mainsnak": mainsnak,
                "type": "statement",
                "id": f"{qid}${rng.getrandbits(128):032X}",
                "rank": rng.choices(("normal", "preferred", "deprecated"), (90, 8, 2))[0],
                "references": [_reference(rng) for _ in range(rng.randrange(0, 3))],
            }
            if rng.random() < 0.5:
                start = rng.randrange(1900, 2024)
                statement["qualifiers"] = {"P580": [_time("P580", start, rng.choice((9, 10, 11)))]}
                if rng.random() < 0.6:
                    statement["qualifiers"]["P582"] = [
                        _time("P582", start + rng.randrange(0, 10), 11)
                    ]
            statements.append(statement)
        claims[pid] = statements
    return {
        "type": "item",
        "id": qid,
        "labels": {lang: {"language": lang, "value": name} for lang in languages},
        "descriptions": {lang: {"language": lang, "value": f"description of {name} in {lang}"}
                         for lang in languages[: len(languages) // 2]},
        "aliases": {lang: [{"language": lang, "value": f"{name} alias {i}"} for i in range(2)]
                    for lang in languages[:4]},
        "claims": claims,
        "sitelinks": {f"{lang}wiki": {"site": f"{lang}wiki", "title": name, "badges": []}
                      for lang in languages[: rng.randrange(0, len(languages))]},
        "lastrevid": rng.randrange(10**9, 2 * 10**9),
        "modified": "2025-01-01T00:00:00Z",
    }  # fmt: skip


def build_dump(path: Path, entities: int, seed: int = 0, templates: Path | None = None) -> int:
    """Write a .json.gz dump in the official layout; return its uncompressed size.

    With ``templates`` (a JSON-lines file of real entities, such as
    ../shared/wikidata-real/entities.jsonl.gz), entity N is template N mod T with its id
    renumbered; otherwise entities are generated.
    """
    rng = random.Random(seed)
    pids = list(default_catalog().pids)
    real = []
    if templates:
        with gzip.open(templates) as handle:
            real = [orjson.loads(line) for line in handle if line.strip()]
    size = 0
    with gzip.open(path, "wb", compresslevel=6) as out:
        out.write(b"[\n")
        for number in range(1, entities + 1):
            if real:
                entity = dict(real[number % len(real)], id=f"Q{number}")
            else:
                entity = synthetic_entity(number, rng, pids)
            line = orjson.dumps(entity)
            line += b",\n" if number < entities else b"\n"
            out.write(line)
            size += len(line)
        out.write(b"]\n")
    return size + 4


def time_gzip(path: Path) -> float:
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(["gzip", "-dc", str(path)], stdout=sink, check=True)
    return time.perf_counter() - started


def time_isal(path: Path) -> float:
    """ISA-L's single-threaded decompressor (python-isal's ``igzip`` command), to /dev/null."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(
            [sys.executable, "-m", "isal.igzip", "-d", "-c", str(path)], stdout=sink, check=True
        )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--entities", type=int, default=50_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument(
        "--keep", type=Path, help="build the dump here and keep it (reused if present)"
    )
    parser.add_argument(
        "--templates",
        type=Path,
        help="JSON-lines file of real entities to cycle through "
        "(e.g. ../shared/wikidata-real/entities.jsonl.gz)",
    )
    parser.add_argument("--dump", type=Path, help="time this dump instead of building one")
    parser.add_argument("--json", type=Path, help="write each run's seconds here")
    args = parser.parse_args()
    directory = args.keep or Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    directory.mkdir(parents=True, exist_ok=True)
    kind = "real" if args.templates else "synthetic"
    dump = args.dump or directory / f"{kind}-{args.entities}.json.gz"
    if args.dump:
        with igzip.open(dump, "rb") as handle:
            args.entities = sum(1 for line in handle if line.startswith(b"{"))
    elif not dump.exists():
        started = time.perf_counter()
        build_dump(dump, args.entities, templates=args.templates)
        print(f"built {dump} in {time.perf_counter() - started:.1f} s")
    compressed = dump.stat().st_size
    with igzip.open(dump, "rb") as handle:
        uncompressed = sum(len(chunk) for chunk in iter(lambda: handle.read(1 << 22), b""))
    print(f"{args.entities:,} entities, {compressed / 1e6:.1f} MB compressed, "
          f"{uncompressed / 1e6:.1f} MB uncompressed ({uncompressed / args.entities / 1e3:.1f} kB/entity); "
          f"{os.cpu_count()} cores")  # fmt: skip

    gzip_seconds = min(time_gzip(dump) for _ in range(2))
    gzip_rate = uncompressed / 1e6 / gzip_seconds
    print(
        f"\n{'run':<22}{'seconds':>9}{'entities/s':>12}{'MB/s in':>9}{'MB/s out':>10}{'MB/s/core':>11}{'vs gzip':>9}"
    )
    print(f"{'gzip -dc (1 core)':<22}{gzip_seconds:>9.2f}{args.entities / gzip_seconds:>12,.0f}"
          f"{compressed / 1e6 / gzip_seconds:>9.1f}{gzip_rate:>10.1f}{gzip_rate:>11.1f}{1:>9.2f}")  # fmt: skip
    isal_seconds = min(time_isal(dump) for _ in range(2))
    seconds = {"gzip -dc": gzip_seconds, "igzip -dc": isal_seconds}
    isal_rate = uncompressed / 1e6 / isal_seconds
    print(f"{'igzip -dc (1 core)':<22}{isal_seconds:>9.2f}{args.entities / isal_seconds:>12,.0f}"
          f"{compressed / 1e6 / isal_seconds:>9.1f}{isal_rate:>10.1f}{isal_rate:>11.1f}"
          f"{isal_rate / gzip_rate:>9.2f}")  # fmt: skip
    for workers in args.workers:
        out = directory / f"out-{workers}"
        out.mkdir(exist_ok=True)
        report = extract_dump(dump, out / "claims.parquet", out / "labels.parquet", workers=workers)
        assert report.reconciles, report.reconciliation_errors
        seconds[f"extract, {workers} worker(s)"] = report.seconds
        cores = min(workers + 1, os.cpu_count() or 1) if workers > 1 else 1
        rate = uncompressed / 1e6 / report.seconds
        print(f"{f'extract, {workers} worker(s)':<22}{report.seconds:>9.2f}"
              f"{report.get('items') / report.seconds:>12,.0f}{compressed / 1e6 / report.seconds:>9.1f}"
              f"{rate:>10.1f}{rate / cores:>11.1f}{rate / cores / gzip_rate:>9.2f}")  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\npeak RSS: main {peak:.0f} MB, largest worker {children:.0f} MB")
    print(f"statements kept {report.get('statements_kept'):,} of {report.get('statements_seen'):,}")
    if args.json:
        args.json.write_text(json.dumps(seconds, indent=2) + "\n", encoding="utf-8")
    if not args.keep:
        shutil.rmtree(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
