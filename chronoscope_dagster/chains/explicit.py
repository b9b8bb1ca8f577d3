"""Every turn as a standalone question: the ``explicit_scope`` setting's knowledge control.

A turn's explicit question names its subject and states its scope, rendered from its
property's explicit templates: ``explicit_year`` for a whole-year anchor ("2012"),
``explicit_date`` for a day anchor ("2012-04-01", written "1 April 2012"), ``timeless`` for
no anchor; a yes/no span turn asks ``interval_yes_no`` of its ``asked_qid`` (or
``interval_change`` when it asks none), a count turn ``count``. The phrasing is drawn from
``rng_for(seed, "explicit", chain_id, turn_index)``, so it does not depend on the order in
which chains are rendered. A turn that cannot be rendered (its property has no templates,
its subject no name, its asked value no label) gets None and a reason (``MISSING_REASONS``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

RNG_FAMILY = "explicit"
MISSING_REASONS = ("no_templates", "no_subject_name", "no_value_label", "unknown_scope")
_YEAR = re.compile(r"^\d{4}$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SPAN = re.compile(r"^(\d{4})-(\d{4})$")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def written_date(day: str) -> str:
    """``2012-04-01`` as "1 April 2012"."""
    value = date.fromisoformat(day)
    return f"{value.day} {_MONTHS[value.month - 1]} {value.year}"


def slot_and_values(turn: Turn, value_labels: Mapping[str, str]) -> tuple[str, dict] | str:
    """The explicit slot of ``turn`` and its placeholder values, or why there is none."""
    if not turn.subject_label:
        return "no_subject_name"
    anchor = turn.scope_anchor
    if turn.answer_kind in ("yes_no", "count"):
        span = _SPAN.match(anchor or "")
        if span is None:
            return "unknown_scope"
        first, last = span.groups()
        values = {"subject": turn.subject_label, "year": first, "year2": last}
        if turn.answer_kind == "count":
            return "count", values
        if turn.asked_qid is None:
            return "interval_change", values
        label = value_labels.get(turn.asked_qid)
        if not label:
            return "no_value_label"
        return "interval_yes_no", {**values, "value": label}
    if anchor is None:
        return "timeless", {"subject": turn.subject_label}
    if _YEAR.match(anchor):
        return "explicit_year", {"subject": turn.subject_label, "year": anchor}
    if _DAY.match(anchor):
        return "explicit_date", {"subject": turn.subject_label, "date": written_date(anchor)}
    return "unknown_scope"


def explicit_question(
    turn: Turn,
    templates: Templates,
    value_labels: Mapping[str, str],
    *,
    seed: int,
    chain_id: str,
    turn_index: int,
) -> str | None:
    """The explicit question of one turn, or None when it cannot be rendered."""
    question, _ = _render(turn, templates, value_labels, seed, chain_id, turn_index)
    return question


def explicit_questions(
    chain: Chain,
    templates: Templates,
    value_labels: Mapping[str, str],
    *,
    seed: int,
    missing: Counter[str] | None = None,
) -> tuple[str | None, ...]:
    """The explicit question of every turn of ``chain``; a turn that has none is counted in
    ``missing`` by reason."""
    questions = []
    for index, turn in enumerate(chain.turns):
        question, reason = _render(turn, templates, value_labels, seed, chain.chain_id, index)
        if reason is not None and missing is not None:
            missing[reason] += 1
        questions.append(question)
    return tuple(questions)


def explicit_by_chain(
    chains: Sequence[Chain], templates: Templates, label_of: Mapping[str, Any], *, seed: int
) -> tuple[dict[str, tuple[str | None, ...]], Counter[str]]:
    """The explicit questions of every chain by chain id, and the turns left without one by
    reason; ``label_of`` maps a QID to its label (a string or an object with ``label``)."""
    labels: dict[str, str] = {}
    for chain in chains:
        for turn in chain.turns:
            found = label_of.get(turn.asked_qid) if turn.asked_qid else None
            if found is not None:
                labels[turn.asked_qid] = found if isinstance(found, str) else found.label
    missing: Counter[str] = Counter()
    questions = {
        chain.chain_id: explicit_questions(chain, templates, labels, seed=seed, missing=missing)
        for chain in chains
    }
    return questions, missing


def _render(
    turn: Turn,
    templates: Templates,
    value_labels: Mapping[str, str],
    seed: int,
    chain_id: str,
    turn_index: int,
) -> tuple[str | None, str | None]:
    if turn.pid not in templates.properties:
        return None, "no_templates"
    found = slot_and_values(turn, value_labels)
    if isinstance(found, str):
        return None, found
    slot, values = found
    rng = rng_for(seed, RNG_FAMILY, chain_id, turn_index)
    index = rng.randrange(len(templates.phrasings(turn.pid, slot)))
    return templates.render(turn.pid, slot, index, **values), None
