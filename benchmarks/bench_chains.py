"""Chain generation throughput: every family over a synthetic truth table.

    python benchmarks/bench_chains.py [--rows 1000000 5000000]

Builds a truth table shaped like the real one (subjects with several chain
properties, year anchors over spans of 5-40 years with values changing every
few years, some two-valued years, some timeless pairs; values drawn from the
subjects' own QID range, so subjects share values and values are subjects, as
cross-entity and bridged chains need) and labels for every QID, then times indexing (SnapshotFacts) and each family's generation, and
prints chains/s and peak memory per size, so the growth with input size shows
(the reference's generator is quadratic).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import duckdb
import numpy as np
import pyarrow as pa

from chronoscope_dagster.chains.families import FAMILIES, family_module
from chronoscope_dagster.chains.reach import table_facts
from chronoscope_dagster.chains.templates import load_templates
from chronoscope_dagster.wikidata.properties import default_catalog


def synthetic_truth(rows: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)
    pids = list(default_catalog().chain_pids)
    anchor, subject, pid, values, canonical = [], [], [], [], []
    qids: set[int] = set()
    subject_number = 0
    while len(anchor) < rows:
        subject_number += 1
        for p in rng.choice(pids, size=3, replace=False):
            base = int(rng.integers(1, max(rows // 40, 100)))
            if rng.random() < 0.3:
                anchor.append(None)
                subject.append(f"Q{subject_number}")
                pid.append(str(p))
                values.append([f"Q{base}"])
                canonical.append(f"Q{base}")
                qids.add(base)
                continue
            start = int(rng.integers(1950, 2015))
            for year in range(start, min(2025, start + int(rng.integers(5, 40))) + 1):
                value = base + (year - start) // 4
                held = [value, value + 1] if (year - start) % 4 == 3 else [value]
                anchor.append(str(year))
                subject.append(f"Q{subject_number}")
                pid.append(str(p))
                values.append([f"Q{v}" for v in held])
                canonical.append(f"Q{held[-1]}")
                qids.update(held)
    qids.update(range(1, subject_number + 1))
    truth = pa.table(
        {
            "anchor": anchor,
            "subject_qid": subject,
            "pid": pid,
            "value_qids": values,
            "canonical_value_qid": canonical,
        }
    )
    ordered = sorted(qids)
    labels = pa.table(
        {
            "qid": [f"Q{q}" for q in ordered],
            "label": [f"Entity {_letters(q)}" for q in ordered],
            "description": pa.nulls(len(ordered), pa.string()),
            "aliases": pa.array([[] for _ in ordered], pa.list_(pa.string())),
        }
    )
    return truth, labels


def synthetic_intervals(truth: pa.Table) -> pa.Table:
    """``fact_intervals`` rows saying what the truth rows say: each value of a year anchor holds
    that whole year; a row without anchor is timeless."""
    return duckdb.sql(
        """SELECT subject_qid, pid, unnest(value_qids) AS value_qid,
                  make_date(CAST(anchor AS INTEGER), 1, 1) AS valid_from,
                  make_date(CAST(anchor AS INTEGER), 12, 31) AS valid_until,
                  NULL::DATE AS certain_until, anchor IS NULL AS is_timeless,
                  FALSE AS end_unknown
           FROM truth"""
    ).to_arrow_table()


def _letters(number: int) -> str:
    """A name without digits (families refuse digit-bearing names that could read as years)."""
    text = ""
    while number:
        number, digit = divmod(number, 26)
        text = "abcdefghijklmnopqrstuvwxyz"[digit] + text
    return text.capitalize()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    args = parser.parse_args()
    templates = load_templates()
    for rows in args.rows:
        truth, labels = synthetic_truth(rows)
        started = time.perf_counter()
        facts = table_facts(2025, truth, labels, intervals=synthetic_intervals(truth))
        index_seconds = time.perf_counter() - started
        print(f"\n{truth.num_rows:,} truth rows; indexing {index_seconds:.1f} s")
        total_chains, total_seconds = 0, index_seconds
        for family in FAMILIES:
            started = time.perf_counter()
            chains = sum(1 for _ in family_module(family).generate(facts, templates, 42))
            seconds = time.perf_counter() - started
            total_chains += chains
            total_seconds += seconds
            print(
                f"  {family:<20}{chains:>10,} chains {seconds:>8.1f} s {chains / seconds:>10,.0f}/s"
            )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {'all':<20}{total_chains:>10,} chains {total_seconds:>8.1f} s "
              f"{total_chains / total_seconds:>10,.0f}/s; peak RSS {peak:,.0f} MB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
