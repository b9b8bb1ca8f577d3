"""Carryover: a second property of the same subject, asked with no subject and no year.

What it tests: turn 1 fixes a year explicitly; turn 2 asks another property of
the same subject (same QID) without naming the subject or a time, so the model
must carry the year of turn 1 over instead of answering for the present.

Structure (2 turns): 1. explicit, entity, year Y; 2. implicit (no subject, no
year), entity, year Y: the scored turn.

Rule: for each subject and each property p that has a complement q in
``COMPLEMENTS`` (P6<->P35, P39<->P102, P108<->P463, P54<->P286, P127<->P169,
P131<->P17, P488->P169) held by the same subject, the candidate years Y are
those where both have a verbalizable gold and q's gold depends on the year
(``common``: scope-sensitive, preferably drift-eligible, whose tier decides),
and turn 2 can only refer to the subject (``common.refers_cleanly``: turn 1's
answer is not of the subject's kind). Y is drawn from the item's generator
among the best tier. Turn 1 asks ``explicit_year`` of p at Y, turn 2
``followup`` of q; both golds are the values valid at any time in Y. Timeless
pairs are not asked: their follow-up does not depend on the year.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    answer_of,
    askable,
    best_tier,
    pick,
    refers_cleanly,
    sensitivity,
)
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.wikidata.properties import default_catalog

FAMILY = "carryover"

COMPLEMENTS = default_catalog().complements


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    yield from carryover_chains(facts, templates, seed, FAMILY, "followup")


def carryover_chains(
    facts: SnapshotFacts, templates, seed: int, family: str, slot: str
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
