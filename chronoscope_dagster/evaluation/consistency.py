"""Invariants every metrics table must hold, as the checks gate on them: known names, values
in range and inside their intervals, and each overall value between its strata, their
denominator-weighted mean where it is one."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from chronoscope_dagster.evaluation.metrics import (
    CHAIN_METRICS,
    COUNTS,
    DIMENSIONS,
    METRICS,
    OVERALL,
    SUBSETS,
    split_stratum,
)


def _dimensions_of(metric: str) -> tuple[str, ...]:
    """Dimensions over which the overall value is a weighted mean of the strata values: every
    ratio divides a sum by a sum over a partition (turns for turn metrics; chains, or chains
    with a scored final turn, for chain metrics, which exist only in chain-partitioning
    dimensions)."""
    return ("family", "length") if metric in CHAIN_METRICS else DIMENSIONS


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def consistency_problems(metrics: pa.Table, *, tolerance: float = 1e-9) -> list[str]:
    """Invariants of a metrics table (one or many (model, setting) groups, if it has those
    columns); human-readable problems, empty when all hold.

    Checked: known metric and stratum names (a subset stratum, ``metrics.SUBSETS``, is checked
    alone: it is no level of a dimension), one row per (stratum, metric), finite values,
    counts non-negative integers, rates and CI bounds in [0, 1], both CI bounds or neither and
    ci_low <= value <= ci_high, no chain metric in a follow-up stratum, @k >= @1, strict chain <=
    average per-chain accuracy; per dimension, every overall ratio lies between the smallest and
    largest value of its strata (and, when a ``denominator`` column exists, equals their
    denominator-weighted mean and its denominator their sum), overall n_turns is the sum over
    every dimension and n_chains the sum over family and length."""
    names = set(metrics.column_names)
    missing = {"stratum", "metric", "value"} - names
    if missing:
        return [f"metrics table lacks columns {sorted(missing)}"]
    group_columns = [c for c in ("model", "setting") if c in names]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in metrics.to_pylist():
        groups.setdefault(tuple(row[c] for c in group_columns), []).append(row)
    problems: list[str] = []
    for key, rows in groups.items():
        prefix = " ".join(f"{c}={v}" for c, v in zip(group_columns, key, strict=True))
        found = _group_problems(rows, tolerance)
        problems.extend(f"{prefix}: {p}" if prefix else p for p in found)
    return problems


def _group_problems(rows: list[dict[str, Any]], tol: float) -> list[str]:
    problems: list[str] = []
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        stratum, metric = row["stratum"], row["metric"]
        where = f"{stratum} {metric}"
        try:
            dimension, _ = split_stratum(stratum)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if metric not in METRICS:
            problems.append(f"{where}: unknown metric")
            continue
        if (stratum, metric) in table:
            problems.append(f"{where}: more than one row")
            continue
        value = row["value"]
        if _is_missing(value) or not math.isfinite(value):
            problems.append(f"{where}: value is {value!r}")
            continue
        table[(stratum, metric)] = row
        low, high = row.get("ci_low"), row.get("ci_high")
        if metric in COUNTS:
            if value < 0 or value != int(value):
                problems.append(f"{where}: count {value!r} is not a non-negative integer")
            if not (_is_missing(low) and _is_missing(high)):
                problems.append(f"{where}: a count has a CI")
            continue
        if dimension == "followup_pos" and metric in CHAIN_METRICS:
            problems.append(f"{where}: chain metric in a follow-up position stratum")
        if dimension in SUBSETS and metric in CHAIN_METRICS:
            problems.append(f"{where}: chain metric in a stratum of some turns of a chain")
        if not -tol <= value <= 1 + tol:
            problems.append(f"{where}: value {value!r} outside [0, 1]")
        if _is_missing(low) != _is_missing(high):
            problems.append(f"{where}: only one CI bound ({low!r}, {high!r})")
        elif not _is_missing(low):
            if not (-tol <= low <= 1 + tol and -tol <= high <= 1 + tol):
                problems.append(f"{where}: CI [{low!r}, {high!r}] outside [0, 1]")
            if not low - tol <= value <= high + tol:
                problems.append(f"{where}: CI [{low!r}, {high!r}] does not contain {value!r}")

    def value_of(stratum: str, metric: str) -> float | None:
        row = table.get((stratum, metric))
        return None if row is None else float(row["value"])

    strata = sorted({s for s, _ in table})
    for stratum in strata:
        for low_metric, high_metric in (
            ("acc_at1", "acc_atk"),
            ("final_turn_acc_at1", "final_turn_acc_atk"),
            ("strict_chain_acc_at1", "avg_chain_turn_acc_at1"),
        ):
            lo, hi = value_of(stratum, low_metric), value_of(stratum, high_metric)
            if lo is not None and hi is not None and lo > hi + tol:
                problems.append(f"{stratum}: {low_metric} {lo!r} above {high_metric} {hi!r}")

    by_dimension: dict[str, list[str]] = {d: [] for d in DIMENSIONS}
    for stratum in strata:
        dimension, _ = split_stratum(stratum)
        if dimension in by_dimension:
            by_dimension[dimension].append(stratum)
    for metric in METRICS:
        overall = table.get((OVERALL, metric))
        if overall is None:
            continue
        for dimension in DIMENSIONS:
            members = by_dimension[dimension]
            if not members:
                continue
            parts = [table[(s, metric)] for s in members if (s, metric) in table]
            if metric in COUNTS:
                if metric == "n_chains" and dimension == "followup_pos":
                    continue
                total = sum(float(p["value"]) for p in parts)
                if total != float(overall["value"]):
                    problems.append(
                        f"overall {metric} {overall['value']!r} != sum over {dimension} {total!r}"
                    )
                continue
            if dimension not in _dimensions_of(metric):
                continue
            problems.extend(_mean_problems(metric, dimension, overall, parts, tol))
    return problems


def _mean_problems(
    metric: str, dimension: str, overall: dict[str, Any], parts: list[dict[str, Any]], tol: float
) -> list[str]:
    value = float(overall["value"])
    if not parts:
        return [f"overall {metric} exists but no {dimension} stratum has it"]
    values = [float(p["value"]) for p in parts]
    problems = []
    if not min(values) - tol <= value <= max(values) + tol:
        problems.append(
            f"overall {metric} {value!r} outside the range of its {dimension} strata "
            f"[{min(values)!r}, {max(values)!r}]"
        )
    weights = [p.get("denominator") for p in parts]
    if "denominator" in overall and overall["denominator"] is not None:
        if any(w is None for w in weights):
            return [*problems, f"{metric} by {dimension}: a stratum lacks its denominator"]
        total = sum(weights)
        if total != overall["denominator"]:
            problems.append(
                f"overall {metric} denominator {overall['denominator']} != sum over "
                f"{dimension} {total}"
            )
        elif total > 0:
            mean = sum(w * v for w, v in zip(weights, values, strict=True)) / total
            if abs(mean - value) > tol:
                problems.append(
                    f"overall {metric} {value!r} != weighted mean of its {dimension} strata "
                    f"{mean!r}"
                )
    return problems
