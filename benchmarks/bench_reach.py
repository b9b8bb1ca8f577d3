"""Chain generation per shard of subjects: what each shard reaches, its time and its memory.

    python benchmarks/bench_reach.py HOME [--year 2025] [--shards 1 4 8]

HOME is a home built through `truth` and `present_day` (e.g. `chronoscope run --dump
2025=DUMP --select 'key:truth or key:present_day or key:labels or key:lifespans'`). For each
shard count, every shard runs in its own process, one after another, as a `chain_families`
shard step does: it indexes what its chains reach (`chains.reach`) from the snapshot-wide
tables and its shard's scope written once before (`write_chain_index`, timed apart, once per
shard count) and generates the 11 families.
Prints per shard the load time, the total, the subjects and golds indexed, a digest of its
families' tables and refusals (to compare two versions of the code) and the peak resident
memory; then whether the merged families of every shard count are byte-identical
(`--first N`: only the first N shards of each count, for a step's figures at scale, and no
comparison).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SHARD = """
import hashlib, json, resource, sys, time
from pathlib import Path
import pyarrow.parquet as pq
from chronoscope_dagster.chains.facts import Shard
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.storage.chains import warehouse_facts
from chronoscope_dagster.chains.records import generate_family
from chronoscope_dagster.chains.templates import load_templates
from chronoscope_dagster.warehouse import Warehouse

home, year, index, count, out = sys.argv[1:6]
started = time.perf_counter()
scope = int(index) if int(count) > 1 else None
facts = warehouse_facts(
    Warehouse(Path(home)), year, Shard(int(index), int(count)), indexed=True, scope=scope
)
loaded = time.perf_counter() - started
templates, chains, digest = load_templates("en"), 0, hashlib.sha256()
for family in FAMILIES:
    output = generate_family(facts, family, templates, 42)
    chains += len(output.chains)
    path = Path(out) / f"{family}-{index}.parquet"
    pq.write_table(output.table, path)
    digest.update(path.read_bytes())
    digest.update(repr(sorted(output.refused, key=repr)).encode())
print(json.dumps({"load_s": loaded, "total_s": time.perf_counter() - started,
                  "digest": digest.hexdigest()[:16],
                  "subjects": len(facts.pids_by_subject), "chains": chains,
                  "golds": sum(map(len, facts.golds.values())),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""
INDEX = """
import json, resource, sys, time
from pathlib import Path
from chronoscope_dagster.storage.chains import write_chain_index
from chronoscope_dagster.warehouse import Warehouse

started = time.perf_counter()
passes = write_chain_index(Warehouse(Path(sys.argv[1])), sys.argv[2], int(sys.argv[3]))
print(json.dumps({"total_s": time.perf_counter() - started, "passes": len(passes),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def run_json(script: str, *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
    )
    if done.returncode:
        sys.exit(f"{args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def merged_digest(folder: Path, count: int) -> str:
    """One digest of every family merged from its shards, as the merge step writes them."""
    import pyarrow.parquet as pq

    from chronoscope_dagster.chains.families import FAMILIES
    from chronoscope_dagster.chains.records import merged_turns

    digest = hashlib.sha256()
    for family in FAMILIES:
        parts = [pq.read_table(folder / f"{family}-{index}.parquet") for index in range(count)]
        buffer = io.BytesIO()
        pq.write_table(merged_turns(parts), buffer, compression="zstd")
        digest.update(buffer.getvalue())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("--year", default="2025")
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--first", type=int, default=0, help="run only the first N shards")
    args = parser.parse_args()
    digests = {}
    with tempfile.TemporaryDirectory(prefix="bench-reach-") as scratch:
        for count in args.shards:
            built = run_json(INDEX, str(args.home), args.year, str(count))
            print(
                f"{count} shards: snapshot index and scopes "
                f"({built['passes']} pass{'' if built['passes'] == 1 else 'es'}) "
                f"{built['total_s']:.1f} s, "
                f"peak {built['peak_mb']:,} MB",
                flush=True,
            )
            folder = Path(scratch) / str(count)
            folder.mkdir()
            rows = []
            for index in range(min(count, args.first or count)):
                rows.append(
                    run_json(SHARD, str(args.home), args.year, str(index), str(count), str(folder))
                )
                row = rows[-1]
                print(
                    f"{count} shards, shard {index}: load {row['load_s']:.1f} s, total "
                    f"{row['total_s']:.1f} s, {row['subjects']:,} subjects and "
                    f"{row['golds']:,} golds indexed, "
                    f"{row['chains']:,} chains (digest {row['digest']}), peak {row['peak_mb']:,} MB",
                    flush=True,
                )
            print(
                f"{count} shards: {sum(r['total_s'] for r in rows):.1f} s in all, "
                f"largest peak {max(r['peak_mb'] for r in rows):,} MB, "
                f"{sum(r['chains'] for r in rows):,} chains",
                flush=True,
            )
            if not args.first:
                digests[count] = merged_digest(folder, count)
    if args.first:
        return
    identical = len(set(digests.values())) == 1
    print("merged families byte-identical for every shard count:", identical)
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
