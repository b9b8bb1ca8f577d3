"""Bridged multi-pid: properties of the previous answers, under the first turn's year.

What it tests: composing properties under a fixed time scope. The user asks
about subject A in year Y, then about the entity just given as the answer
("who was its CEO at the time?"), and so on; the model must resolve each
bridge entity and keep year Y throughout.

Structure (4 turns): 1. explicit, entity: p1 of A at Y; 2.-4. implicit (no
year), entity, at Y: the scored turns. Each is a hop: a bridge property of the
previous turn's single answer, which the question names (``cross_entity``:
"And for Google, who was the CEO at the time?"; a pronoun after an answer of
the subject's kind could mean either); where no hop is possible, the user
returns to A (``reintroduce``: names A, no year) with another of A's
properties; where neither is possible, the chain branches: a hop from an
earlier turn's single answer, named again (``cross_entity``).

Rule: for each (subject A, property p1) of ``BRIDGES`` and each whole-year
anchor Y (1950 to the snapshot year) where A's gold for p1 is exactly one
labelled value M (so the bridge is unambiguous), a chain is built from the
item-and-year's generator: each next turn is a hop from the previous turn's
answer when it is a single value with a bridge property p of the previous
property (``BRIDGES``) that the entity really has at Y (a decided gold;
``askable``: its templates refer to it with the right pronoun) and whose
gold names no entity already in the chain; else a return to A with a
property not yet asked of A whose gold at Y is labelled and names no entity
already in the chain; else a branch, the same hop from an earlier turn's
single answer (without branches, the chains of real dumps stop at three
turns: a country's head of government has no bridge property whose gold
changes with the year). The most scope-sensitive options are drawn first
(drift-eligible, then scope-sensitive, ``common``); every scored turn
depends on the year (a timeless fact, such as a company's country, is never
asked: it would be answered without the scope). No question repeats. A year
whose chain does not reach 4 turns is not used (``too_short``), nor one with
fewer than ``MIN_DRIFTING`` drift-eligible scored turns
(``scope_insensitive``: composing is tested against the present-day
shortcut); Y is drawn among the years with the most drift-eligible turns.
The bridge is joined by QID, never by label.

Bridges (``BRIDGES``: p1 -> properties of its value), kept where the sample has
them: employer -> CEO, chairperson, owner, head coach, country, administrative
division; sports team -> head coach, CEO, owner, country, division;
organization membership -> chairperson; owner -> CEO, chairperson, country,
division; division -> country; country -> head of government, head of state;
position -> country; head of government or state -> party, position; CEO or
chairperson -> employer, party. Occupation is left out: it does not change
with the year.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    askable,
    askable_pairs,
    best_tier,
    fresh_question,
    pick,
    sensitivity,
)
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "bridged_multi_pid"
FIRST_YEAR = 1950
LENGTH = 4
MIN_DRIFTING = 2
BRIDGES: dict[str, tuple[str, ...]] = {
    "P108": ("P169", "P488", "P127", "P286", "P17", "P131"),
    "P54": ("P286", "P169", "P127", "P17", "P131"),
    "P463": ("P488",),
    "P127": ("P169", "P488", "P17", "P131"),
    "P131": ("P17",),
    "P17": ("P6", "P35"),
    "P39": ("P17",),
    "P6": ("P102", "P39"),
    "P35": ("P102", "P39"),
    "P169": ("P108", "P102"),
    "P488": ("P108", "P102"),
}


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        if pid not in BRIDGES:
            continue
        built = []
        for year, gold in sorted(facts.year_golds(subject, pid).items()):
            if FIRST_YEAR <= year <= facts.snapshot_year and len(gold.qids) == 1:
                turns = _chain(facts, templates, seed, subject, name, pid, year)
                if turns is not None:
                    drifting = sum(turn.drift_eligible for turn in turns[1:])
                    built.append((turns, drifting if drifting >= MIN_DRIFTING else 0))
        options = best_tier(facts, built, (subject, pid))
        if options:
            turns = rng_for(seed, FAMILY, subject, pid).choice(options)
            yield Chain(FAMILY, facts.snapshot_year, turns[0].scope_anchor, tuple(turns))


def _chain(
    facts: SnapshotFacts,
    templates: Templates,
    seed: int,
    subject: str,
    name: str,
    pid: str,
    year: int,
) -> list[Turn] | None:
    """The four turns at ``year``, or None (counted ``too_short``) when they cannot be built."""
    rng = rng_for(seed, FAMILY, subject, pid, year)
    anchor = str(year)
    question = pick(templates, rng, pid, "explicit_year", subject=name, year=year)
    first = facts.turn(question, subject, pid, anchor, explicit=True)
    if first is None:
        return None
    turns, asked = [first], [question]
    while len(turns) < LENGTH:
        step = _next(facts, templates, rng, subject, turns, anchor)
        turn = None
        if step is not None:
            entity, asked_pid, slot = step
            named = name if slot == "reintroduce" else facts.subject_name(entity)
            question = fresh_question(templates, rng, asked_pid, (slot,), asked, subject=named)
            if question is not None:
                turn = facts.turn(question, entity, asked_pid, anchor, explicit=False)
        if turn is None:
            facts.refuse(subject, pid, anchor, "too_short")
            return None
        turns.append(turn)
    return turns


def _next(
    facts: SnapshotFacts, templates: Templates, rng: random.Random, subject: str, turns: list[Turn],
    anchor: str,
) -> tuple[str, str, str] | None:  # fmt: skip
    """The next question as (entity, property, slot): a hop from the previous turn's single
    answer, else a return to the subject, else a hop from an earlier single answer; the most
    scope-sensitive option, drawn."""
    seen = {turn.subject_qid for turn in turns} | {q for turn in turns for q in turn.gold_qids}
    asked_of_subject = {turn.pid for turn in turns if turn.subject_qid == subject}
    backs = [
        (subject, other, "reintroduce")
        for other in facts.pids_by_subject.get(subject, ())
        if other not in asked_of_subject
        and askable(facts, templates, subject, other)
        and _fresh_gold(facts, subject, other, anchor, seen)
    ]
    hops = _hops(facts, templates, turns[-1:], anchor, seen)
    for options in (hops, backs, None):
        if options is None:
            options = _hops(facts, templates, turns[:-1], anchor, seen)
        ranks = [sensitivity(facts, entity, pid, anchor) for entity, pid, _ in options]
        if any(ranks):
            return rng.choice(
                [o for o, rank in zip(options, ranks, strict=True) if rank == max(ranks)]
            )
    return None


def _hops(
    facts: SnapshotFacts, templates: Templates, turns: list[Turn], anchor: str, seen: set[str]
) -> list[tuple[str, str, str]]:
    """The hops from the single answers of ``turns``: a bridge property of each answer's
    property, asked of the answer, named (``askable``; ``_fresh_gold`` against ``seen``)."""
    return [
        (entity, bridged, "cross_entity")
        for turn in turns
        if len(turn.gold_qids) == 1
        for entity in turn.gold_qids
        if facts.subject_name(entity) is not None
        for bridged in BRIDGES.get(turn.pid, ())
        if askable(facts, templates, entity, bridged)
        and _fresh_gold(facts, entity, bridged, anchor, seen)
    ]


def _fresh_gold(facts: SnapshotFacts, entity: str, pid: str, anchor: str, avoid: set[str]) -> bool:
    """Whether ``pid`` has a labelled gold for ``entity`` at ``anchor`` naming nothing in
    ``avoid``."""
    gold = facts.gold(entity, pid, anchor)
    return gold is not None and facts.verbalizable(gold.qids) and not avoid & set(gold.qids)
