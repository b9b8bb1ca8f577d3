"""Scored turns aggregated into the benchmark's metrics, with chain-bootstrap confidence intervals.

One input row is one scored (chain, turn). The metric names are the reference evaluator's
(spec 4.9), their meaning this project's, plus the headline ``scope_acc_at1``:

- ``scope_acc_at1`` is Acc@1 over the scope-dependent scored turns (``scope_dependent``: an
  implicit turn whose gold at its scope is not today's value, or, with no value today, shares
  nothing with the latest year's gold; DESIGN decision 11). Only a system that carries the scope answers
  them: one answering today's value, or "I don't know" where there is none, scores 0. The
  paper's ``acc_at1`` also counts the turns that state their own scope and is kept for
  comparison with the paper;
- an errored turn (``error``) counts as wrong: its correct and drift flags and its predicted-token
  counts (``*_tp``, ``*_pred``) are cleared; its gold-token counts stay;
- ``drift_rate_given_present_*`` divides by drift-eligible turns (a present-day value exists and
  is not in the gold set, DESIGN decision 3); ``drift_rate_given_error_at1`` by wrong@1 turns;
- micro F1: P = tp/max(1, pred), R = tp/max(1, gold), F1 = 2PR/(P+R). Because tp <= min(pred,
  gold) this equals 2 tp/(pred + gold), which is how it is computed; its denominator is
  pred + gold, so it is a weighted mean of its strata like every other ratio here;
- chain metrics (strict chain, average per-chain turn accuracy, final turn) exist in the
  ``overall``, ``family=`` and ``length=`` strata, whose chains are whole; a ``followup_pos=``
  stratum holds one turn of each chain, so they are left out there (the reference writes 0);
- a final-turn ratio divides by the chains whose final turn is scored;
- turns scored in ``reference`` mode get the reference's own definitions (spec 4.7-4.9): drift
  may happen on any turn with a present-day value (one in the gold set included) and
  ``drift_rate_given_present_*`` divides by those turns; a micro F1's value is computed as
  2PR/(P+R) from P and R, in that order of float operations, so it prints as the reference's
  to its 6 decimals (the denominator column and the intervals stay pred + gold's).

Against the model's own present (``own_present``): where the scored turns hold the columns of a
model with a knowledge cutoff, the metrics that depend on the present are also computed against
the model's present, under the dump's metric name prefixed ``own_`` (``OWN_METRICS``:
``own_scope_acc_at1`` over ``own_scope_dependent`` turns, ``own_present_available_rate``,
``own_drift_rate_given_present_at1``/``_atk`` over ``own_drift_eligible`` turns,
``own_drift_rate_given_error_at1``), with the count ``n_turns_without_own_present`` (turns with
no value at the model's present: never own-drift-eligible), and one more stratum,
``changed_since_cutoff``: the turns whose values today differ from those at the cutoff (turn
metrics only, as a follow-up position). The dump's metrics keep their names and values.

A ratio whose denominator is zero is not a measurement: its row is left out, never written as 0
or null, so ``value`` is never null. ``n_chains`` and ``n_turns`` are also metric rows (counts,
no CI, null ``denominator``); the ``n_turns``/``n_chains`` columns of every row give the size of
its stratum.

Confidence intervals: chains of the stratum resampled with replacement, percentile method. Every
resample is a row of multinomial weights (draw n chain indices, ``bincount`` them) multiplied
with the (chains x quantities) matrix of per-chain integer sums, in chunks of resamples of about
``_CHUNK_CELLS`` weights so memory stays bounded. The sums are integers held exactly in float64,
so the products do not depend on BLAS summation order and the output is byte-identical run to
run. The generator is PCG64 seeded from (seed, stratum): adding a stratum does not move the
others' intervals, and all metrics of a stratum share its resamples. A resample in which a ratio's
denominator is zero is left out of that ratio's percentiles. A percentile interval can miss the
point estimate of a skewed statistic on very few chains; the interval is then widened to include
it, so ``ci_low <= value <= ci_high`` always holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.matching import MODE_METADATA_KEY, MODES

OVERALL = "overall"
DIMENSIONS = ("family", "length", "followup_pos")
COUNT_METRICS = ("n_chains", "n_turns")
SCOPE_METRIC = "scope_acc_at1"
"""The headline: Acc@1 over the scope-dependent scored turns."""
REFERENCE_METRICS = (
    "n_chains",
    "n_turns",
    "acc_at1",
    "acc_atk",
    "token_f1_micro_top1",
    "char3_f1_micro_top1",
    "strict_chain_acc_at1",
    "avg_chain_turn_acc_at1",
    "final_turn_acc_at1",
    "final_turn_acc_atk",
    "present_available_rate",
    "drift_rate_given_present_at1",
    "drift_rate_given_present_atk",
    "drift_rate_given_error_at1",
)
"""The reference evaluator's metrics (spec 4.9), in its order."""
OWN_PREFIX = "own_"
OWN_COUNT_METRIC = "n_turns_without_own_present"
OWN_METRICS = (
    OWN_COUNT_METRIC,
    *(
        OWN_PREFIX + metric
        for metric in (
            SCOPE_METRIC,
            "present_available_rate",
            "drift_rate_given_present_at1",
            "drift_rate_given_present_atk",
            "drift_rate_given_error_at1",
        )
    ),
)
"""The metrics against the model's own present (models with a knowledge cutoff only)."""
METRICS = (*COUNT_METRICS, SCOPE_METRIC, *REFERENCE_METRICS[len(COUNT_METRICS) :], *OWN_METRICS)
"""Every metric this module writes, in the order of its rows: the headline first, the
metrics against the model's own present last."""
COUNTS = frozenset({*COUNT_METRICS, OWN_COUNT_METRIC})
"""The metrics that are counts (no interval, no denominator)."""
CHANGED_SINCE_CUTOFF = "changed_since_cutoff"
SUBSETS = (CHANGED_SINCE_CUTOFF,)
"""Strata that are a subset of the turns, not a level of a dimension."""
CHAIN_METRICS = frozenset(
    {"strict_chain_acc_at1", "avg_chain_turn_acc_at1", "final_turn_acc_at1", "final_turn_acc_atk"}
)

