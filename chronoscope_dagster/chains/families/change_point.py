"""Change point: implicit follow-ups under one year, then an explicit override.

What it tests: after several implicit turns have held the first year's scope,
the user names a new year; the model must switch to it, and keep the new
scope for the implicit turn that follows.

Structure (4 or 5 turns):
1. explicit, entity: p at y1;
2. implicit (no subject, no year), entity: q at y1;
3. the override, explicit year (``scope_switch``), entity: p at y2;
4. implicit, entity: q at y2, under the new scope;
5. one time in two, when such a year exists, a second override: p at y3.

Rule: for each (subject, property p) whose property has a complement q
(``common.COMPLEMENTS``; same subject QID), both askable, the candidate pairs are two
whole-year anchors y1 != y2 (1950 to the snapshot year) where p's gold sets
are disjoint, q's gold sets are disjoint (the implicit answer must change
with the override) and q's turns refer cleanly after p's answers
(``common``); the pair is drawn from the item's generator among the best tier
(the most drift-eligible q turns first, ``common``). y3 is a year other than y1 and
y2 whose gold for p is disjoint from y2's. No turn re-asks an earlier one
(implicit phrasings are never repeated). Gold: the values valid at any point
of each turn's year.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    COMPLEMENTS,
    answer_of,
    askable,
    askable_pairs,
    best_tier,
    fresh_followup,
    pick,
    refers_cleanly,
)
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "change_point"
FIRST_YEAR = 1950


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        other = COMPLEMENTS.get(pid)
        if other is None or not askable(facts, templates, subject, other):
            continue
        main = _usable(facts, subject, pid)
        follow = _usable(facts, subject, other)
        clean = {
            year
            for year in main.keys() & follow.keys()
            if refers_cleanly(
                facts, templates, subject, other, answer_of(facts, subject, pid, str(year))
            )
        }
        drifting = {year for year in clean if facts.drifts(subject, other, str(year))}
        pairs = best_tier(
            facts,
            [
                ((y1, y2), 1 + len({y1, y2} & drifting))
                for y1 in sorted(clean)
                for y2 in sorted(clean)
                if y1 != y2 and not main[y1] & main[y2] and not follow[y1] & follow[y2]
            ],
            (subject, pid),
        )
        if not pairs:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        y1, y2 = rng.choice(pairs)
        asked: list[str] = []
        plan = [
            (pick(templates, rng, pid, "explicit_year", subject=name, year=y1), pid, y1, True),
            (fresh_followup(templates, rng, other, asked), other, y1, False),
            (pick(templates, rng, pid, "scope_switch", year=y2), pid, y2, True),
            (fresh_followup(templates, rng, other, asked), other, y2, False),
        ]
        overrides = [y3 for y3 in main if y3 not in (y1, y2) and not main[y3] & main[y2]]
        if overrides and rng.random() < 0.5:
            y3 = rng.choice(overrides)
            plan.append((pick(templates, rng, pid, "scope_switch", year=y3), pid, y3, True))
        turns = [
            facts.turn(question, subject, asked_pid, str(year), explicit=explicit)
            for question, asked_pid, year, explicit in plan
        ]
        if all(turns):
            yield Chain(FAMILY, facts.snapshot_year, str(y1), tuple(turns))


def _usable(facts: SnapshotFacts, subject: str, pid: str) -> dict[int, frozenset[str]]:
    """The verbalizable gold sets of (subject, pid) by year, from 1950 to the snapshot year."""
    return {
        year: frozenset(gold.qids)
        for year, gold in sorted(facts.year_golds(subject, pid).items())
        if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
    }
