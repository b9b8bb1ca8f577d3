"""What the reference systems must score, checked on their predictions and metrics.

The reference systems answer from the facts rather than from knowledge, so each has scores it
must reach whatever the benchmark holds: the oracle is right everywhere and never drifts;
``present_day`` is wrong and drifts on every drift-eligible turn; ``copy_previous`` answers
the previous answer of its conversation; ``scope_blind`` is right under explicit scope, and
against its explicit-scope run knows every turn and loses every drift-eligible implicit one
(``knowledge.REFERENCE_KNOWLEDGE``). On the headline ``scope_acc_at1`` (``REFERENCE_SCOPE_ACC``)
the oracle scores 1 and ``present_day`` and ``scope_blind`` 0 wherever it exists: a
scope-dependent turn is implicit and its gold is neither today's value nor "I don't know",
which is all they answer to an implicit turn. A benchmark on which one of them misses its score
measures something other than what it claims, so the pipeline gates on these rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.knowledge import (
    REFERENCE_EXPLICIT_ACC,
    REFERENCE_KNOWLEDGE,
    knowledge_metrics,
    reference_knowledge_problems,
)
from chronoscope_dagster.evaluation.metrics import OVERALL, SCOPE_METRIC
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting
from chronoscope_dagster.evaluation.scoring import score_turns

REFERENCE_BACKENDS = ("oracle", "present_day", "copy_previous", "scope_blind")
PERFECT_FOR_THE_ORACLE = (
    "acc_at1",
    "acc_atk",
    "strict_chain_acc_at1",
    "avg_chain_turn_acc_at1",
    "final_turn_acc_at1",
    "final_turn_acc_atk",
    "token_f1_micro_top1",
    "char3_f1_micro_top1",
)
ZERO_FOR_THE_ORACLE = ("drift_rate_given_present_at1", "drift_rate_given_present_atk")
REFERENCE_SCOPE_ACC = {"oracle": 1.0, "present_day": 0.0, "scope_blind": 0.0}
"""``scope_acc_at1`` each reference system scores in every stratum where it exists."""


def expected_scope_acc(backend: str, setting: Setting) -> float | None:
    """What ``backend`` must score on ``scope_acc_at1`` in ``setting``; None if not fixed.
    Under explicit scope every turn is asked with its scope stated, which ``scope_blind``
    answers right (``REFERENCE_EXPLICIT_ACC``)."""
    if setting is Setting.EXPLICIT_SCOPE and backend in REFERENCE_EXPLICIT_ACC:
        return REFERENCE_EXPLICIT_ACC[backend]
    return REFERENCE_SCOPE_ACC.get(backend)


def scope_acc_problems(backend: str, setting: Setting, metrics: pa.Table) -> list[str]:
    """Every ``scope_acc_at1`` row of ``metrics`` (a metrics table of ``backend`` in
    ``setting``, of one variant or several) that is not ``expected_scope_acc``. A stratum
    without scope-dependent turns has no row and is no problem."""
    expected = expected_scope_acc(backend, setting)
    if expected is None:
        return []
    return [
        f"{row.get('variant') or ''} {row['stratum']} {SCOPE_METRIC} = {row['value']}, not "
        f"{expected} (n={row['denominator']})".strip()
        for row in metrics.to_pylist()
        if row["metric"] == SCOPE_METRIC and row["value"] != expected
    ]


def copy_previous_sql(predictions: str, turns: str, setting: Setting, *, by_variant: bool) -> str:
    """(scored predictions, those that are not the copy) of the SQL ``predictions`` (of several
    variants: ``by_variant``): gold context must copy the previous turn's gold, recomputed from
    ``turns``; questions-only shows nothing to copy; self-conditioned copies its own previous
    prediction (empty on the first turn)."""
    on = "ON prev.chain_id = p.chain_id AND prev.turn_index = p.turn_index - 1"
    if setting is Setting.GOLD_CONTEXT:
        previous, join = "prev.answer", f"LEFT JOIN {turns} prev {on}"
    elif setting is Setting.SELF_CONDITIONED:
        if by_variant:
            on += " AND prev.variant = p.variant"
        previous, join = "coalesce(prev.prediction, '')", f"LEFT JOIN {predictions} prev {on}"
    else:
        previous, join = "''", ""
    return f"""SELECT count(*), count_if(p.prediction IS DISTINCT FROM {previous})
               FROM {predictions} p {join} WHERE p.scored"""


def _knowledge_problems(
    backend: str,
    model: str,
    setting: Setting,
    modes: Mapping[tuple[str, str], str],
    scored_turns: Callable[[str, Setting], pa.Table],
) -> list[str]:
    """A reference system's knowledge metrics (``REFERENCE_KNOWLEDGE``) in the paper settings
    this partition pairs with: the setting itself, or under explicit scope every paper setting
    with metrics; nothing until both sides of a pair have metrics in the same match mode."""
    explicit = Setting.EXPLICIT_SCOPE
    settings = PAPER_SETTINGS if setting is explicit else (setting,)
    problems = []
    for paired in settings:
        if not all((model, s) in modes for s in (paired, explicit)):
            continue
        found = {modes[(model, s)] for s in (paired, explicit)}
        if len(found) > 1:
            continue
        (mode,) = found
        knowledge = knowledge_metrics(
            score_turns(scored_turns(model, paired), mode),
            score_turns(scored_turns(model, explicit), mode),
            bootstrap=0,
        )
        problems += [
            f"{backend} {model}/{paired} against {explicit}: {problem}"
            for problem in reference_knowledge_problems(backend, knowledge)
        ]
    return problems


def reference_problems(
    backend: str,
    model: str,
    setting: Setting,
    variants: Sequence[str | None],
    *,
    metrics: pa.Table,
    modes: Mapping[tuple[str, str], str],
    scored_turns: Callable[..., pa.Table],
    copy_previous: Callable[[], tuple[int, int]],
) -> list[str] | None:
    """Where one (model, setting) partition of a metrics asset (``metrics``: its table;
    ``modes``: the match mode of each (model, setting) partition of the asset), computed from
    predictions of ``variants`` that ``backend`` answered, breaks its reference system's rules;
    None when ``backend`` is no reference system. ``scored_turns(model, setting, variant)``
    gives the predictions' scored turns (``scored_turns_sql``'s rows); ``copy_previous()``
    counts what ``copy_previous_sql`` counts. The knowledge rules apply to the evaluation
    sample's predictions, which have no variants."""
    if backend not in REFERENCE_BACKENDS:
        return None
    problems = [
        f"{backend} {model}/{setting} {problem}"
        for problem in scope_acc_problems(backend, setting, metrics)
    ]
    if variants == (None,) and backend in REFERENCE_KNOWLEDGE:
        problems += _knowledge_problems(backend, model, setting, modes, scored_turns)
    if setting is Setting.EXPLICIT_SCOPE and backend in REFERENCE_EXPLICIT_ACC:
        expected = REFERENCE_EXPLICIT_ACC[backend]
        problems += [
            f"{backend} {model}/{setting} {row.get('variant') or ''}: acc_at1 = "
            f"{row['value']}, not {expected}"
            for row in metrics.to_pylist()
            if row["stratum"] == OVERALL and row["metric"] == "acc_at1" and row["value"] != expected
        ]
    if backend == "oracle":
        for row in metrics.to_pylist():
            expected = (
                1.0
                if row["metric"] in PERFECT_FOR_THE_ORACLE
                else 0.0
                if row["metric"] in ZERO_FOR_THE_ORACLE
                else None
            )
            if expected is not None and row["value"] != expected:
                problems.append(
                    f"oracle {model}/{setting} {row.get('variant') or ''} "
                    f"{row['stratum']} {row['metric']} = {row['value']}, not {expected}"
                )
    elif backend == "present_day":
        mode = modes[(model, setting)]
        for variant in variants:
            turns = score_turns(scored_turns(model, setting, variant), mode)
            turns = turns.filter(pc.field("drift_eligible"))
            right = pc.sum(pc.cast(turns["correct_at1"], pa.int64())).as_py() or 0
            drifted = pc.sum(pc.cast(turns["drift_at1"], pa.int64())).as_py() or 0
            if right or drifted < turns.num_rows:
                problems.append(
                    f"present_day {model}/{setting} {variant or ''}: of "
                    f"{turns.num_rows} drift-eligible turns, {right} are right and "
                    f"{turns.num_rows - drifted} do not drift"
                )
    elif backend == "copy_previous":
        n, wrong = copy_previous()
        if wrong:
            problems.append(
                f"copy_previous {model}/{setting}: {wrong} of {n} scored predictions "
                "are not the previous answer of the conversation"
            )
    return problems
