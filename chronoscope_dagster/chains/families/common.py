"""Small pieces every family uses, and the rules every family's choices follow.

* Scope sensitivity: a chain is generated only if one of its scored turns
  (from the second on) asks something whose gold depends on the time scope
  (``SnapshotFacts.scope_sensitive``); otherwise it is refused as
  ``scope_insensitive``. Among a family's candidate scopes, those where every
  scored implicit turn is drift-eligible (today's value is wrong there) are
  preferred (``best_tier``).
* References: a property's templates refer to its subject as "they" when they
  assume a person, "it" otherwise; a subject of the other kind (from its
  ``instance of``) is not asked about that property (``wrong_pronoun``). An
  implicit question about a subject it does not name is not asked after an
  answer of the same kind, which the pronoun could equally mean
  (``ambiguous_reference``).
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from typing import TypeVar

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates
from chronoscope_dagster.wikidata.properties import default_catalog

COMPLEMENTS = default_catalog().complements
"""Each property's complement: another property of the same subject, asked after it."""
SELECTION_REASONS = ("scope_insensitive", "wrong_pronoun", "ambiguous_reference", "too_short")
"""Why a family refused a candidate beyond the gold rules (``chains.evidence.DROP_REASONS``)."""

FOLLOWUP_SLOTS = ("followup", "followup_then")
Option = TypeVar("Option")


def askable(facts: SnapshotFacts, templates: Templates, subject: str, pid: str) -> bool:
    """Whether ``pid`` has templates and they refer to ``subject`` with the right pronoun."""
    if pid not in templates.properties:
        return False
    person = facts.is_person(subject)
    if person is not None and person != _assumes_person(templates, pid):
        facts.refuse(subject, pid, None, "wrong_pronoun")
        return False
    return True


def askable_pairs(facts: SnapshotFacts, templates: Templates) -> Iterator[tuple[str, str, str]]:
    """(subject, how to name it, property) for every pair a question can be asked about:
    the subject is nameable and the pair ``askable``; in the facts' order."""
    for subject, pids in facts.root_subjects():
        name = facts.subject_name(subject)
        if name is None:
            continue
        for pid in pids:
            if askable(facts, templates, subject, pid):
                yield subject, name, pid


def year_spans(ends: Sequence[int], min_years: int, max_years: int) -> list[tuple[int, int]]:
    """(y1, y2) of the sorted years ``ends`` spanning ``min_years`` to ``max_years`` whole
    years (both ends included), by y1 then y2."""
    return [
        (y1, y2)
        for y1 in ends
        for y2 in ends[
            bisect_left(ends, y1 + min_years - 1) : bisect_right(ends, y1 + max_years - 1)
        ]
    ]


def pick(templates: Templates, rng: random.Random, pid: str, slot: str, **values: object) -> str:
    """A phrasing of ``slot`` for ``pid``, drawn from the item's generator, rendered."""
    phrasings = templates.phrasings(pid, slot)
    return templates.render(pid, slot, rng.randrange(len(phrasings)), **values)


def pick_generic(templates: Templates, rng: random.Random, slot: str, **values: object) -> str:
    """A phrasing of the generic ``slot``, drawn from the item's generator, rendered."""
    phrasings = templates.generic_phrasings(slot)
    return templates.render_generic(slot, rng.randrange(len(phrasings)), **values)


def fresh_question(
    templates: Templates,
    rng: random.Random,
    pid: str,
    slots: Sequence[str],
    asked: list[str],
    **values: object,
) -> str | None:
    """A phrasing of ``pid`` in one of ``slots`` not yet asked in the chain (``asked``, to which
    it is added), or None when every one was."""
    options = [
        question
        for slot in slots
        for index in range(len(templates.phrasings(pid, slot)))
        if (question := templates.render(pid, slot, index, **values)) not in asked
    ]
    if not options:
        return None
    question = rng.choice(options)
    asked.append(question)
    return question


def fresh_followup(templates: Templates, rng: random.Random, pid: str, asked: list[str]) -> str:
    """An implicit follow-up of ``pid`` (``followup`` or ``followup_then``) not yet asked in
    the chain (a chain asks a property implicitly at most twice; each slot has three)."""
    question = fresh_question(templates, rng, pid, FOLLOWUP_SLOTS, asked)
    assert question is not None
    return question


def sensitivity(facts: SnapshotFacts, subject: str, pid: str, anchor: str | None) -> int:
    """2 for a drift-eligible question, 1 for a scope-sensitive one, 0 otherwise."""
    if facts.drifts(subject, pid, anchor):
        return 2
    return 1 if facts.scope_sensitive(subject, pid, anchor) else 0


