"""Carryover: a second property of the same subject, asked with no subject and no year.

What it tests: turn 1 fixes a year explicitly; turn 2 asks another property of
the same subject (same QID) without naming the subject or a time, so the model
must carry the year of turn 1 over instead of answering for the present.

Rule: for each subject and each property p that has a complement q in
``COMPLEMENTS`` (P6<->P35, P39<->P102, P108<->P463, P54<->P286, P127<->P169,
P131<->P17, P488->P169) held by the same subject:
- dated pair (both have whole-year anchors): a year Y where both have gold is
  drawn from the item's generator; turn 1 asks ``explicit_year`` of p at Y,
  turn 2 asks ``followup`` of q; both golds are the values valid at any time in Y;
- timeless pair (both timeless-only): turn 1 asks ``timeless`` of p, turn 2
  ``followup`` of q; both golds are the timeless values, the scope anchor is
  None (chain anchor ``"timeless"``), and turn 1 counts as explicit (it names
  the subject and states its scope, the present);
- a pair with one property dated and the other timeless is skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import pick
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.wikidata.properties import default_catalog

FAMILY = "carryover"
TIMELESS_ANCHOR = "timeless"

COMPLEMENTS = default_catalog().complements


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    yield from carryover_chains(facts, templates, seed, FAMILY, "followup", timeless=True)


def carryover_chains(
    facts: SnapshotFacts, templates, seed: int, family: str, slot: str, *, timeless: bool
) -> Iterator[Chain]:
    """Chains of ``family`` whose turn 2 asks the complement in ``slot``; timeless pairs
    only when ``timeless``."""
    for subject, pids in facts.pids_by_subject.items():
        name = facts.subject_name(subject)
        if name is None:
            continue
        for pid in pids:
            other = COMPLEMENTS.get(pid)
            if other not in pids or not {pid, other} <= templates.properties.keys():
                continue
            rng = rng_for(seed, family, subject, pid)
            if facts.is_timeless(subject, pid) and facts.is_timeless(subject, other):
                if not timeless:
                    continue
                anchor = None
                question = pick(templates, rng, pid, "timeless", subject=name)
            else:
                years = _common_years(facts, subject, pid, other)
                if not years:
                    continue
                year = rng.choice(years)
                anchor = str(year)
                question = pick(templates, rng, pid, "explicit_year", subject=name, year=year)
            first = facts.turn(question, subject, pid, anchor, explicit=True)
            second = facts.turn(
                pick(templates, rng, other, slot), subject, other, anchor, explicit=False
            )
            if first and second:
                yield Chain(family, facts.snapshot_year, anchor or TIMELESS_ANCHOR, (first, second))


def _common_years(facts: SnapshotFacts, subject: str, pid: str, other: str) -> list[int]:
    """Whole years in which both properties of ``subject`` have a verbalizable gold."""
    first, second = facts.year_golds(subject, pid), facts.year_golds(subject, other)
    return sorted(
        year
        for year in first.keys() & second.keys()
        if facts.verbalizable(first[year].qids) and facts.verbalizable(second[year].qids)
    )
