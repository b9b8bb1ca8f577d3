"""The chain stage at several dump sizes, interleaved, with the authors' stages 2 and 3.

    python benchmarks/bench_chain_stage.py 50k=DUMP 400k=DUMP [--homes DIR] [--rounds 3]
        [--reference DIR] [--reference-workdir DIR] [--reference-rounds N] [--extraction DUMP]

Issue 37's series: for each SIZE=DUMP (a linked dump of SIZE entities, e.g. from
../shared/tools/synth_dump_linked.py; `k` and `M` suffixes), a home of snapshot 2025 built
once through `present_day` in DIR/SIZE (kept: built again only when missing), then
``--rounds`` rounds, each running every size's chain stage (`fact_intervals` .. `chains`,
every check, ``--force``) one after another, the largest first (a series cut short still has
its largest runs); with ``--reference`` the authors' stages 2 and 3 (``bench_reference.py``)
on the smallest dump after its run, in the first ``--reference-rounds`` rounds (default
all: theirs take about 14 minutes at 50k); and with ``--extraction`` issue 37's item 3,
``bench_ingest.py --dump`` on that dump (`gzip -dc`, ISA-L, extraction with 1 and 2
workers) at the end of each round. A run
prints its wall time, its stage groups (the command's own step times), the shard steps'
times and peaks as the steps log them, the largest process (``wait4`` of every process
under it), a digest of the families, ``turns`` and ``chains`` (byte-identical runs have one
digest per size), and the load average at its start. Then the medians (wall, groups, the
largest process) per size, the exponents of the medians between sizes, and the ratio of
each of the smallest size's runs to the reference's median.

Run it on an idle machine, with the settings to measure (`CHRONOSCOPE_DUCKDB_MEMORY_LIMIT=300MB`
for issue 37's figures): the figures compare only within one session's machine. To compare
two versions of the code on the same homes, run it from a directory outside the checkout
with `PYTHONPATH` on a worktree of the other version, one round at a time, alternating.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench_stages import DONE, STEP, run_stage  # this folder is on the path of a script run from it

CHAIN_STAGE = "key:fact_intervals or key:truth or key:present_day or key:family_* or " \
    "key:turns or key:chains"  # fmt: skip
GROUPS = {"truth": ("fact_intervals", "truth", "present_day"), "families": ("family_",),
          "turns+chains": ("turns", "chains")}  # fmt: skip
"""The stage groups a run reports, by how the first asset of their steps' labels begins."""
SHARD_STEP = re.compile(
    r"shard \d+ of \d+: \d+ families in (?P<s>[\d.]+) s, peak RSS (?P<mb>[\d,]+)"
)
INDEX_STEP = re.compile(
    r"snapshot index for the shards in (?P<s>[\d.]+) s, peak RSS (?P<mb>[\d,]+)"
)
MERGE_STEP = re.compile(r"merged \d+ shards? in (?P<s>[\d.]+) s, peak RSS (?P<mb>[\d,]+)")
DIGESTED = ("family_*/snapshot_year=2025/data.parquet", "turns/data.parquet", "chains/data.parquet")
HERE = Path(__file__).resolve().parent


@dataclass
class Run:
    size: str
    seconds: float
    groups: dict[str, float]
    shards: list[tuple[float, int]]
    index: tuple[float, int] | None
    merge: tuple[float, int] | None
    peak_mb: float
    digest: str
    load: float


def entities(size: str) -> float:
    """``50k`` -> 50,000."""
    number, unit = re.fullmatch(r"([\d.]+)([kM]?)", size).groups()
    return float(number) * {"": 1, "k": 1e3, "M": 1e6}[unit]


def build_home(home: Path, dump: Path) -> None:
    if (home / "present_day").exists():
        return
    print(f"building {home} from {dump.name} through present_day", flush=True)
    run_stage(home, dump, "+present_day", "--years", "2025")


def digest(home: Path) -> str:
    hashed = hashlib.sha256()
    for pattern in DIGESTED:
        for path in sorted(home.glob(pattern)):
            hashed.update(path.read_bytes())
    return hashed.hexdigest()[:16]


def chain_stage(size: str, home: Path, dump: Path) -> Run:
    load = os.getloadavg()[0]
    result = run_stage(home, dump, CHAIN_STAGE, "--years", "2025")
    groups, group = dict.fromkeys(GROUPS, 0.0) | {"other": 0.0}, None
    for line in result["output"].splitlines():
        if step := STEP.match(line):
            first = step["label"].split(",")[0].split(" ")[0]
            group = next((g for g, s in GROUPS.items() if first.startswith(s)), "other")
        elif (done := DONE.match(line)) and group:
            groups[group] += float(done["seconds"])

    def found(pattern: re.Pattern) -> list[tuple[float, int]]:
        return [(float(m["s"]), int(m["mb"].replace(",", ""))) for m in
                pattern.finditer(result["output"])]  # fmt: skip

    return Run(size, result["seconds"], groups, found(SHARD_STEP), next(iter(found(INDEX_STEP)), None),
               next(iter(found(MERGE_STEP)), None), result["peak_mb"], digest(home), load)  # fmt: skip


def reference(dump: Path, workdir: Path, source: Path, home: Path) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as figures:
        command = [sys.executable, str(HERE / "bench_reference.py"), str(dump), str(workdir),
                   "--reference", str(source), "--home", str(home), "--json", figures.name]  # fmt: skip
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        summary = json.loads(Path(figures.name).read_text())["stages"]
    return {"seconds": summary["stage2+3"]["seconds"], "cpu": summary["stage2+3"]["cpu_seconds"],
            "peak_mb": summary["stage2+3"]["peak_mb"], "stage1": summary["stage1"]["seconds"]}  # fmt: skip


