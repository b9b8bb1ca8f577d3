"""Knows it alone, loses it in conversation: scope loss against the explicit-scope control.

Input is one model's scored turns (``score_turns``' output, with ``is_explicit``) in one of
the paper's settings and under ``explicit_scope``, where every scored turn was asked alone
with its scope stated. Turns are paired by (chain, turn); a turn scored in the setting but
not under explicit scope is left out and counted (``turns_left_out``). Per turn, *known* is
"right at 1 under explicit scope". The metrics (``KNOWLEDGE_METRICS``):

* ``known_rate_at1``: known turns over the paired scored turns;
* ``scope_loss_rate_at1``: among implicit known turns, those answered wrong in the setting;
* ``scope_loss_rate_eligible_at1``: the same among those that are drift-eligible;
* ``drift_given_known_at1``: among implicit known drift-eligible turns, those answered with
  the present-day value in the setting (drift as the metrics define it).

Against the model's own present (a model with a knowledge cutoff, whose scored turns hold the
``own_present`` columns), the same four under the names prefixed ``own_`` (``OWN_KNOWLEDGE``):
*known* leaves out the turns changed since the cutoff whose scope begins after it (what the
model could not know, even right alone), and eligibility and drift are the model's present's.

Strata: overall and per family; a 95% percentile bootstrap interval resampling chains (the
metrics module's resampler, widened to include the point value as there); a metric whose
denominator is zero is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.metrics import OVERALL, _divide, _resampled_sums, _rng
from chronoscope_dagster.evaluation.own_present import has_own_present

KNOWLEDGE_METRICS = {
    "known_rate_at1": ("known", "turns"),
    "scope_loss_rate_at1": ("lost", "known_implicit"),
    "scope_loss_rate_eligible_at1": ("lost_eligible", "known_eligible"),
    "drift_given_known_at1": ("drifted", "known_eligible"),
}
"""metric: (numerator, denominator), both per-turn counts summed per chain."""
OWN_KNOWLEDGE = {
    f"own_{metric}": (f"own_{numerator}", f"own_{denominator}")
    for metric, (numerator, denominator) in KNOWLEDGE_METRICS.items()
}
"""The same against the model's own present."""
KNOWLEDGE_LABELS = {
    "known_rate_at1": "known alone",
    "scope_loss_rate_at1": "lost in conversation",
    "drift_given_known_at1": "drifted to today",
}
_COUNTS = (
    "turns",
    "known",
    "known_implicit",
    "lost",
    "known_eligible",
    "lost_eligible",
    "drifted",
)
_OWN_COUNTS = tuple(f"own_{name}" for name in _COUNTS)
KNOWLEDGE_SCHEMA = pa.schema(
    [
        pa.field("stratum", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("value", pa.float64(), nullable=False),
        pa.field("ci_low", pa.float64()),
        pa.field("ci_high", pa.float64()),
        pa.field("denominator", pa.int64(), nullable=False),
        pa.field("n_chains", pa.int64(), nullable=False),
        pa.field("n_turns", pa.int64(), nullable=False),
        pa.field("turns_left_out", pa.int64(), nullable=False),
    ]
)
_KEYS = ["chain_id", "turn_index"]


def _turn_counts(
    prefix: str,
    every: np.ndarray,
    known: np.ndarray,
    implicit: np.ndarray,
    eligible: np.ndarray,
    wrong: np.ndarray,
    drifted: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per turn, which of the knowledge counts it falls in (``prefix``: ``""`` against the
    dump's present, ``"own_"`` against the model's)."""
    known_implicit = known & implicit
    return {
        f"{prefix}turns": every,
        f"{prefix}known": known,
        f"{prefix}known_implicit": known_implicit,
        f"{prefix}lost": known_implicit & wrong,
        f"{prefix}known_eligible": known_implicit & eligible,
        f"{prefix}lost_eligible": known_implicit & eligible & wrong,
        f"{prefix}drifted": known_implicit & eligible & drifted,
    }


def _flag(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False).astype(bool)


def knowledge_metrics(
    in_setting: pa.Table,
    explicit: pa.Table,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pa.Table:
    """The knowledge metrics (``KNOWLEDGE_SCHEMA``) of one model in one setting, from its
    scored turns there (``in_setting``) and under explicit scope (``explicit``)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    alone = explicit.select([*_KEYS, "correct_at1"]).rename_columns([*_KEYS, "known"])
    needed = [*_KEYS, "family", "is_explicit", "drift_eligible", "correct_at1", "drift_at1"]
    own = has_own_present(in_setting)
    if own:
        needed += ["own_drift_eligible", "own_drift_at1", "changed_since_cutoff", "after_cutoff"]
    paired = (
        in_setting.select(needed)
        .join(alone, _KEYS, join_type="inner")
        .sort_by([(k, "ascending") for k in _KEYS])
    )
    left_out = in_setting.num_rows - paired.num_rows
    known = _flag(paired, "known")
    implicit = ~_flag(paired, "is_explicit")
    eligible = _flag(paired, "drift_eligible")
    wrong = ~_flag(paired, "correct_at1")
    every = np.ones(paired.num_rows, dtype=bool)
    drifted = _flag(paired, "drift_at1")
    counts = _turn_counts("", every, known, implicit, eligible, wrong, drifted)
    names = _COUNTS
    metrics = KNOWLEDGE_METRICS
    if own:
        knowable = known & ~(_flag(paired, "changed_since_cutoff") & _flag(paired, "after_cutoff"))
        own_eligible = _flag(paired, "own_drift_eligible")
        own_drifted = _flag(paired, "own_drift_at1")
        counts |= _turn_counts("own_", every, knowable, implicit, own_eligible, wrong, own_drifted)
        names = _COUNTS + _OWN_COUNTS
        metrics = KNOWLEDGE_METRICS | OWN_KNOWLEDGE
    turn_counts = np.column_stack([counts[name] for name in names]).astype(np.float64)
    chain_ids = paired.column("chain_id").to_pylist()
    chains, chain_of_turn = np.unique(np.array(chain_ids, dtype=object), return_inverse=True)
    sums = np.zeros((len(chains), len(names)))
    np.add.at(sums, chain_of_turn, turn_counts)
    family_of_chain = dict(zip(chain_ids, paired.column("family").to_pylist(), strict=True))
    families = np.array([family_of_chain[c] for c in chains], dtype=object)
    rows: list[dict] = []
    strata = [(OVERALL, np.ones(len(chains), dtype=bool))] + [
        (f"family={family}", families == family) for family in sorted(set(families))
    ]
    for label, mask in strata:
        rows += _stratum_rows(
            label, sums[mask], bootstrap, seed, 1.0 - confidence, left_out, names, metrics
        )
    return pa.Table.from_pylist(rows, schema=KNOWLEDGE_SCHEMA)


def _stratum_rows(
    label: str,
    sums: np.ndarray,
    bootstrap: int,
    seed: int,
    alpha: float,
    left_out: int,
    names: tuple[str, ...],
    metrics: dict[str, tuple[str, str]],
) -> Iterable[dict]:
    column = {name: index for index, name in enumerate(names)}
    totals = sums.sum(axis=0)
    resampled = (
        _resampled_sums(sums, bootstrap, _rng(seed, f"knowledge:{label}"))
        if bootstrap and len(sums)
        else None
    )
    for metric, (numerator, denominator) in metrics.items():
        den = totals[column[denominator]]
        if den <= 0:
            continue
        value = float(totals[column[numerator]] / den)
        low = high = None
        if resampled is not None:
            values = _divide(resampled[:, column[numerator]], resampled[:, column[denominator]])
            values = values[np.isfinite(values)]
            if values.size:
                q_low, q_high = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
                low, high = min(float(q_low), value), max(float(q_high), value)
        yield {
            "stratum": label,
            "metric": metric,
            "value": value,
            "ci_low": low,
            "ci_high": high,
            "denominator": int(den),
            "n_chains": len(sums),
            "n_turns": int(totals[column["turns"]]),
            "turns_left_out": left_out,
        }


def overall_values(knowledge: pa.Table) -> dict[str, float]:
    overall = knowledge.filter(pc.equal(knowledge["stratum"], OVERALL))
    return dict(zip(overall["metric"].to_pylist(), overall["value"].to_pylist(), strict=True))


REFERENCE_KNOWLEDGE = {
    "oracle": {"known_rate_at1": 1.0, "scope_loss_rate_at1": 0.0, "drift_given_known_at1": 0.0},
    "scope_blind": {
        "known_rate_at1": 1.0,
        "scope_loss_rate_eligible_at1": 1.0,
        "drift_given_known_at1": 1.0,
    },
}
"""What the reference systems must score, overall, in each of the paper's settings: the
oracle knows everything and loses nothing; scope-blind knows everything alone and loses (to
today's value) every drift-eligible turn whose scope the conversation carries."""
REFERENCE_EXPLICIT_ACC = {"oracle": 1.0, "scope_blind": 1.0}
"""Acc@1 the reference systems must score under explicit scope."""


def reference_knowledge_problems(
    backend: str, knowledge: pa.Table, ruled: Callable[[str], str] = str
) -> list[str]:
    """Where a reference system's knowledge metrics break ``REFERENCE_KNOWLEDGE``, each rule
    read on the metric ``ruled`` names (its own-present twin, for a system with a knowledge
    cutoff); a metric without denominator (no such turn) is not a problem."""
    values = overall_values(knowledge)
    return [
        f"{metric} = {values[metric]}, not {expected}"
        for metric, expected in (
            (ruled(name), expected)
            for name, expected in REFERENCE_KNOWLEDGE.get(backend, {}).items()
        )
        if metric in values and values[metric] != expected
    ]
