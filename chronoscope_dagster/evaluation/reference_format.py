"""The reference evaluator's output JSON (spec 4.10), written from this project's metrics so
tooling built for the authors' files reads ours."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from chronoscope_dagster.evaluation.metrics import (
    COUNT_METRICS,
    DIMENSIONS,
    OVERALL,
    REFERENCE_METRICS,
    split_stratum,
)

SETTING_KEYS = {
    "gold_context": "gold",
    "questions_only": "questions_only",
    "self_conditioned": "self",
}


def _reference_m(values: Mapping[str, float]) -> dict[str, int | float]:
    return {
        metric: int(values.get(metric, 0)) if metric in COUNT_METRICS else values.get(metric, 0.0)
        for metric in REFERENCE_METRICS
    }


def _reference_setting(metrics: pa.Table, examples_key: str) -> dict[str, Any]:
    by_stratum: dict[str, dict[str, float]] = {}
    for stratum, metric, value in zip(
        metrics.column("stratum").to_pylist(),
        metrics.column("metric").to_pylist(),
        metrics.column("value").to_pylist(),
        strict=True,
    ):
        cell = by_stratum.setdefault(stratum, {})
        if metric in cell:
            raise ValueError(f"metrics table has more than one {stratum} {metric} row")
        cell[metric] = float(value)
    buckets: dict[str, dict[str, dict[str, int | float]]] = {d: {} for d in DIMENSIONS}
    keyed: dict[str, list[tuple[Any, str]]] = {d: [] for d in DIMENSIONS}
    for stratum in by_stratum:
        dimension, level = split_stratum(stratum)
        if level is not None:
            sort_key: Any = level if dimension == "family" else int(level)
            keyed[dimension].append((sort_key, stratum))
    for dimension in DIMENSIONS:
        for sort_key, stratum in sorted(keyed[dimension]):
            buckets[dimension][str(sort_key)] = _reference_m(by_stratum[stratum])
    return {
        "overall": _reference_m(by_stratum.get(OVERALL, {})),
        "by_family": buckets["family"],
        "by_length": buckets["length"],
        "by_followup_pos": buckets["followup_pos"],
        examples_key: [],
    }


def reference_results_json(
    metrics_by_setting: Mapping[str, pa.Table],
    *,
    model: str,
    data: str,
    seed: int,
    sampled_chains_gold_qonly: int,
    sampled_chains_self: int,
    args: Mapping[str, Any],
    runtime_seconds: float,
) -> dict[str, Any]:
    """The reference evaluator's output JSON (spec 4.10) from per-setting metrics tables.

    Settings map gold_context/questions_only/self_conditioned to gold/questions_only/self; only
    the settings given appear. Integer bucket keys are strings. The metrics are the reference's
    (``REFERENCE_METRICS``): the headline ``scope_acc_at1`` is not in its files. A metric our table leaves out
    (chain metrics by follow-up position, ratios with a zero denominator, a missing overall) is
    written as 0.0 (counts as 0), as the reference does, so existing tooling reads the file;
    those zeros are not measurements. ``n_chains`` by follow-up position is the number of chains
    with a turn there (the reference writes 0). ``examples`` and ``bad_samples`` are empty."""
    unknown = sorted(set(metrics_by_setting) - set(SETTING_KEYS))
    if unknown:
        raise ValueError(f"unknown settings {unknown}; expected some of {sorted(SETTING_KEYS)}")
    results = {
        key: _reference_setting(
            metrics_by_setting[setting], "bad_samples" if key == "self" else "examples"
        )
        for setting, key in SETTING_KEYS.items()
        if setting in metrics_by_setting
    }
    return {
        "model": model,
        "data": data,
        "seed": int(seed),
        "sampled_chains_gold_qonly": int(sampled_chains_gold_qonly),
        "sampled_chains_self": int(sampled_chains_self),
        "args": dict(args),
        "results": results,
        "examples": [],
        "runtime_seconds": float(runtime_seconds),
    }
