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

A reference system with a knowledge cutoff answers from its own present (``own_present``), so
the rules whose figure depends on the present (``PRESENT_DEPENDENT``) hold it to its own
present: ``present_day`` is wrong and drifts on every turn eligible against its own present,
and scores 0 on ``own_scope_acc_at1``; against the dump's present it is merely wrong where the
two presents differ.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.knowledge import (
    REFERENCE_EXPLICIT_ACC,
    REFERENCE_KNOWLEDGE,
    knowledge_metrics,
    reference_knowledge_problems,
)
from chronoscope_dagster.evaluation.metrics import OVERALL, OWN_PREFIX, SCOPE_METRIC
from chronoscope_dagster.evaluation.own_present import has_own_present, score_against_presents
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting

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
ZERO_FOR_THE_ORACLE = (
    "drift_rate_given_present_at1",
    "drift_rate_given_present_atk",
    OWN_PREFIX + "drift_rate_given_present_at1",
    OWN_PREFIX + "drift_rate_given_present_atk",
)
REFERENCE_SCOPE_ACC = {"oracle": 1.0, "present_day": 0.0, "scope_blind": 0.0}
"""``scope_acc_at1`` each reference system scores in every stratum where it exists."""
PRESENT_DEPENDENT = frozenset(
    {SCOPE_METRIC, "drift_given_known_at1", "scope_loss_rate_eligible_at1"}
)
"""The rules' metrics that a system with a knowledge cutoff is held to against its own present
(under the name prefixed ``own_``)."""


def ruled_metric(metric: str, own_present: bool) -> str:
    """The metric a rule on ``metric`` reads: its own-present twin for a system with a
    knowledge cutoff where the figure depends on the present."""
    return OWN_PREFIX + metric if own_present and metric in PRESENT_DEPENDENT else metric


def expected_scope_acc(backend: str, setting: Setting) -> float | None:
    """What ``backend`` must score on ``scope_acc_at1`` in ``setting``; None if not fixed.
    Under explicit scope every turn is asked with its scope stated, which ``scope_blind``
    answers right (``REFERENCE_EXPLICIT_ACC``)."""
    if setting is Setting.EXPLICIT_SCOPE and backend in REFERENCE_EXPLICIT_ACC:
        return REFERENCE_EXPLICIT_ACC[backend]
    return REFERENCE_SCOPE_ACC.get(backend)


def scope_acc_problems(
    backend: str, setting: Setting, metrics: pa.Table, *, own_present: bool = False
) -> list[str]:
    """Every ``scope_acc_at1`` row of ``metrics`` (a metrics table of ``backend`` in
    ``setting``, of one variant or several) that is not ``expected_scope_acc``; of a system
    with a knowledge cutoff (``own_present``), every ``own_scope_acc_at1`` row. A stratum
    without scope-dependent turns has no row and is no problem."""
    expected = expected_scope_acc(backend, setting)
    if expected is None:
        return []
    metric = ruled_metric(SCOPE_METRIC, own_present)
    return [
        f"{row.get('variant') or ''} {row['stratum']} {metric} = {row['value']}, not "
        f"{expected} (n={row['denominator']})".strip()
        for row in metrics.to_pylist()
        if row["metric"] == metric and row["value"] != expected
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
        in_setting = score_against_presents(scored_turns(model, paired), mode)
        knowledge = knowledge_metrics(
            in_setting, score_against_presents(scored_turns(model, explicit), mode), bootstrap=0
        )
        rename = partial(ruled_metric, own_present=has_own_present(in_setting))
        problems += [
            f"{backend} {model}/{paired} against {explicit}: {problem}"
            for problem in reference_knowledge_problems(backend, knowledge, rename)
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
    own_present = any(has_own_present(scored_turns(model, setting, v)) for v in variants)
    problems = [
        f"{backend} {model}/{setting} {problem}"
        for problem in scope_acc_problems(backend, setting, metrics, own_present=own_present)
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
        problems += _present_day_problems(model, setting, variants, modes, scored_turns)
    elif backend == "copy_previous":
        n, wrong = copy_previous()
        if wrong:
            problems.append(
                f"copy_previous {model}/{setting}: {wrong} of {n} scored predictions "
                "are not the previous answer of the conversation"
            )
    return problems


def _present_day_problems(
    model: str,
    setting: Setting,
    variants: Sequence[str | None],
    modes: Mapping[tuple[str, str], str],
    scored_turns: Callable[..., pa.Table],
) -> list[str]:
    """``present_day`` is wrong and drifts on every drift-eligible turn: against its own
    present where it has a knowledge cutoff, else against the dump's."""
    mode = modes[(model, setting)]
    problems = []
    for variant in variants:
        turns = score_against_presents(scored_turns(model, setting, variant), mode)
        prefix = OWN_PREFIX if has_own_present(turns) else ""
        turns = turns.filter(pc.field(f"{prefix}drift_eligible"))
        right = pc.sum(pc.cast(turns["correct_at1"], pa.int64())).as_py() or 0
        drifted = pc.sum(pc.cast(turns[f"{prefix}drift_at1"], pa.int64())).as_py() or 0
        if right or drifted < turns.num_rows:
            against = "its own present" if prefix else "the dump's present"
            problems.append(
                f"present_day {model}/{setting} {variant or ''}: of {turns.num_rows} turns "
                f"drift-eligible against {against}, {right} are right and "
                f"{turns.num_rows - drifted} do not drift"
            )
    return problems
