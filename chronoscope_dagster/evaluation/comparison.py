"""Paired comparison of two models on the same chains and setting.

Input is the scored turns of model A and of model B (``score_turns``' output, the rows
``compute_metrics`` reads); the headline metrics are the metrics module's own definitions
(``COMPARED``), computed by its code, so A's and B's values are the leaderboard's.

Pairs (``comparison_pairs``): every model against the baseline, and a model whose prompting is
a mitigation (``evaluation.strategies``) against its plain twin too, the registry entry with the
same backend, model and options that prompts plainly.

Alignment: whole chains. A chain is compared when both models scored it on the same set of
turns; a chain that only one model scored, or that the two scored on different turns (another
``first_scored_turn``, a missing prediction), is left out and counted (``chains_left_out_a``,
``chains_left_out_b``), since Chain@1 and Final@1 need the whole chain. No common chain is an
error, and so is a compared turn on which the two inputs disagree on what the turn is (family,
length, position, drift eligibility, present-day value, scope dependence): they were not scored against the same
turns.

Interval: paired bootstrap over chains. Every resample draws the compared chains with
replacement once and applies the same draw to both models (one multinomial weight matrix times
the side-by-side per-chain sums), so the interval reflects the variance of the per-chain
difference, not of two independent samples. The resamples are those ``compute_metrics`` draws
for the overall stratum of the same chains and seed. A resample in which a ratio's denominator
is zero (Drift@1 with no drift-eligible turn drawn) is left out of that metric, as in the
metrics; the two models share every denominator, so such a resample is void for both.
Percentile method, widened to include the point difference as the metrics do.

p-value: two-sided, by inverting the percentile interval (Efron and Tibshirani 1993, 15.4):
``p = min(1, 2 min(1 + #{d* <= 0}, 1 + #{d* >= 0}) / (1 + R))`` over the R valid resampled
differences d*. It is below 1 - confidence where the interval excludes 0, up to the
resamples' resolution; the +1 (Davison and Hinkley 1997, 4.2) keeps it at least 2 / (1 + R),
since R resamples cannot show a smaller one. Identical predictions give d* = 0 in every
resample: difference 0, interval [0, 0], p = 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.matching import MODE_METADATA_KEY
from chronoscope_dagster.evaluation.metrics import (
    OVERALL,
    SCOPE_METRIC,
    _divide,
    _load,
    _ratios,
    _resampled_sums,
    _rng,
    _stratum,
    check_parameters,
)

COMPARED = (
    SCOPE_METRIC,
    "acc_at1",
    "final_turn_acc_at1",
    "strict_chain_acc_at1",
    "drift_rate_given_present_at1",
)
"""The headline (Acc@1 over scope-dependent turns), then the paper's Acc@1, Final@1, Chain@1
and Drift@1."""

COMPARISON_SCHEMA = pa.schema(
    [
        pa.field("metric", pa.string(), nullable=False),
        pa.field("value_a", pa.float64(), nullable=False),
        pa.field("value_b", pa.float64(), nullable=False),
        pa.field("difference", pa.float64(), nullable=False),
        pa.field("ci_low", pa.float64()),
        pa.field("ci_high", pa.float64()),
        pa.field("p_value", pa.float64()),
        pa.field("denominator", pa.int64(), nullable=False),
        pa.field("n_chains", pa.int64(), nullable=False),
        pa.field("n_turns", pa.int64(), nullable=False),
        pa.field("chains_left_out_a", pa.int64(), nullable=False),
        pa.field("chains_left_out_b", pa.int64(), nullable=False),
    ]
)

COMPARISONS_SCHEMA = pa.schema(
    [pa.field(name, pa.string(), nullable=False) for name in ("setting", "model", "baseline")]
    + list(COMPARISON_SCHEMA)
)
"""Many comparisons: ``model`` is A and ``baseline`` B, in ``setting``."""

_TURN_COLUMNS = (
    "family",
    "chain_length",
    "followup_pos",
    "is_final",
    "drift_eligible",
    "present_available",
    "scope_dependent",
)


def compare_models(
    scored_a: pa.Table,
    scored_b: pa.Table,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    mode: str | None = None,
) -> pa.Table:
    """A vs B (``COMPARISON_SCHEMA``): one row per metric of ``COMPARED`` whose denominator is
    not zero on the compared chains, with A's and B's values, A - B, its paired bootstrap
    interval and p-value (null with ``bootstrap=0``).

    ``mode`` is the match mode both were scored in; by default the one ``score_turns``
    recorded, which must be the same for both. Raises ``ValueError`` on input that breaks the
    scored-turn contract, on no common chain and on disagreeing turns."""
    if mode is None:
        modes = {_mode_of(scored_a), _mode_of(scored_b)}
        if len(modes) > 1:
            raise ValueError(f"A and B were scored in different match modes: {sorted(modes)}")
        (mode,) = modes
    check_parameters(mode, bootstrap=bootstrap, seed=seed, confidence=confidence)
    reference = mode == "reference"
    for table in (scored_a, scored_b):
        _load(table, reference=reference)
    kept_a, kept_b, left_out_a, left_out_b = _align(scored_a, scored_b)
    _check_same_turns(kept_a, kept_b)

    def overall(table: pa.Table) -> Any:
        turns = _load(table, reference=reference)
        return _stratum(OVERALL, turns, np.ones(len(turns.chain), dtype=bool), chain_level=True)

    stratum_a, stratum_b = overall(kept_a), overall(kept_b)
    point_a = _ratios(stratum_a, stratum_a.sums.sum(axis=0, keepdims=True))
    point_b = _ratios(stratum_b, stratum_b.sums.sum(axis=0, keepdims=True))
    replicates_a = replicates_b = None
    if bootstrap:
        width = stratum_a.sums.shape[1]
        resampled = _resampled_sums(
            np.hstack([stratum_a.sums, stratum_b.sums]), bootstrap, _rng(seed, OVERALL)
        )
        replicates_a = _ratios(stratum_a, resampled[:, :width])
        replicates_b = _ratios(stratum_b, resampled[:, width:])

    alpha = 1.0 - confidence
    rows: list[dict[str, Any]] = []
    for metric in COMPARED:
        numerator_a, denominator = point_a[metric]
        numerator_b, _ = point_b[metric]
        if denominator[0] <= 0:
            continue
        value_a = float(numerator_a[0] / denominator[0])
        value_b = float(numerator_b[0] / denominator[0])
        difference = value_a - value_b
        low = high = p_value = None
        if replicates_a is not None and replicates_b is not None:
            resampled_difference = _divide(*replicates_a[metric]) - _divide(*replicates_b[metric])
            low, high, p_value = _interval_and_p(resampled_difference, difference, alpha)
        rows.append(
            {
                "metric": metric,
                "value_a": value_a,
                "value_b": value_b,
                "difference": difference,
                "ci_low": low,
                "ci_high": high,
                "p_value": p_value,
                "denominator": int(denominator[0]),
                "n_chains": stratum_a.n_chains,
                "n_turns": kept_a.num_rows,
                "chains_left_out_a": left_out_a,
                "chains_left_out_b": left_out_b,
            }
        )
    return pa.Table.from_pylist(rows, schema=COMPARISON_SCHEMA)


def comparison_order(
    models: Iterable[str], registry: Sequence[str], baseline: str | None = None
) -> list[str]:
    """``models`` (those with results) with the baseline first: ``baseline`` if named, else the
    first registry entry among them; then the others in registry order, and models the
    registry no longer lists last, by name."""
    present = set(models)
    listed = [name for name in dict.fromkeys(registry) if name in present]
    order = listed + sorted(present - set(listed))
    if baseline is not None:
        if baseline not in present:
            raise ValueError(
                f"baseline {baseline!r} has no results (models with results: "
                f"{', '.join(order) or 'none'})"
            )
        order = [baseline, *(name for name in order if name != baseline)]
    return order


def comparison_pairs(order: Sequence[str], twins: Mapping[str, str]) -> list[tuple[str, str]]:
    """(model, baseline) pairs to compare: every model of ``order`` after the first against
    the first (``comparison_order``'s baseline), then every model of ``order`` whose plain
    twin (``twins``: a mitigated entry's name to its plain twin's) is in ``order`` against
    that twin, unless the twin is the baseline (that pair is already there). A model is never
    compared with itself, and no pair appears twice."""
    if not order:
        return []
    baseline, *others = order
    pairs = [(model, baseline) for model in others]
    present = set(order)
    for model in order:
        twin = twins.get(model)
        if twin is None or twin not in present or twin == model:
            continue
        if (model, twin) not in pairs:
            pairs.append((model, twin))
    return pairs


def _mode_of(scored: pa.Table) -> str:
    return (scored.schema.metadata or {}).get(MODE_METADATA_KEY, b"relaxed").decode()


def _interval_and_p(
    resampled: np.ndarray, difference: float, alpha: float
) -> tuple[float | None, float | None, float | None]:
    resampled = resampled[np.isfinite(resampled)]
    if not resampled.size:
        return None, None, None
    q_low, q_high = np.quantile(resampled, [alpha / 2.0, 1.0 - alpha / 2.0])
    at_most = 1 + int(np.count_nonzero(resampled <= 0.0))
    at_least = 1 + int(np.count_nonzero(resampled >= 0.0))
    p_value = min(1.0, 2.0 * min(at_most, at_least) / (1 + resampled.size))
    return min(float(q_low), difference), max(float(q_high), difference), p_value


def _keys(table: pa.Table, side: str) -> pa.Table:
    chain_id = table.column("chain_id").combine_chunks()
    if pa.types.is_dictionary(chain_id.type):
        chain_id = chain_id.cast(chain_id.type.value_type)
    return pa.table(
        {
            "chain_id": chain_id.cast(pa.string()),
            "turn_index": table.column("turn_index").cast(pa.int64()),
            side: pa.array(np.ones(table.num_rows, dtype=bool)),
        }
    )


def _align(a: pa.Table, b: pa.Table) -> tuple[pa.Table, pa.Table, int, int]:
    """Both inputs restricted to the chains both scored on the same turns, and the number of
    chains of A and of B left out."""
    keys_a, keys_b = _keys(a, "in_a"), _keys(b, "in_b")
    joined = keys_a.join(keys_b, keys=["chain_id", "turn_index"], join_type="full outer")
    unmatched = pc.or_(pc.is_null(joined["in_a"]), pc.is_null(joined["in_b"]))
    broken = pc.unique(joined.filter(unmatched)["chain_id"])
    kept = pc.unique(joined.filter(pc.invert(pc.is_in(joined["chain_id"], broken)))["chain_id"])
    if not len(kept):
        raise ValueError(
            f"A and B have no chain scored on the same turns (A: "
            f"{len(pc.unique(keys_a['chain_id']))} chains, B: "
            f"{len(pc.unique(keys_b['chain_id']))} chains)"
        )

    def restrict(table: pa.Table, keys: pa.Table) -> tuple[pa.Table, int]:
        mask = pc.is_in(keys["chain_id"], kept)
        return table.filter(mask), len(pc.unique(keys["chain_id"])) - len(kept)

    kept_a, left_out_a = restrict(a, keys_a)
    kept_b, left_out_b = restrict(b, keys_b)
    return kept_a, kept_b, left_out_a, left_out_b


def _check_same_turns(a: pa.Table, b: pa.Table) -> None:
    order = [("chain_id", "ascending"), ("turn_index", "ascending")]
    a = a.take(pc.sort_indices(a, sort_keys=order))
    b = b.take(pc.sort_indices(b, sort_keys=order))
    for name in _TURN_COLUMNS:
        left, right = _plain(a.column(name)), _plain(b.column(name))
        differs = pc.not_equal(left, right).to_numpy(zero_copy_only=False)
        if differs.any():
            first = int(np.flatnonzero(differs)[0])
            raise ValueError(
                f"A and B disagree on {name} on {int(differs.sum())} turns (first: chain "
                f"{a['chain_id'][first]} turn {a['turn_index'][first]}): they were not scored "
                "against the same turns"
            )


def _plain(column: pa.ChunkedArray) -> pa.Array:
    array = column.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if pa.types.is_large_string(array.type):
        array = array.cast(pa.string())
    if pa.types.is_integer(array.type):
        array = array.cast(pa.int64())
    return array