METRICS_SCHEMA = pa.schema(
    [
        pa.field("stratum", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("ci_low", pa.float64()),
        pa.field("ci_high", pa.float64()),
        pa.field("n_turns", pa.int64(), nullable=False),
        pa.field("n_chains", pa.int64(), nullable=False),
        pa.field("denominator", pa.int64()),
    ]
)

_STRING_COLUMNS = ("chain_id", "family")
_INT_COLUMNS = (
    "chain_length",
    "turn_index",
    "followup_pos",
    "tok_tp",
    "tok_pred",
    "tok_gold",
    "ch_tp",
    "ch_pred",
    "ch_gold",
)
_BOOL_COLUMNS = (
    "is_final",
    "correct_at1",
    "correct_atk",
    "drift_at1",
    "drift_atk",
    "drift_eligible",
    "present_available",
    "scope_dependent",
    "error",
)
SCORED_COLUMNS = _STRING_COLUMNS + _INT_COLUMNS + _BOOL_COLUMNS
OWN_SCORED_COLUMNS = (
    "own_drift_at1",
    "own_drift_atk",
    "own_drift_eligible",
    "own_present_available",
    "own_scope_dependent",
    "changed_since_cutoff",
)
"""The boolean columns of scored turns judged against a model's own present too."""

_SUMMED = (
    "nt",
    "ok1",
    "okk",
    "present",
    "eligible",
    "drift1",
    "driftk",
    "tok_tp",
    "tok_pred",
    "tok_gold",
    "ch_tp",
    "ch_pred",
    "ch_gold",
    "final",
    "final_ok1",
    "final_okk",
    "scope",
    "scope_ok1",
)
_OWN_SUMMED = (
    "own_present",
    "own_eligible",
    "own_drift1",
    "own_driftk",
    "own_scope",
    "own_scope_ok1",
    "no_own_present",
)
_CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class _Turns:
    chain: np.ndarray
    family: np.ndarray
    families: tuple[str, ...]
    length: np.ndarray
    followup_pos: np.ndarray
    summed: np.ndarray
    reference: bool
    names: tuple[str, ...] = _SUMMED
    """The columns of ``summed``."""
    changed: np.ndarray | None = None
    """Per turn, whether its values changed since the model's cutoff; None without one."""


@dataclass(frozen=True)
class _Stratum:
    label: str
    sums: np.ndarray
    columns: Mapping[str, int]
    turn_groups: tuple[int, ...]
    chain_level: bool
    reference: bool

    @property
    def own(self) -> bool:
        """Whether its turns are judged against a model's own present too."""
        return "own_present" in self.columns

    @property
    def n_chains(self) -> int:
        return int(self.sums.shape[0])


def compute_metrics(
    scored: pa.Table,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    mode: str | None = None,
) -> pa.Table:
    """The long metrics table (``METRICS_SCHEMA``) of one (model, setting)'s scored turns.

    ``mode`` is the match mode that scored them; by default the one ``score_turns`` recorded in
    the table's schema metadata, else ``relaxed``. ``bootstrap=0`` gives no intervals (null
    ``ci_low``/``ci_high``). Raises ``ValueError`` on input that breaks the scored-turn contract
    (see ``_load``)."""
    if mode is None:
        mode = (scored.schema.metadata or {}).get(MODE_METADATA_KEY, b"relaxed").decode()
    check_parameters(mode, bootstrap=bootstrap, seed=seed, confidence=confidence)
    turns = _load(scored, reference=mode == "reference")
    columns: dict[str, list[Any]] = {field.name: [] for field in METRICS_SCHEMA}
    alpha = 1.0 - confidence
    for stratum in _strata(turns):
        _emit(stratum, columns, bootstrap=bootstrap, seed=seed, alpha=alpha)
    return pa.Table.from_pydict(columns, schema=METRICS_SCHEMA)


def check_parameters(mode: str, *, bootstrap: int, seed: int, confidence: float) -> None:
    """Raise ``ValueError`` on a match mode, resample count, seed or confidence out of range."""
    if mode not in MODES:
        raise ValueError(f"match mode {mode!r} is not one of {', '.join(MODES)}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be >= 0, got {bootstrap}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")


def _column(table: pa.Table, name: str) -> pa.Array:
    array = table.column(name).combine_chunks()
    if array.null_count:
        raise ValueError(f"scored turns: column {name!r} has {array.null_count} null values")
    return array


def _fail_where(bad: np.ndarray, chain_ids: pa.Array, message: str) -> None:
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"scored turns: {int(bad.sum())} rows {message} (first: chain {chain_ids[first]})"
        )


