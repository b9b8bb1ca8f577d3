"""Building claims tables by hand and computing their truth, for the truth tests."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.truth.anchors import Anchor
from chronoscope_dagster.truth.intervals import build_intervals
from chronoscope_dagster.truth.table import write_truth
from chronoscope_dagster.wikidata.extract import claims_schema
from chronoscope_dagster.wikidata.properties import default_catalog


@dataclass
class Claim:
    subject: str
    pid: str
    value: str
    start: tuple[str, int] | None = None  # (ISO first day, precision)
    end: tuple[str, int] | None = None
    point: tuple[str, int] | None = None
    rank: str = "normal"
    end_unknown: bool = False
    replaces: tuple[str, ...] = ()


def claims_table(claims: list[Claim]) -> pa.Table:
    schema = claims_schema(default_catalog())
    columns: dict[str, list] = {name: [] for name in schema.names}
    for index, claim in enumerate(claims):
        row = {name: None for name in schema.names}
        row.update(
            subject_qid=claim.subject, pid=claim.pid, value_qid=claim.value, rank=claim.rank,
            statement_id=f"{claim.subject}$S{index}", end_unknown=claim.end_unknown,
        )  # fmt: skip
        for name, value in (
            ("start", claim.start),
            ("end", claim.end),
            ("point_in_time", claim.point),
        ):
            if value:
                row[f"{name}_date"] = date.fromisoformat(value[0])
                row[f"{name}_precision"] = value[1]
                row[f"{name}_calendar"] = "gregorian"
        if claim.replaces:
            row["q_replaces"] = list(claim.replaces)
        for name in schema.names:
            columns[name].append(row[name])
    return pa.table(columns, schema=schema)


def day(iso: str) -> Anchor:
    return Anchor(date.fromisoformat(iso), "day")


def year(number: int) -> Anchor:
    return Anchor(date(number, 1, 1), "year")


def compute(
    claims: list[Claim] | pa.Table,
    anchors: list[Anchor],
    anchors_per_query: int = 100,
    lifespans: pa.Table | None = None,
):
    """(interval counts, intervals table, truth rows keyed by (anchor, subject, pid)); the
    single-holder properties are the property list's, as in the pipeline."""
    table = claims if isinstance(claims, pa.Table) else claims_table(claims)
    connection = duckdb.connect()
    connection.register("claims_in", table)
    if lifespans is not None:
        connection.register("lifespans_in", lifespans)
    counts = build_intervals(
        connection,
        "claims_in",
        "fact_intervals",
        lifespans=None if lifespans is None else "lifespans_in",
        functional=default_catalog().functional_pids,
    )
    intervals = connection.sql("SELECT * FROM fact_intervals").to_arrow_table()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "truth.parquet"
        write_truth(connection, "fact_intervals", anchors, path, anchors_per_query)
        truth = pq.read_table(path).to_pylist()
    return counts, intervals, {(r["anchor"], r["subject_qid"], r["pid"]): r for r in truth}