def extraction(dump: Path) -> dict[str, float]:
    """One ``bench_ingest.py --dump`` (its lines echoed): the seconds of each of its runs."""
    with tempfile.NamedTemporaryFile(suffix=".json") as figures:
        command = [sys.executable, str(HERE / "bench_ingest.py"), "--dump", str(dump),
                   "--workers", "1", "2", "--json", figures.name]  # fmt: skip
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        print(done.stdout, end="", flush=True)
        return json.loads(Path(figures.name).read_text())


def print_run(run: Run) -> None:
    shard_s = [s for s, _ in run.shards]
    shard_mb = [mb for _, mb in run.shards]
    shards = (f"{len(shard_s)} shard steps {min(shard_s):.1f}-{max(shard_s):.1f} s "
              f"(mean {statistics.mean(shard_s):.1f}), {min(shard_mb)}-{max(shard_mb)} MB"
              if run.shards else "no shard steps")  # fmt: skip
    index = f"index {run.index[0]:.1f} s {run.index[1]} MB" if run.index else ""
    merge = f"merge {run.merge[0]:.1f} s {run.merge[1]} MB" if run.merge else ""
    groups = " ".join(f"{name} {s:.1f}" for name, s in run.groups.items() if s or name in GROUPS)
    print(f"{run.size:>6} {run.seconds:9.1f} s | {groups} | {shards} | {index} | {merge} | "
          f"largest {run.peak_mb:,.0f} MB | {run.digest} | load {run.load:.2f}", flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", nargs="+", help="SIZE=DUMP, e.g. 50k=linked-50k.json.gz")
    parser.add_argument("--homes", type=Path, default=Path("bench-chain-stage"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference", type=Path, help="a checkout of the authors' repository")
    parser.add_argument("--reference-workdir", type=Path, help="bench_reference.py's WORKDIR")
    parser.add_argument("--reference-rounds", type=int, help="run theirs in the first N rounds")
    parser.add_argument("--extraction", type=Path, help="bench_ingest.py --dump on it each round")
    args = parser.parse_args()
    dumps = dict(item.split("=", 1) for item in args.dumps)
    sizes = sorted(dumps, key=entities)
    homes = {size: args.homes / size for size in sizes}
    for size in sizes:
        build_home(homes[size], Path(dumps[size]))
    runs: list[Run] = []
    references: list[dict] = []
    extractions: list[dict[str, float]] = []
    for round_number in range(1, args.rounds + 1):
        print(f"round {round_number}", flush=True)
        for size in reversed(sizes):
            runs.append(chain_stage(size, homes[size], Path(dumps[size])))
            print_run(runs[-1])
            if (args.reference and size == sizes[0]
                    and round_number <= (args.reference_rounds or args.rounds)):  # fmt: skip
                workdir = args.reference_workdir or args.homes / "reference"
                references.append(reference(Path(dumps[size]), workdir, args.reference,
                                            homes[size]))  # fmt: skip
                print(f"{'theirs':>6} {references[-1]['seconds']:9.1f} s stages 2+3 "
                      f"({references[-1]['cpu']:.1f} cpu s, {references[-1]['peak_mb']:,.0f} MB); "
                      f"stage 1 {references[-1]['stage1']:.1f} s", flush=True)  # fmt: skip
        if args.extraction:
            extractions.append(extraction(args.extraction))
            print(f"{'item 3':>6} " + " | ".join(f"{name} {s:.2f} s" for name, s in
                                                 extractions[-1].items()), flush=True)  # fmt: skip
    print("\nmedians")
    medians = {}
    for size in sizes:
        mine = [run for run in runs if run.size == size]
        medians[size] = statistics.median(run.seconds for run in mine)
        groups = " ".join(
            f"{name} {statistics.median(run.groups[name] for run in mine):.1f}" for name in GROUPS
        )
        shard_means = [statistics.mean(s for s, _ in run.shards) for run in mine if run.shards]
        print(f"{size:>6} {medians[size]:9.1f} s ({min(r.seconds for r in mine):.1f}-"
              f"{max(r.seconds for r in mine):.1f}, {len(mine)} runs) | {groups} | shard step mean "
              f"{statistics.median(shard_means) if shard_means else 0:.1f} s | largest "
              f"{statistics.median(r.peak_mb for r in mine):,.0f} MB | digests "
              f"{' '.join(sorted({r.digest for r in mine}))}")  # fmt: skip
    for i, small in enumerate(sizes):
        for large in sizes[i + 1 :]:
            exponent = math.log(medians[large] / medians[small]) / math.log(
                entities(large) / entities(small)
            )
            print(f"exponent {small} -> {large}: {exponent:.3f}")
    if references:
        theirs = statistics.median(r["seconds"] for r in references)
        ratios = ", ".join(f"{run.seconds / theirs:.2f}" for run in runs if run.size == sizes[0])
        print(
            f"theirs (stages 2+3), median of {len(references)}: {theirs:.1f} s; "
            f"ours at {sizes[0]} / theirs: {ratios}"
        )
    if extractions:
        print(f"{args.extraction.name}, median of {len(extractions)}: " + " | ".join(
            f"{name} {statistics.median(e[name] for e in extractions):.2f} s" for name in extractions[0]))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