def _sorted_codes(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Codes of ``array`` in the sorted order of its distinct values, so results do not depend
    on the input row order."""
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    encoded = pc.dictionary_encode(array)
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
    return codes, encoded.dictionary.take(pa.array(order))


def _load(table: pa.Table, *, reference: bool = False) -> _Turns:
    """Validate the scored-turn contract and collect the per-row quantities.

    Rejected: missing columns or nulls; a duplicate (chain, turn); family or length varying
    within a chain; turn_index outside [0, chain_length); is_final != (turn_index ==
    chain_length - 1); followup_pos < 1; negative counts or tp above pred or gold; drift on a
    turn that is not drift-eligible (in reference mode: without a present-day value) or that is
    correct; a drift-eligible turn without a present-day value; correct@1 without correct@k;
    the same of the drift against the model's own present where the table has its columns
    (all of ``OWN_SCORED_COLUMNS``, or none)."""
    own_found = [name for name in OWN_SCORED_COLUMNS if name in table.column_names]
    own = bool(own_found)
    if own and len(own_found) < len(OWN_SCORED_COLUMNS):
        missing = [name for name in OWN_SCORED_COLUMNS if name not in own_found]
        raise ValueError(f"scored turns: missing columns {missing}")
    missing = [name for name in SCORED_COLUMNS if name not in table.column_names]
    if missing:
        raise ValueError(f"scored turns: missing columns {missing}")
    for name in _STRING_COLUMNS:
        array = _column(table, name)
        value_type = array.type.value_type if pa.types.is_dictionary(array.type) else array.type
        if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
            raise ValueError(f"scored turns: column {name!r} must be a string, got {array.type}")
    ints: dict[str, np.ndarray] = {}
    for name in _INT_COLUMNS:
        array = _column(table, name)
        if not pa.types.is_integer(array.type):
            raise ValueError(f"scored turns: column {name!r} must be an integer, got {array.type}")
        ints[name] = array.to_numpy(zero_copy_only=False).astype(np.int64)
    flags: dict[str, np.ndarray] = {}
    for name in _BOOL_COLUMNS + (OWN_SCORED_COLUMNS if own else ()):
        array = _column(table, name)
        if not pa.types.is_boolean(array.type):
            raise ValueError(f"scored turns: column {name!r} must be boolean, got {array.type}")
        flags[name] = array.to_numpy(zero_copy_only=False).astype(bool)

    chain_ids = _column(table, "chain_id")
    chain, _ = _sorted_codes(chain_ids)
    family, family_names = _sorted_codes(_column(table, "family"))
    length, turn, pos = ints["chain_length"], ints["turn_index"], ints["followup_pos"]
    n_chains = int(chain.max()) + 1 if len(chain) else 0

    _fail_where((turn < 0) | (turn >= length), chain_ids, "have turn_index outside the chain")
    _fail_where(pos < 1, chain_ids, "have followup_pos < 1")
    _fail_where(flags["is_final"] != (turn == length - 1), chain_ids, "have a wrong is_final")
    if len(chain):
        key = chain * (int(turn.max()) + 1) + turn
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        duplicated = np.zeros(len(chain), dtype=bool)
        duplicated[first[counts > 1]] = True
        _fail_where(duplicated, chain_ids, "repeat a (chain_id, turn_index)")
        for name, values in (("family", family), ("chain_length", length)):
            per_chain = np.empty(n_chains, dtype=np.int64)
            per_chain[chain] = values
            _fail_where(per_chain[chain] != values, chain_ids, f"disagree on the chain's {name}")
    for prefix in ("tok", "ch"):
        tp, pred, gold = (ints[f"{prefix}_{part}"] for part in ("tp", "pred", "gold"))
        _fail_where((tp < 0) | (pred < 0) | (gold < 0), chain_ids, f"have negative {prefix}_*")
        _fail_where((tp > pred) | (tp > gold), chain_ids, f"have {prefix}_tp above pred or gold")

    ok = ~flags["error"]
    ok1 = flags["correct_at1"] & ok
    okk = flags["correct_atk"] & ok
    drift1 = flags["drift_at1"] & ok
    driftk = flags["drift_atk"] & ok
    eligible, present = flags["drift_eligible"], flags["present_available"]
    if reference:
        _fail_where((drift1 | driftk) & ~present, chain_ids, "drift without a present value")
    else:
        _fail_where((drift1 | driftk) & ~eligible, chain_ids, "drift without being drift-eligible")
    _fail_where((drift1 & ok1) | (driftk & okk), chain_ids, "are both correct and drifted")
    _fail_where(eligible & ~present, chain_ids, "are drift-eligible without a present value")
    _fail_where(ok1 & ~okk, chain_ids, "are correct@1 but not correct@k")

    final = flags["is_final"]
    quantities = {
        "nt": np.ones(len(chain), dtype=bool),
        "ok1": ok1,
        "okk": okk,
        "present": present,
        "eligible": eligible,
        "drift1": drift1,
        "driftk": driftk,
        "tok_tp": np.where(ok, ints["tok_tp"], 0),
        "tok_pred": np.where(ok, ints["tok_pred"], 0),
        "tok_gold": ints["tok_gold"],
        "ch_tp": np.where(ok, ints["ch_tp"], 0),
        "ch_pred": np.where(ok, ints["ch_pred"], 0),
        "ch_gold": ints["ch_gold"],
        "final": final,
        "final_ok1": final & ok1,
        "final_okk": final & okk,
        "scope": flags["scope_dependent"],
        "scope_ok1": flags["scope_dependent"] & ok1,
    }
    names = _SUMMED
    if own:
        quantities.update(_own_quantities(flags, ok, ok1, okk, chain_ids, reference=reference))
        names = _SUMMED + _OWN_SUMMED
    summed = np.column_stack([quantities[name].astype(np.float64) for name in names])
    return _Turns(
        chain=chain,
        family=family,
        families=tuple(family_names.to_pylist()),
        length=length,
        followup_pos=pos,
        summed=summed,
        reference=reference,
        names=names,
        changed=flags["changed_since_cutoff"] if own else None,
    )


def _own_quantities(
    flags: Mapping[str, np.ndarray],
    ok: np.ndarray,
    ok1: np.ndarray,
    okk: np.ndarray,
    chain_ids: pa.Array,
    *,
    reference: bool,
) -> dict[str, np.ndarray]:
    """The per-turn quantities against the model's own present, validated as the dump's."""
    drift1, driftk = flags["own_drift_at1"] & ok, flags["own_drift_atk"] & ok
    eligible, present = flags["own_drift_eligible"], flags["own_present_available"]
    if reference:
        _fail_where((drift1 | driftk) & ~present, chain_ids, "drift without an own present value")
    else:
        _fail_where(
            (drift1 | driftk) & ~eligible, chain_ids, "drift without being own-drift-eligible"
        )
    _fail_where(
        (drift1 & ok1) | (driftk & okk), chain_ids, "are both correct and drifted (own present)"
    )
    _fail_where(eligible & ~present, chain_ids, "are own-drift-eligible without an own value")
    return {
        "own_present": present,
        "own_eligible": eligible,
        "own_drift1": drift1,
        "own_driftk": driftk,
        "own_scope": flags["own_scope_dependent"],
        "own_scope_ok1": flags["own_scope_dependent"] & ok1,
        "no_own_present": ~present,
    }


def _strata(turns: _Turns) -> Iterable[_Stratum]:
    if not len(turns.chain):
        return
    yield _stratum(OVERALL, turns, np.ones(len(turns.chain), dtype=bool), chain_level=True)
    for code, name in enumerate(turns.families):
        yield _stratum(f"family={name}", turns, turns.family == code, chain_level=True)
    for length in np.unique(turns.length):
        yield _stratum(f"length={length}", turns, turns.length == length, chain_level=True)
    for pos in np.unique(turns.followup_pos):
        yield _stratum(f"followup_pos={pos}", turns, turns.followup_pos == pos, chain_level=False)
    if turns.changed is not None and turns.changed.any():
        yield _stratum(CHANGED_SINCE_CUTOFF, turns, turns.changed, chain_level=False)


def _stratum(label: str, turns: _Turns, mask: np.ndarray, *, chain_level: bool) -> _Stratum:
    """Per-chain sums of the stratum's rows, plus the chain-level columns: whether every scored
    turn is correct@1, and correct@1 counts split by the chain's number of scored turns so the
    average per-chain accuracy stays a sum of exact integers."""
    rows = np.flatnonzero(mask)
    chains, inverse = np.unique(turns.chain[rows], return_inverse=True)
    values = turns.summed[rows]
    sums = np.column_stack(
        [
            np.bincount(inverse, weights=values[:, j], minlength=len(chains))
            for j in range(values.shape[1])
        ]
    )
    columns = {name: j for j, name in enumerate(turns.names)}
    extra: list[np.ndarray] = []
    groups: tuple[int, ...] = ()
    if chain_level:
        nt, ok1 = sums[:, columns["nt"]], sums[:, columns["ok1"]]
        columns["strict"] = len(columns)
        extra.append((ok1 == nt).astype(np.float64))
        groups = tuple(int(m) for m in np.unique(nt))
        for m in groups:
            columns[f"ok1_nt={m}"] = len(columns)
            extra.append(np.where(nt == m, ok1, 0.0))
    if extra:
        sums = np.column_stack([sums, *extra])
    return _Stratum(
        label=label,
        sums=sums,
        columns=columns,
        turn_groups=groups,
        chain_level=chain_level,
        reference=turns.reference,
    )


_Ratio = tuple[np.ndarray, np.ndarray]


def _ratios(stratum: _Stratum, s: np.ndarray) -> dict[str, _Ratio]:
    """(numerator, denominator) of every ratio metric for each row of ``s``, a (resamples x
    columns) matrix of column sums over the stratum's chains."""

    def col(name: str) -> np.ndarray:
        return s[:, stratum.columns[name]]

    nt = col("nt")
    out: dict[str, _Ratio] = {
        SCOPE_METRIC: (col("scope_ok1"), col("scope")),
        "acc_at1": (col("ok1"), nt),
        "acc_atk": (col("okk"), nt),
        "token_f1_micro_top1": (2.0 * col("tok_tp"), col("tok_pred") + col("tok_gold")),
        "char3_f1_micro_top1": (2.0 * col("ch_tp"), col("ch_pred") + col("ch_gold")),
    }
    if stratum.chain_level:
        chains = np.full(s.shape[0], float(stratum.n_chains))
        per_chain = np.zeros(s.shape[0])
        for m in stratum.turn_groups:
            per_chain = per_chain + col(f"ok1_nt={m}") / m
        out["strict_chain_acc_at1"] = (col("strict"), chains)
        out["avg_chain_turn_acc_at1"] = (per_chain, chains)
        out["final_turn_acc_at1"] = (col("final_ok1"), col("final"))
        out["final_turn_acc_atk"] = (col("final_okk"), col("final"))
    out["present_available_rate"] = (col("present"), nt)
    drift_turns = col("present") if stratum.reference else col("eligible")
    out["drift_rate_given_present_at1"] = (col("drift1"), drift_turns)
    out["drift_rate_given_present_atk"] = (col("driftk"), drift_turns)
    out["drift_rate_given_error_at1"] = (col("drift1"), nt - col("ok1"))
    if stratum.own:
        own_drift_turns = col("own_present") if stratum.reference else col("own_eligible")
        out["own_scope_acc_at1"] = (col("own_scope_ok1"), col("own_scope"))
        out["own_present_available_rate"] = (col("own_present"), nt)
        out["own_drift_rate_given_present_at1"] = (col("own_drift1"), own_drift_turns)
        out["own_drift_rate_given_present_atk"] = (col("own_driftk"), own_drift_turns)
        out["own_drift_rate_given_error_at1"] = (col("own_drift1"), nt - col("ok1"))
    return out


_F1_COUNTS = {"token_f1_micro_top1": "tok", "char3_f1_micro_top1": "ch"}


def _reference_f1(tp: float, pred: float, gold: float) -> float:
    """The reference's micro F1 (spec 4.7), float operations in its order."""
    precision = tp / max(1, pred)
    recall = tp / max(1, gold)
    return (2 * precision * recall / (precision + recall)) if (precision + recall) else 0.0


def _rng(seed: int, stratum: str) -> np.random.Generator:
    digest = hashlib.sha256(stratum.encode("utf-8")).digest()
    entropy = [seed, int.from_bytes(digest[:16], "little")]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def _resampled_sums(sums: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = sums.shape[0]
    chunk = max(1, min(resamples, _CHUNK_CELLS // n))
    out = np.empty((resamples, sums.shape[1]))
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        draws = rng.integers(0, n, size=(rows, n))
        draws += (np.arange(rows, dtype=np.int64) * n)[:, None]
        weights = np.bincount(draws.ravel(), minlength=rows * n).reshape(rows, n)
        out[start : start + rows] = weights.astype(np.float64) @ sums
    return out


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def _emit(
    stratum: _Stratum, columns: dict[str, list[Any]], *, bootstrap: int, seed: int, alpha: float
) -> None:
    totals = stratum.sums.sum(axis=0, keepdims=True)
    n_turns = int(totals[0, stratum.columns["nt"]])
    point = _ratios(stratum, totals)
    replicates: dict[str, _Ratio] = {}
    if bootstrap:
        resampled = _resampled_sums(stratum.sums, bootstrap, _rng(seed, stratum.label))
        replicates = _ratios(stratum, resampled)

    def add(
        metric: str, value: float, low: float | None, high: float | None, den: int | None
    ) -> None:
        columns["stratum"].append(stratum.label)
        columns["metric"].append(metric)
        columns["value"].append(value)
        columns["ci_low"].append(low)
        columns["ci_high"].append(high)
        columns["n_turns"].append(n_turns)
        columns["n_chains"].append(stratum.n_chains)
        columns["denominator"].append(den)

    for metric in METRICS:
        if metric == "n_chains":
            add(metric, float(stratum.n_chains), None, None, None)
            continue
        if metric == "n_turns":
            add(metric, float(n_turns), None, None, None)
            continue
        if metric == OWN_COUNT_METRIC:
            if stratum.own:
                add(metric, float(totals[0, stratum.columns["no_own_present"]]), None, None, None)
            continue
        if metric not in point:
            continue
        numerator, denominator = point[metric]
        if denominator[0] <= 0:
            continue
        value = float(numerator[0] / denominator[0])
        if stratum.reference and metric in _F1_COUNTS:
            value = _reference_f1(
                *(
                    float(totals[0, stratum.columns[f"{_F1_COUNTS[metric]}_{part}"]])
                    for part in ("tp", "pred", "gold")
                )
            )
        low = high = None
        if metric in replicates:
            values = _divide(*replicates[metric])
            values = values[np.isfinite(values)]
            if values.size:
                q_low, q_high = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
                low, high = min(float(q_low), value), max(float(q_high), value)
        add(metric, value, low, high, int(denominator[0]))


def split_stratum(stratum: str) -> tuple[str, str | None]:
    """(dimension, level) of a stratum; (itself, None) for ``overall`` and the ``SUBSETS``."""
    if stratum == OVERALL or stratum in SUBSETS:
        return stratum, None
    dimension, sep, level = stratum.partition("=")
    if not sep or dimension not in DIMENSIONS or not level:
        raise ValueError(f"malformed stratum {stratum!r}")
    if dimension != "family" and not level.isdigit():
        raise ValueError(f"malformed stratum {stratum!r}")
    return dimension, level
