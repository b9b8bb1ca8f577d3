"""The pipeline's dump-to-chains stages on real-shaped dumps, beside `gzip -dc`.

    python benchmarks/bench_stages.py DUMP.json.gz [DUMP ...] [--workers 1 2]
        [--chain-workers 1 2] [--keep DIR]

For each dump (e.g. made by ../shared/tools/synth_dump_linked.py, whose every value is a
labelled entity, so the chain stage has work to do), builds snapshot 2025 from it in a new
home with `chronoscope run`, one stage group per process, and prints each group's wall time
(with its asset checks), the 2025 partition's step times as the command line reports them,
and the group's peak resident memory (the largest process, workers included). Extraction
runs once per worker count, and the families once per chain worker count; the other stages
run on the last. The other snapshots are the embedded sample (seconds). Compare the times
with `gzip -dc` of the same file, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest import time_gzip  # this folder is on the path of a script run from it

CLI = Path(sys.executable).with_name("chronoscope")
STAGES = {
    "truth": "key:fact_intervals or key:truth or key:present_day",
    "families": "key:family_*",
    "turns and chains": "key:turns or key:chains",
}
STEP = re.compile(r"^==> (?P<label>.*)$")
DONE = re.compile(r"^    (ok|FAILED) in (?P<seconds>[\d.]+) s")


PEAK = "peak-rss-kb "
MEASURED = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
    f"print({PEAK!r} + str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
    "sys.exit(done.returncode)"
)
"""Runs a command and prints the peak RSS of the largest process under it."""


def run_stage(home: Path, dump: Path, selection: str, *options: str) -> dict:
    """One `chronoscope run --force` of ``selection`` (what is up to date is timed again):
    wall seconds, peak RSS and 2025's steps."""
    command = [str(CLI), "run", "--home", str(home), "--dump", f"2025={dump}"]
    command += ["--select", selection, "--force", *options]
    (home / "dagster").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "DAGSTER_HOME": str(home / "dagster")},
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-4000:]}")
    steps, label, peak_kb = {}, None, 0
    for line in done.stdout.splitlines():
        if match := STEP.match(line):
            label = match["label"]
        elif (match := DONE.match(line)) and label and "[2025]" in label:
            steps[label] = float(match["seconds"])
        elif line.startswith(PEAK):
            peak_kb = int(line.removeprefix(PEAK))
    return {"seconds": seconds, "steps": steps, "peak_mb": peak_kb / 1024, "output": done.stdout}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--chain-workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--keep", type=Path, help="build the homes here and keep them")
    args = parser.parse_args()
    for dump in args.dumps:
        root = args.keep or Path(tempfile.mkdtemp(prefix="bench-stages-"))
        gzip_seconds = time_gzip(dump)
        print(f"\n{dump.name}: {dump.stat().st_size / 1e6:,.0f} MB compressed; "
              f"gzip -dc {gzip_seconds:.1f} s")  # fmt: skip
        print(f"{'stage':<28}{'wall s':>8}{'x gzip':>8}{'peak MB':>9}  2025 steps (s)")
        home = root / dump.name.split(".")[0]
        for workers in args.workers:
            shutil.rmtree(home, ignore_errors=True)
            result = run_stage(home, dump, "claims", "--workers", str(workers))
            _print(f"extraction, {workers} worker(s)", result, gzip_seconds)
        for stage, selection in STAGES.items():
            if stage != "families":
                _print(stage, run_stage(home, dump, selection), gzip_seconds)
                continue
            for workers in args.chain_workers:
                result = run_stage(home, dump, selection, "--chain-workers", str(workers))
                _print(f"families, {workers} worker(s)", result, gzip_seconds)
        if not args.keep:
            shutil.rmtree(root)
    return 0


def _print(stage: str, result: dict, gzip_seconds: float) -> None:
    steps = ", ".join(
        f"{label.replace(' [2025]', '')} {s:.1f}" for label, s in result["steps"].items()
    )
    print(f"{stage:<28}{result['seconds']:>8.1f}{result['seconds'] / gzip_seconds:>8.2f}"
          f"{result['peak_mb']:>9,.0f}  {steps}", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
