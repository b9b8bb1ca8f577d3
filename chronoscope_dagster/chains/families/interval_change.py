"""Interval change: did the value differ between two years?

What it tests: a yes/no comparison of two explicit years for one subject and
property, then an entity question at the later year; the model must compare the
two scopes, then answer for the second one.

Rule: for each single-holder property (``functional``: a change of value
presupposes one value at a time) of a nameable subject with whole-year facts,
the candidate spans are y1 < y2 with 1950 <= y1, y2 <= the snapshot
year, 2 to 10 whole years long (both ends included), both ends having a
labelled gold, and the two golds equal or disjoint (a partial overlap, such as
a change during y1, makes "a different value" ambiguous and is left out). The
answer is "yes" iff the value set of y2 differs from that of y1 (endpoints
only; what happened in between does not count). Only pairs where both answers
are possible are used: the item's generator draws the answer (yes or no,
evenly), then a span with that answer. Turn 1 asks ``interval_change``; turn 2
asks the property's ``scope_switch`` at y2, gold the values valid in y2.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import Gold, SnapshotFacts
from chronoscope_dagster.chains.families.common import askable_pairs, pick, span_turn
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for

FAMILY = "interval_change"
FIRST_YEAR = 1950
MIN_YEARS, MAX_YEARS = 2, 10


def spans(facts: SnapshotFacts, years: dict[int, Gold]) -> list[tuple[int, int]]:
    """Spans of 2 to 10 years in 1950..snapshot year whose two ends have a labelled gold."""
    ends = sorted(
        year
        for year, gold in years.items()
        if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
    )
    return [(y1, y2) for y1 in ends for y2 in ends if MIN_YEARS <= y2 - y1 + 1 <= MAX_YEARS]


def changed(years: dict[int, Gold], y1: int, y2: int) -> str | None:
    """ "yes" if the ends' value sets are disjoint, "no" if equal, None if they partly overlap."""
    first, last = set(years[y1].qids), set(years[y2].qids)
    if first == last:
        return "no"
    return None if first & last else "yes"


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        if not facts.single_holder(subject, pid, "change"):
            continue
        years = facts.year_golds(subject, pid)
        options: dict[str, list[tuple[int, int]]] = {"yes": [], "no": []}
        for y1, y2 in spans(facts, years):
            answer = changed(years, y1, y2)
            if answer is not None:
                options[answer].append((y1, y2))
        if not options["yes"] or not options["no"]:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        answer = "yes" if rng.random() < 0.5 else "no"
        y1, y2 = rng.choice(options[answer])
        question = pick(templates, rng, pid, "interval_change", subject=name, year=y1, year2=y2)
        first = span_turn(question, pid, subject, name, (y1, y2), answer, "yes_no")
        second = facts.turn(
            pick(templates, rng, pid, "scope_switch", year=y2),
            subject, pid, str(y2), explicit=True,
        )  # fmt: skip
        if second is not None:
            yield Chain(FAMILY, facts.snapshot_year, first.scope_anchor, (first, second))
