"""Change point: implicit follow-ups under one year, then an explicit override.

What it tests: after several implicit turns have held the first year's scope,
the user names a new year; the model must switch to it, and keep the new
scope for the implicit turn that follows (the paper's change point: multiple
implicit turns, then an override).

Structure (5 or 6 turns), about one subject (same QID) throughout:
1. explicit, entity: p at y1;
2. implicit (no subject, no year), entity: q at y1;
3. implicit, entity: r at y1;
4. the override, explicit year (``scope_switch``), entity: q at y2;
5. implicit, entity: r at y2, under the new scope;
6. one time in two, where it can be asked, implicit, entity: p at y2.

Rule: for each (subject, property p), both askable, q and r are two other
askable properties of the subject. The candidates are (y1, y2, q, r) with
y1 != y2 whole years from 1950 to the snapshot year where every turn's gold
is verbalizable, every implicit turn depends on its scope
(``common.sensitivity``: its gold is not today's value, or, with none today,
shares nothing with the latest year's), and no turn's gold shares a value with an earlier turn's: no
answer can be copied from the conversation, and the override's answer is not
turn 2's. They are drawn from the item's generator among the best tier (the
most drift-eligible implicit turns first, ``common``). No turn re-asks an
earlier one (implicit phrasings are never repeated). An implicit turn whose
pronoun could also mean the answer before it (``common.clear_pronoun``) names
the subject instead ("And for Norway, who was the head of government at the
time?"): its year stays implicit. Gold: the values valid at any point of each
turn's year.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    FOLLOWUP_SLOTS,
    answer_of,
    askable,
    askable_pairs,
    best_tier,
    clear_pronoun,
    fresh_question,
    pick,
    sensitivity,
)
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "change_point"
FIRST_YEAR = 1950
LAST_SHARE = 0.5


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        others = [
            q
            for q in facts.pids_by_subject.get(subject, ())
            if q != pid and askable(facts, templates, subject, q)
        ]
        golds = {p: _usable(facts, subject, p) for p in (pid, *others)}
        steps = _Steps(facts, templates, subject, golds)
        tiered = []
        for q in others:
            for r in others:
                if r == q:
                    continue
                years = sorted(golds[q].keys() & golds[r].keys())
                closings = [
                    (y2, walk)
                    for y2 in years
                    if (walk := steps.walk([(q, y2, False), (r, y2, True)]))
                ]
                tiered += [
                    ((y1, y2, q, r), opening.tier + closing.tier - 1)
                    for y1 in years
                    if (opening := steps.walk([(pid, y1, False), (q, y1, True), (r, y1, True)]))
                    for y2, closing in closings
                    if y2 != y1 and not closing.answered & opening.answered
                ]
        options = best_tier(facts, tiered, (subject, pid))
        if not options:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        y1, y2, q, r = rng.choice(options)
        held = steps.walk(
            [(pid, y1, False), (q, y1, True), (r, y1, True), (q, y2, False), (r, y2, True)]
        )
        assert held is not None
        steps_asked = [(q, y1), (r, y1), (r, y2)]
        if rng.random() < LAST_SHARE and (last := steps.walk([(pid, y2, True)], held)):
            held = last
            steps_asked.append((pid, y2))
        asked: list[str] = []
        implicit = iter(
            (
                fresh_question(templates, rng, p, ("cross_entity",), asked, subject=name)
                if named
                else fresh_question(templates, rng, p, FOLLOWUP_SLOTS, asked),
                p,
                year,
                False,
            )
            for (p, year), named in zip(steps_asked, held.named, strict=True)
        )
        plan = [
            (pick(templates, rng, pid, "explicit_year", subject=name, year=y1), pid, y1, True),
            next(implicit),
            next(implicit),
            (pick(templates, rng, q, "scope_switch", year=y2), q, y2, True),
            *implicit,
        ]
        turns = [
            facts.turn(question, subject, asked_pid, str(year), explicit=explicit)
            for question, asked_pid, year, explicit in plan
        ]
        if all(turns):
            yield Chain(FAMILY, facts.snapshot_year, str(y1), tuple(turns))


@dataclass(frozen=True)
class _Walk:
    """Turns planned so far: the values answered, the last answer, the tier, and which
    implicit turns name the subject (a pronoun there could mean the answer before)."""

    answered: frozenset[str]
    last: str | None
    tier: int
    named: tuple[bool, ...] = ()


class _Steps:
    """Whether a sequence of (property, year) turns of one subject can follow each other."""

    def __init__(
        self,
        facts: SnapshotFacts,
        templates: Templates,
        subject: str,
        golds: dict[str, dict[int, frozenset[str]]],
    ):
        self.facts, self.templates, self.subject, self.golds = facts, templates, subject, golds

    def walk(self, steps: list[tuple[str, int, bool]], start: _Walk | None = None) -> _Walk | None:
        """The walk after ``steps`` (property, year, implicit), or None where a gold is missing
        or shares a value with an earlier one, or an implicit turn does not depend on its
        scope."""
        walk = start or _Walk(frozenset(), None, 1)
        for pid, year, implicit in steps:
            gold = self.golds[pid].get(year)
            if gold is None or gold & walk.answered:
                return None
            tier, named = walk.tier, walk.named
            if implicit:
                level = sensitivity(self.facts, self.subject, pid, str(year))
                if level == 0:
                    return None
                tier += level == 2
                named += (
                    not clear_pronoun(self.facts, self.templates, self.subject, pid, walk.last),
                )
            last = answer_of(self.facts, self.subject, pid, str(year))
            walk = _Walk(walk.answered | gold, last, tier, named)
        return walk


def _usable(facts: SnapshotFacts, subject: str, pid: str) -> dict[int, frozenset[str]]:
    """The verbalizable gold sets of (subject, pid) by year, from 1950 to the snapshot year."""
    return {
        year: frozenset(gold.qids)
        for year, gold in sorted(facts.year_golds(subject, pid).items())
        if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
    }
