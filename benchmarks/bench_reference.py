"""The authors' stages 2 and 3 on a dump, as the benchmark our chain stage is held to.

    python benchmarks/bench_reference.py DUMP.json.gz WORKDIR --reference DIR
        [--venv DIR] [--home HOME] [--json OUT]

Issue 37 asks that our chain stage (checks included) take at most half the time of the
reference's stages 2 and 3 together, on the same label-complete dump (e.g. one made by
../shared/tools/synth_dump_linked.py). This script measures that reference side; put its
``--json`` beside bench_stages.py's figures for ours.

The reference is the authors' repository, checked out by you outside this project (their code
must not be copied into it):

    git clone https://github.com/yashkumaratri/ChronoScope /path/to/ChronoScope

In WORKDIR it

1. creates (or reuses) a virtualenv of its own (``--venv``, default WORKDIR/venv) with the
   packages the stage scripts import, from the package index: polars below 2 (their stage 2
   calls ``collect(streaming=True)``, which polars 2 removed), duckdb, zstandard and tqdm (the
   repository ships no requirements file). Nothing is installed into this project's venv;
2. writes the label file their stage 3 reads with ``--label_parquet`` (columns id, label,
   lang, description; one row per entity with an English label): from our extraction's
   ``labels`` of snapshot 2025 when ``--home`` is given, otherwise from one streaming pass over
   the dump. Their ``build_label_db.py`` (unchanged) turns it into the DuckDB label table that
   their stage 1 filters with;
3. runs, as snapshot 2025 and each in its own process: their stage 1 on the dump (``--source
   raw``), then stage 2 (``--years 2025``, the default four anchors), then stage 3 once per
   (truth type, anchor), as its ``main`` demands (it refuses more than one anchor per run
   unless ``--skip_per_anchor``), and once more for the cross-anchor chains
   (``--truth_types temporal --skip_per_anchor --build_cross_anchor``);
4. prints each invocation's wall time, CPU time (user + system: a busy machine lengthens the
   wall time, hardly the CPU time) and peak resident memory (the largest process under it,
   from ``wait4`` in a small interpreter that spawns it), and a table per stage: stage 1 and
   the label steps are timed but stand apart; the comparison is the total of stages 2 and 3.

Stage 3 and ``build_label_db.py`` run from the checkout as they are. Stages 1 and 2 hard-code
their data roots as module constants, so they run from copies in WORKDIR/scripts in which
only those path constants are changed; the edits are printed (and written to the JSON).

Run it under ``nice -n 19`` on a shared machine; the polars steps use every core.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

YEAR = 2025
"""The snapshot year the dump is built as; their stage 3's present-day lookup reads 2025."""
ANCHORS = [f"{YEAR}-{month_day}" for month_day in ("01-01", "04-01", "07-01", "10-01")]
"""Their stage 2's default anchors for YEAR."""
TRUTH_TYPES = ("temporal", "timeless")
REQUIREMENTS = ["polars<2", "duckdb", "zstandard", "tqdm"]
"""What their stage scripts import (they ship no requirements file)."""
PATH_CONSTANTS = {
    "extract_stage1.py": ("ROOT", "RAW_DUMPS"),
    "build_stage2_truth.py": ("ROOT",),
}
"""The scripts whose data roots are module constants, and those constants."""
SUMMARY = {
    "label_db": ("label db (build_label_db.py, apart)", ("label db",)),
    "stage1": ("stage 1 (apart)", ("stage 1",)),
    "stage2": ("stage 2", ("stage 2",)),
    "stage3": ("stage 3", ("stage 3",)),
    "stage2+3": ("stages 2+3 (the comparator)", ("stage 2", "stage 3")),
}
"""The table's rows: JSON key, title, and the invocations' stages they sum."""
MARKER = ".bench_reference"
"""Marks a directory this script made, so it only ever clears its own."""


@dataclass
class Invocation:
    """One process of theirs: what ran, how long, how much memory."""

    stage: str
    name: str
    command: list[str]
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_mb: float = 0.0
    returncode: int = 0