def best_tier(
    facts: SnapshotFacts, tiered: Sequence[tuple[Option, int]], refused: tuple[str, str]
) -> list[Option]:
    """The options of the highest non-zero tier (``tiered``: option and its tier, such as a
    ``sensitivity``), in their order; none (the pair ``refused`` counted as ``scope_insensitive``) when every
    option is of tier 0."""
    best = max((found for _, found in tiered), default=0)
    if best == 0:
        if tiered:
            facts.refuse(*refused, None, "scope_insensitive")
        return []
    return [option for option, found in tiered if found == best]


def clear_pronoun(
    facts: SnapshotFacts, templates: Templates, subject: str, pid: str, previous_answer: str | None
) -> bool:
    """Whether an implicit question of ``pid`` about ``subject``, not named, asked after the
    answer ``previous_answer`` (a QID) can only mean the subject: that answer is the subject
    itself or of the other kind."""
    if previous_answer in (None, subject):
        return True
    person = facts.is_person(subject)
    return facts.is_person(previous_answer) != (
        _assumes_person(templates, pid) if person is None else person
    )


def refers_cleanly(
    facts: SnapshotFacts, templates: Templates, subject: str, pid: str, previous_answer: str | None
) -> bool:
    """``clear_pronoun``; if not, the pair is refused as ``ambiguous_reference``."""
    if clear_pronoun(facts, templates, subject, pid, previous_answer):
        return True
    facts.refuse(subject, pid, previous_answer, "ambiguous_reference")
    return False


def answered_apart(
    facts: SnapshotFacts, subject: str, pids: Sequence[str], anchor: str | None
) -> bool:
    """Whether the golds of ``pids`` for ``subject`` at ``anchor`` share no value: one person
    heading both state and government, or chairing the company they run, would make the
    second answer a copy of the first."""
    seen: set[str] = set()
    for pid in pids:
        gold = facts.gold(subject, pid, anchor)
        if gold is None or seen & set(gold.qids):
            return False
        seen.update(gold.qids)
    return True


def answer_of(facts: SnapshotFacts, subject: str, pid: str, anchor: str | None) -> str | None:
    """The canonical answer (a QID) of ``pid`` for ``subject`` at ``anchor``, if decided."""
    gold = facts.gold(subject, pid, anchor)
    return gold.canonical if gold else None


def _assumes_person(templates: Templates, pid: str) -> bool:
    return templates.properties[pid].subject_kind == "person"


def span_turn(
    question: str,
    pid: str,
    subject: str,
    name: str,
    years: tuple[int, int],
    answer: str,
    kind: str,
    asked: tuple[str, str] | None = None,
) -> Turn:
    """A yes/no or count turn over the whole years ``years[0]``..``years[1]``; ``asked``: the
    QID and label of the value a yes/no question asks about."""
    first, last = years
    return Turn(
        question=question, pid=pid, subject_qid=subject, subject_label=name,
        gold_qids=(), gold_labels=(), gold_aliases=(), answer=answer, canonical_qid=None,
        scope_year=first, scope_anchor=f"{first}-{last}", is_explicit=True, answer_kind=kind,
        scope_end_year=last, asked_qid=asked[0] if asked else None,
        asked_label=asked[1] if asked else None,
    )  # fmt: skip


def carryover_chains(
    facts: SnapshotFacts, templates: Templates, seed: int, family: str, slot: str
) -> Iterator[Chain]:
    """Chains of ``family`` whose turn 2 asks the complement in ``slot``."""
    for subject, pids in facts.root_subjects():
        name = facts.subject_name(subject)
        if name is None:
            continue
        for pid in pids:
            other = COMPLEMENTS.get(pid)
            if (
                other not in pids
                or not askable(facts, templates, subject, pid)
                or not askable(facts, templates, subject, other)
            ):
                continue
            years = best_tier(
                facts,
                [
                    (year, sensitivity(facts, subject, other, str(year)))
                    for year in _common_years(facts, subject, pid, other)
                    if refers_cleanly(
                        facts, templates, subject, other, answer_of(facts, subject, pid, str(year))
                    )
                    and answered_apart(facts, subject, (pid, other), str(year))
                ],
                (subject, other),
            )
            if not years:
                continue
            rng = rng_for(seed, family, subject, pid)
            anchor = str(rng.choice(years))
            first = facts.turn(
                pick(templates, rng, pid, "explicit_year", subject=name, year=anchor),
                subject, pid, anchor, explicit=True,
            )  # fmt: skip
            if first is None:
                continue
            second = facts.turn(
                pick(templates, rng, other, slot), subject, other, anchor, explicit=False
            )
            if second:
                yield Chain(family, facts.snapshot_year, anchor, (first, second))


def _common_years(facts: SnapshotFacts, subject: str, pid: str, other: str) -> list[int]:
    """Whole years in which both properties of ``subject`` have a verbalizable gold."""
    first, second = facts.year_golds(subject, pid), facts.year_golds(subject, other)
    return sorted(
        year
        for year in first.keys() & second.keys()
        if facts.verbalizable(first[year].qids) and facts.verbalizable(second[year].qids)
    )
