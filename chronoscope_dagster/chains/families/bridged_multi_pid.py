"""Bridged multi-pid: a property of the previous answer, under the first turn's year.

What it tests: composing properties under a fixed time scope. The user asks
about subject A in year Y, then about the entity just given as the answer
("who was its CEO at the time?"); the model must resolve the bridge entity and
keep year Y.

Rule: for each (subject A, property p1) of ``BRIDGES``, a whole-year anchor Y
(1950 to the snapshot year) where A's gold for p1 is exactly one value M (so
the bridge is unambiguous) and some bridge property p2 of p1 has a gold for
(M, p2) at Y that is disjoint from the entities already in the chain (A, M).
Y and p2 are drawn from the item's generator. Turn 1 asks ``explicit_year`` of
p1 for A at Y; turn 2 asks p2's ``about_previous`` (implicit: no year, no
name) about M at Y. When turn 2's gold is again a single value N with a bridge
p3 of p2 whose gold at Y avoids A, M and N, a third turn asks p3 of N at Y one
time in two. The bridge is joined by QID (the single gold value), never by
label. Every gold is the truth of its (entity, property) at Y; a timeless fact
holds at every year, and its turn is recorded with no anchor.

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
from chronoscope_dagster.chains.families.common import pick
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.rng import rng_for

FAMILY = "bridged_multi_pid"
FIRST_YEAR = 1950
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


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, pids in facts.pids_by_subject.items():
        name = facts.subject_name(subject)
        if name is None:
            continue
        for pid in pids:
            if pid not in BRIDGES:
                continue
            options = {
                year: bridges
                for year, gold in sorted(facts.year_golds(subject, pid).items())
                if FIRST_YEAR <= year <= facts.snapshot_year
                and len(gold.qids) == 1
                and facts.verbalizable(gold.qids)
                and (bridges := _bridges(facts, gold.canonical, pid, year, {subject}))
            }
            if not options:
                continue
            rng = rng_for(seed, FAMILY, subject, pid)
            year = rng.choice(sorted(options))
            first = facts.turn(
                pick(templates, rng, pid, "explicit_year", subject=name, year=year),
                subject, pid, str(year), explicit=True,
            )  # fmt: skip
            if first is None:
                continue
            second = _hop(facts, templates, rng, first, rng.choice(options[year]), year)
            if second is None:
                continue
            turns = [first, second]
            onward = (
                _bridges(facts, second.gold_qids[0], second.pid, year, {subject, *first.gold_qids})
                if len(second.gold_qids) == 1
                else []
            )
            if onward and rng.random() < 0.5:
                third = _hop(facts, templates, rng, second, rng.choice(onward), year)
                turns += [third] if third else []
            yield Chain(FAMILY, facts.snapshot_year, str(year), tuple(turns))


def _bridges(facts: SnapshotFacts, entity: str, pid: str, year: int, seen: set[str]) -> list[str]:
    """The bridge properties of ``pid`` with a verbalizable gold for ``entity`` at ``year``
    that names neither ``entity`` nor an entity already in ``seen``."""
    return [
        bridged
        for bridged in BRIDGES.get(pid, ())
        if (gold := facts.gold(entity, bridged, str(year)))
        and facts.subject_name(entity) is not None
        and facts.verbalizable(gold.qids)
        and not (seen | {entity}) & set(gold.qids)
    ]


def _hop(
    facts: SnapshotFacts, templates, rng: random.Random, previous: Turn, pid: str, year: int
) -> Turn | None:
    """The implicit turn asking ``pid`` of the previous turn's single answer at ``year``
    (a timeless fact is recorded with no anchor: it holds at every year)."""
    entity = previous.gold_qids[0]
    anchor = None if facts.is_timeless(entity, pid) else str(year)
    return facts.turn(
        pick(templates, rng, pid, "about_previous"), entity, pid, anchor, explicit=False
    )
