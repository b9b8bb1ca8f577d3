"""Scope switch: the same subject and property, asked about a second year.

What it tests: after an explicit year, the user names another year for the same
subject (same QID) and property; the model must answer for the new year, not
repeat the first answer.

Rule: for each (subject, property) with dated facts, two whole-year anchors y1,
y2 (not before 1950, not after the snapshot year) whose gold sets are disjoint,
so the first answer is wrong for the second year. Turn 1 asks ``explicit_year``
at y1; turn 2 asks ``scope_switch`` at y2 (the year is explicit, the subject
implicit). The pair of years and the phrasings are drawn from the item's own
generator. Gold: the values valid at any point of each turn's year.

Structure (2 turns): 1. explicit, entity, year y1; 2. explicit year y2 (the
subject implicit), entity: the scored turn, whose gold shares nothing with
turn 1's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import askable_pairs, pick
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "scope_switch"


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        by_values: dict[frozenset[str], list[int]] = defaultdict(list)
        for year, gold in facts.year_golds(subject, pid).items():
            by_values[frozenset(gold.qids)].append(year)
        pairs = [
            (y1, y2)
            for held, firsts in by_values.items()
            for other, seconds in by_values.items()
            if held.isdisjoint(other)
            for y1 in firsts
            for y2 in seconds
        ]
        if not pairs:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        y1, y2 = rng.choice(sorted(pairs))
        first = facts.turn(
            pick(templates, rng, pid, "explicit_year", subject=name, year=y1),
            subject, pid, str(y1), explicit=True,
        )  # fmt: skip
        second = facts.turn(
            pick(templates, rng, pid, "scope_switch", year=y2),
            subject, pid, str(y2), explicit=True,
        )  # fmt: skip
        if first and second:
            yield Chain(FAMILY, facts.snapshot_year, str(y1), (first, second))