@dataclass
class Report:
    """Everything the run measured, as written by ``--json``."""

    dump: str
    reference: str
    reference_commit: str | None
    venv_versions: dict[str, str] = field(default_factory=dict)
    label_source: str = ""
    label_rows: int = 0
    edits: list[dict[str, str]] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)
    stage1_rows: int | None = None
    chains: dict[str, int] = field(default_factory=dict)
    flat_questions: int = 0

    def stage(self, *stages: str) -> dict[str, float]:
        """Invocations, summed wall and CPU seconds, and the largest peak of the given stages."""
        runs = [i for i in self.invocations if i.stage in stages]
        return {
            "invocations": len(runs),
            "seconds": sum(i.seconds for i in runs),
            "cpu_seconds": sum(i.cpu_seconds for i in runs),
            "peak_mb": max((i.peak_mb for i in runs), default=0.0),
        }


def ensure_venv(venv: Path) -> Path:
    """The reference's interpreter: ``venv`` made with REQUIREMENTS unless it already has them."""
    python = venv / "bin" / "python"
    probe = (
        "import duckdb, polars, tqdm, zstandard; assert int(polars.__version__.split('.')[0]) < 2"
    )
    if venv == Path(sys.prefix).resolve():
        sys.exit(f"{venv} runs this benchmark; their scripts need a virtualenv of their own")
    if python.exists() and subprocess.run([python, "-c", probe]).returncode == 0:
        return python
    _claim(venv)
    print(f"creating {venv} with {' '.join(REQUIREMENTS)}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    (venv / MARKER).touch()
    subprocess.run([python, "-m", "pip", "install", "--quiet", *REQUIREMENTS], check=True)
    return python


def _claim(directory: Path) -> None:
    """Create ``directory``, or make sure it is empty or one this script made."""
    if directory.exists() and any(directory.iterdir()) and not (directory / MARKER).exists():
        sys.exit(f"{directory} is not empty and was not made by this script; give another")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).touch()


def package_versions(python: Path) -> dict[str, str]:
    """The interpreter's and the main packages' versions."""
    script = (
        "import json, sys, duckdb, polars, zstandard; print(json.dumps({'python': "
        "sys.version.split()[0], 'polars': polars.__version__, 'duckdb': duckdb.__version__, "
        "'zstandard': zstandard.__version__}))"
    )
    done = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def labels_from_dump(dump: Path, out: Path) -> int:
    """English label and description of every entity in ``dump``, in one streaming pass."""
    ids, labels, descriptions = [], [], []
    with gzip.open(dump, "rb") as handle:
        for raw in handle:
            line = raw.strip().rstrip(b",")
            if not line or line in (b"[", b"]"):
                continue
            entity = orjson.loads(line)
            label = (entity.get("labels") or {}).get("en")
            if not label or not label.get("value"):
                continue
            description = (entity.get("descriptions") or {}).get("en") or {}
            ids.append(entity["id"])
            labels.append(label["value"])
            descriptions.append(description.get("value"))
    return _write_labels(out, ids, labels, descriptions)


def labels_from_home(home: Path, out: Path) -> int:
    """Our extraction's English labels of snapshot YEAR, in the reference's label layout."""
    table = pq.read_table(
        home / "labels" / f"snapshot_year={YEAR}" / "data.parquet",
        columns=["qid", "label", "description"],
    )
    table = table.filter(pc.is_valid(table["label"]))
    return _write_labels(
        out,
        table["qid"].to_pylist(),
        table["label"].to_pylist(),
        table["description"].to_pylist(),
    )


def _write_labels(
    out: Path, ids: list[str], labels: list[str], descriptions: list[str | None]
) -> int:
    table = pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "label": pa.array(labels, pa.string()),
            "lang": pa.array(["en"] * len(ids), pa.string()),
            "description": pa.array(descriptions, pa.string()),
        }
    )
    pq.write_table(table, out)
    return table.num_rows


