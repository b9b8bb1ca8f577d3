"""Shards as Dagster steps on a real-shaped dump: time and files against the unsharded run.

    python benchmarks/bench_shards.py DUMP.json.gz [--shards 2] [--keep DIR]

Builds snapshot 2025 from DUMP twice with `dagster asset materialize`:

- *unsharded*: the in-process executor, one extraction step with 2 parse workers and one
  chain step with 2 worker processes (what `chronoscope run --workers 2 --chain-workers 2`
  does);
- *sharded*: the multiprocess executor, the dump cut into N shards extracted by N steps of
  1 worker each, N interval and N truth steps, and N chain steps of 1 process each.

Each DuckDB step uses CHRONOSCOPE_DUCKDB_THREADS threads (default one per core). Prints each
stage's wall time, with its checks, beside `gzip -dc` of the same file, and whether every
output file of the two builds is byte-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest import time_gzip  # this folder is on the path of a script run from it

DAGSTER = Path(sys.executable).with_name("dagster")
EXTRACTION = "wikidata_dump,claims,labels,lifespans"
UPSTREAM = "fact_intervals,truth"
FAMILIES = "key:family_*"


def materialize(
    home: Path, dump: Path, selection: str, ops: dict, executor: str, workers: int, partition=True
) -> float:
    config = {
        "resources": {
            "dump_sources": {"config": {"dumps": {"2025": str(dump)}, "workers": workers}}
        },
        "ops": ops,
    }
    command = [str(DAGSTER), "asset", "materialize", "-m", "chronoscope_dagster.definitions",
               "--select", selection, "--config-json", json.dumps(config)]  # fmt: skip
    if partition:
        command += ["--partition", "2025"]
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CHRONOSCOPE_HOME": str(home / "data"),
           "DAGSTER_HOME": str(home / "dagster"), "CHRONOSCOPE_EXECUTOR": executor}  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{selection} failed:\n{done.stderr[-4000:]}")
    return time.perf_counter() - started


def digests(data: Path) -> dict[str, str]:
    return {
        str(path.relative_to(data)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(data.rglob("*.parquet"))
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("dump", type=Path)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="build the homes here and keep them")
    args = parser.parse_args()
    dump, shards = args.dump.resolve(), args.shards
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-shards-"))
    whole, sharded = root / "unsharded", root / "sharded"
    gzip_seconds = time_gzip(dump)
    print(f"{dump.name}: {dump.stat().st_size / 1e6:,.0f} MB; gzip -dc {gzip_seconds:.1f} s")
    rows = []
    seconds = materialize(whole, dump, EXTRACTION, {}, "in_process", 2)
    rows.append(("extraction, 1 step x 2 workers, in process", seconds))
    shard_ops = {"claims_and_labels": {"config": {"shards": shards}}}
    seconds = materialize(sharded, dump, EXTRACTION, shard_ops, "multiprocess", 1)
    rows.append((f"extraction, {shards} shard steps x 1 worker, multiprocess", seconds))
    seconds = materialize(whole, dump, UPSTREAM, {}, "in_process", 2)
    rows.append(("intervals + truth, 1 DuckDB step each, in process", seconds))
    truth_ops = {asset: {"config": {"shards": shards}} for asset in ("fact_intervals", "truth")}
    seconds = materialize(sharded, dump, UPSTREAM, truth_ops, "multiprocess", 1)
    rows.append((f"intervals + truth, {shards} shard steps each, multiprocess", seconds))
    for home in (whole, sharded):
        materialize(home, dump, "present_day", {}, "in_process", 2, partition=False)
    chain_ops = {"chain_families": {"config": {"workers": 2}}}
    seconds = materialize(whole, dump, FAMILIES, chain_ops, "in_process", 2)
    rows.append(("families, 1 step x 2 workers, in process", seconds))
    chain_ops = {"chain_families": {"config": {"shards": shards, "workers": 1}}}
    seconds = materialize(sharded, dump, FAMILIES, chain_ops, "multiprocess", 1)
    rows.append((f"families, {shards} shard steps x 1 process, multiprocess", seconds))
    for stage, seconds in rows:
        print(f"{stage:<58}{seconds:>8.1f} s{seconds / gzip_seconds:>7.1f}x gzip")
    one, other = digests(whole / "data"), digests(sharded / "data")
    differ = sorted(name for name in one if one[name] != other.get(name))
    print(f"{len(one)} files, {len(differ)} differ{': ' + ', '.join(differ) if differ else ''}")
    if not args.keep:
        shutil.rmtree(root)
    return 1 if differ or one.keys() != other.keys() else 0


if __name__ == "__main__":
    sys.exit(main())
