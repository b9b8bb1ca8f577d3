"""Change point: implicit follow-ups under one year, then an explicit override.

What it tests: after several implicit turns have held the first year's scope,
the user names a new year; the model must switch to it, and keep the new
scope for the implicit turn that follows.

Rule: for each (subject, property p) whose property has a complement q
(``COMPLEMENTS``; same subject QID), two whole-year anchors y1 != y2 (1950 to
the snapshot year) where p's gold sets are disjoint and q has a gold at y1;
the pair is drawn from the item's generator. Turns:
1. ``explicit_year`` of p at y1;
2. an implicit follow-up (``followup`` or ``followup_then``) of q at y1;
3. optionally (one time in two) an implicit follow-up of p again, still at y1;
4. the override: p's ``scope_switch`` naming y2, answered at y2;
5. optionally (one time in two, when q has a gold at y2) an implicit follow-up
   of q, answered at y2.
Chains have 3 to 5 turns; implicit turns hold no year and no subject name, and
no phrasing repeats within a chain. Gold: the values valid at any point of each
turn's year.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import pick
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.wikidata.properties import default_catalog

FAMILY = "change_point"
FIRST_YEAR = 1950
FOLLOWUP_SLOTS = ("followup", "followup_then")
COMPLEMENTS = default_catalog().complements


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, pids in facts.pids_by_subject.items():
        name = facts.subject_name(subject)
        if name is None:
            continue
        for pid in pids:
            other = COMPLEMENTS.get(pid)
            if other is None or not {pid, other} <= templates.properties.keys():
                continue
            main = _usable(facts, subject, pid)
            follow = _usable(facts, subject, other)
            pairs = [
                (y1, y2)
                for y1 in main
                for y2 in main
                if y1 != y2 and y1 in follow and not main[y1] & main[y2]
            ]
            if not pairs:
                continue
            rng = rng_for(seed, FAMILY, subject, pid)
            y1, y2 = rng.choice(sorted(pairs))
            asked: list[str] = []
            plan = [
                (pick(templates, rng, pid, "explicit_year", subject=name, year=y1), pid, y1, True),
                (_followup(templates, rng, other, asked), other, y1, False),
            ]
            if rng.random() < 0.5:
                plan.append((_followup(templates, rng, pid, asked), pid, y1, False))
            plan.append((pick(templates, rng, pid, "scope_switch", year=y2), pid, y2, True))
            if y2 in follow and rng.random() < 0.5:
                plan.append((_followup(templates, rng, other, asked), other, y2, False))
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


def _followup(templates, rng: random.Random, pid: str, asked: list[str]) -> str:
    """An implicit follow-up phrasing of ``pid`` not yet asked in the chain (recorded in ``asked``)."""
    options = [
        templates.render(pid, slot, index)
        for slot in FOLLOWUP_SLOTS
        for index in range(len(templates.phrasings(pid, slot)))
    ]
    question = rng.choice([option for option in options if option not in asked])
    asked.append(question)
    return question