def copy_with_paths(
    source: Path, target: Path, roots: dict[str, Path], edits: list[dict[str, str]]
) -> None:
    """Copy a script of theirs, changing only its data-root constants to ``roots``."""
    text = source.read_text(encoding="utf-8")
    for name, path in roots.items():
        pattern = re.compile(rf'^{name} = Path\("[^"\n]*"\)$', re.MULTILINE)
        found = pattern.findall(text)
        if len(found) != 1:
            sys.exit(f'{source}: expected one line `{name} = Path("...")`, found {len(found)}')
        new = f"{name} = Path({str(path)!r})"
        text = pattern.sub(lambda _, line=new: line, text)
        edits.append({"file": source.name, "old": found[0], "new": new})
    target.write_text(text, encoding="utf-8")


MEASURE = (
    "import os, sys, time; started = time.perf_counter(); "
    "pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ); _, status, usage = os.wait4(pid, 0); "
    "open(sys.argv[1], 'w').write(f'{time.perf_counter() - started} "
    "{usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}'); "
    "sys.exit(os.waitstatus_to_exitcode(status))"
)
"""Run argv[2:], write its wall seconds, CPU seconds and peak RSS (kB) to argv[1]. The measured process is
spawned from this small interpreter, not from the benchmark: a child's ru_maxrss starts from the
RSS of the process that forked it, which for the benchmark is far above a small run's peak."""


def run(python: Path, stage: str, name: str, args: list[str], log: Path) -> Invocation:
    """Run one script of theirs, its output to ``log``, under MEASURE."""
    invocation = Invocation(stage, name, [str(python), *args])
    figures = log.with_name("measured.txt")
    figures.unlink(missing_ok=True)
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(invocation.command)}\n".encode())
        out.flush()
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", MEASURE, str(figures), *invocation.command],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    invocation.returncode = done.returncode
    if not figures.exists():
        sys.exit(f"{name} could not be started: {' '.join(invocation.command)}")
    seconds, cpu_seconds, peak_kb = figures.read_text().split()
    invocation.seconds, invocation.cpu_seconds = float(seconds), float(cpu_seconds)
    invocation.peak_mb = int(peak_kb) / 1024
    print(
        f"  {name:<44}{invocation.seconds:>9.1f} s{invocation.cpu_seconds:>9.1f} cpu s"
        f"{invocation.peak_mb:>8,.0f} MB"
        + (f"  FAILED ({invocation.returncode}), see {log}" if invocation.returncode else ""),
        flush=True,
    )
    return invocation


