"""Truth throughput: intervals and anchored truth from a synthetic claims table.

    python benchmarks/bench_truth.py [--statements 5000000] [--threads 2]

Builds a claims table shaped like the extracted one (1 in 2.5 statements timeless,
the rest with start/end of day, month or year precision, some open, some points in
time, a few unknown ends, several values per subject and property), writes it as
Parquet, then times fact_intervals and truth (the default calendar of snapshot
2025: 4 day anchors + 76 year anchors) as the assets run them, and prints rows/s
and the peak resident memory. Run at two sizes to see how time grows with input.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.truth.anchors import default_calendar
from chronoscope_dagster.truth.intervals import build_intervals
from chronoscope_dagster.truth.table import write_truth
from chronoscope_dagster.warehouse import parquet_source, write_query
from chronoscope_dagster.wikidata.extract import claims_schema
from chronoscope_dagster.wikidata.properties import default_catalog

EPOCH_1950 = -7305
EPOCH_2025 = 20089


def synthetic_claims(statements: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    catalog = default_catalog()
    pids = np.array(catalog.pids)
    subjects = rng.integers(1, max(statements // 5, 2), statements)
    values = rng.integers(1, 10_000_000, statements)
    kind = rng.random(statements)
    timeless = kind < 0.4
    point = (kind >= 0.4) & (kind < 0.45)
    dated = kind >= 0.45
    start = rng.integers(EPOCH_1950, EPOCH_2025, statements)
    length = rng.integers(30, 6000, statements)
    has_start = dated & (rng.random(statements) < 0.95)
    has_end = dated & (rng.random(statements) < 0.6)
    end_unknown = dated & ~has_end & (rng.random(statements) < 0.01)
    precision = rng.choice(np.array([9, 10, 11], dtype=np.int8), statements, p=[0.2, 0.2, 0.6])

    def dates(mask: np.ndarray, epoch: np.ndarray) -> pa.Array:
        return pa.array(np.where(mask, epoch, 0).astype("int32"), pa.int32(), mask=~mask).cast(
            pa.date32()
        )

    def precisions(mask: np.ndarray) -> pa.Array:
        return pa.array(precision, pa.int8(), mask=~mask)

    def calendars(mask: np.ndarray) -> pa.Array:
        return pa.array(np.full(statements, "gregorian"), pa.string(), mask=~mask)

    schema = claims_schema(catalog)
    columns = {
        "subject_qid": pa.array(np.char.add("Q", subjects.astype(str))),
        "pid": pa.array(pids[rng.integers(0, len(pids), statements)]),
        "value_qid": pa.array(np.char.add("Q", values.astype(str))),
        "rank": pa.array(np.where(rng.random(statements) < 0.05, "preferred", "normal")),
        "statement_id": pa.array(np.char.add("S", np.arange(statements).astype(str))),
        "start_date": dates(has_start, start),
        "start_precision": precisions(has_start),
        "start_calendar": calendars(has_start),
        "end_date": dates(has_end, start + length),
        "end_precision": precisions(has_end),
        "end_calendar": calendars(has_end),
        "point_in_time_date": dates(point, start),
        "point_in_time_precision": precisions(point),
        "point_in_time_calendar": calendars(point),
        "end_unknown": pa.array(end_unknown),
    }
    del timeless
    for name in schema.names:
        if name not in columns:
            columns[name] = pa.nulls(statements, schema.field(name).type)
    return pa.table(columns, schema=schema)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--statements", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads")
    parser.add_argument(
        "--memory-limit",
        default="",
        help="DuckDB memory_limit, as CHRONOSCOPE_DUCKDB_MEMORY_LIMIT sets it (default: DuckDB's)",
    )
    args = parser.parse_args()
    anchors = default_calendar(2025)
    limit = args.memory_limit or "DuckDB's default"
    print(f"{len(anchors)} anchors; DuckDB threads {args.threads}; memory limit {limit}\n")
    print(
        f"{'statements':>11}{'intervals s':>13}{'truth s':>9}{'truth rows':>12}{'statements/s':>14}{'peak RSS MB':>13}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        for count in args.statements:
            claims_path = Path(scratch) / f"claims-{count}.parquet"
            pq.write_table(synthetic_claims(count), claims_path)
            config = {"threads": args.threads, "temp_directory": str(Path(scratch) / "spill")}
            if args.memory_limit:
                config["memory_limit"] = args.memory_limit
            connection = duckdb.connect(config=config)
            started = time.perf_counter()
            build_intervals(connection, parquet_source(claims_path), "fact_intervals")
            intervals_path = Path(scratch) / "intervals.parquet"
            write_query(connection, "SELECT * FROM fact_intervals", intervals_path)
            intervals_seconds = time.perf_counter() - started
            connection.execute("DROP TABLE fact_intervals")
            started = time.perf_counter()
            rows = write_truth(
                connection, parquet_source(intervals_path), anchors, Path(scratch) / "truth.parquet"
            )
            truth_seconds = time.perf_counter() - started
            connection.close()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            total = intervals_seconds + truth_seconds
            print(f"{count:>11,}{intervals_seconds:>13.2f}{truth_seconds:>9.2f}{rows:>12,}"
                  f"{count / total:>14,.0f}{peak:>13,.0f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