def count_outputs(stage3: Path) -> tuple[dict[str, int], int]:
    """Chains per family (all chains.jsonl, cross-anchor included) and flat questions."""
    families: Counter[str] = Counter()
    for path in sorted(stage3.rglob("chains.jsonl")):
        with path.open("rb") as handle:
            families.update(orjson.loads(line)["family"] for line in handle if line.strip())
    flat = 0
    for path in stage3.rglob("data.jsonl"):
        with path.open("rb") as handle:
            flat += sum(1 for line in handle if line.strip())
    return dict(sorted(families.items())), flat


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dump", type=Path, help="a Wikidata JSON dump, .json.gz or .json.bz2")
    parser.add_argument("workdir", type=Path, help="where their inputs and outputs go")
    parser.add_argument(
        "--reference", type=Path, required=True, help="a checkout of their repository"
    )
    parser.add_argument("--venv", type=Path, help="their virtualenv (default WORKDIR/venv)")
    parser.add_argument("--home", type=Path, help="take the labels from this home's extraction")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    dump = args.dump.resolve()
    reference = args.reference.resolve()
    source = reference / "source"
    if not (source / "build_stage3_dataset.py").exists():
        sys.exit(f"{reference} is not a checkout of yashkumaratri/ChronoScope")
    if dump.suffix not in (".gz", ".bz2"):
        sys.exit("their stage 1 reads .json.gz or .json.bz2 dumps")
    workdir = args.workdir.resolve()
    _claim(workdir)
    commit = subprocess.run(
        ["git", "-C", str(reference), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    report = Report(str(dump), str(reference), commit.stdout.strip() or None)

    python = ensure_venv((args.venv or workdir / "venv").resolve())
    report.venv_versions = package_versions(python)

    # A fresh tree per run: their stage 1 keeps old parts, stage 3 appends and stops at _DONE.
    root, raw, stage3, scripts = (workdir / n for n in ("root", "raw", "stage3", "scripts"))
    for directory in (root, raw, stage3, scripts):
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
    log = workdir / "reference.log"
    log.unlink(missing_ok=True)
    # Their stage 1 takes the last `RAW_DUMPS/<year>/*/wikidata-*-all.json.<gz|bz2>`.
    (raw / str(YEAR) / "bench").mkdir(parents=True)
    (raw / str(YEAR) / "bench" / f"wikidata-bench-all.json{dump.suffix}").symlink_to(dump)
    for script, constants in PATH_CONSTANTS.items():
        roots = {"ROOT": root, "RAW_DUMPS": raw}
        copy_with_paths(
            source / script, scripts / script, {c: roots[c] for c in constants}, report.edits
        )

    print(
        f"{dump.name}: {dump.stat().st_size / 1e6:,.0f} MB compressed; reference {reference}"
        f" at {report.reference_commit}; {report.venv_versions}"
    )
    print("edits (paths only):")
    for edit in report.edits:
        print(f"  {edit['file']}: {edit['old']}  ->  {edit['new']}")

    labels = workdir / "labels_en.parquet"
    started = time.perf_counter()
    if args.home:
        report.label_rows = labels_from_home(args.home.resolve(), labels)
        report.label_source = f"our extraction's labels in {args.home.resolve()}"
    else:
        report.label_rows = labels_from_dump(dump, labels)
        report.label_source = "one streaming pass over the dump (entities' English labels)"
    print(
        f"\nlabel file: {report.label_rows:,} English labels in "
        f"{time.perf_counter() - started:.1f} s, from {report.label_source}\n"
    )

    def step(stage: str, name: str, script: Path, *arguments: str) -> None:
        report.invocations.append(run(python, stage, name, [str(script), *arguments], log))

    label_db = root / "label_maps" / "labels_en.duckdb"
    step("label db", "build_label_db.py", source / "build_label_db.py",
         "--labels_parquet", str(labels), "--out_db", str(label_db))  # fmt: skip
    step("stage 1", "extract_stage1.py (raw dump)", scripts / "extract_stage1.py",
         "--year", str(YEAR), "--source", "raw")  # fmt: skip
    step("stage 2", "build_stage2_truth.py", scripts / "build_stage2_truth.py",
         "--years", str(YEAR))  # fmt: skip
    stage3_script = source / "build_stage3_dataset.py"
    common = ["--truth_root", str(root / "stage2_truth"), "--out_dir", str(stage3),
              "--label_parquet", str(labels), "--years", str(YEAR)]  # fmt: skip
    for truth_type in TRUTH_TYPES:
        for anchor in ANCHORS:
            step("stage 3", f"build_stage3_dataset.py {truth_type} {anchor}", stage3_script,
                 *common, "--anchor_dates", anchor, "--truth_types", truth_type)  # fmt: skip
    step("stage 3", "build_stage3_dataset.py cross-anchor", stage3_script,
         *common, "--truth_types", "temporal", "--skip_per_anchor", "--build_cross_anchor")  # fmt: skip

    manifest = root / "stage1_claims_full" / f"snapshot_year={YEAR}" / "stage1_manifest.json"
    if manifest.exists():
        report.stage1_rows = json.loads(manifest.read_text())["total_rows"]
    report.chains, report.flat_questions = count_outputs(stage3)

    summary = {key: report.stage(*stages) for key, (_, stages) in SUMMARY.items()}
    print(f"\n{'stage':<36}{'invocations':>12}{'seconds':>10}{'cpu s':>9}{'peak MB':>9}")
    for key, (title, _) in SUMMARY.items():
        figures = summary[key]
        print(f"{title:<36}{figures['invocations']:>12}{figures['seconds']:>10.1f}"
              f"{figures['cpu_seconds']:>9.1f}{figures['peak_mb']:>9,.0f}")  # fmt: skip
    print(
        f"\nstage 1 rows {report.stage1_rows}; stage 3: {sum(report.chains.values()):,} chains "
        f"({report.chains}), {report.flat_questions:,} flat questions; log {log}"
    )

    if args.json:
        args.json.write_text(
            json.dumps({**asdict(report), "stages": summary}, indent=2) + "\n", encoding="utf-8"
        )
    failed = [i.name for i in report.invocations if i.returncode]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
