"""Distinct count: how many different values held within a span of years?

What it tests: counting the distinct values of one subject and property over a
span of years (every value valid at any time in it), then an entity question at
the span's last year.

Rule: for each single-holder property (``functional``; an open-ended one has
no complete count) of a nameable subject with whole-year facts, the candidate
spans are y1 < y2 with 1950 <= y1, y2 <= the snapshot
year, 2 to 10 whole years long (both ends included), both ends having a gold,
whose values (the union of the whole-year golds of y1..y2, counted by QID) are
all labelled and number 2 to 15, and whose every day the facts cover (no gap
over 31 days, ``chains.evidence``). The item's generator draws one candidate span.
Turn 1 asks ``count`` (answer the number of values, as a string); turn 2 asks
the property's ``scope_switch`` at y2, gold the values valid in y2.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import Gold, SnapshotFacts
from chronoscope_dagster.chains.families.common import askable_pairs, pick, span_turn
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for

FAMILY = "distinct_count"
FIRST_YEAR = 1950
MIN_YEARS, MAX_YEARS = 2, 10
MIN_COUNT, MAX_COUNT = 2, 15


def held(years: dict[int, Gold], y1: int, y2: int) -> set[str]:
    """Every value valid at any time from y1 to y2, both included."""
    return {qid for year in range(y1, y2 + 1) if year in years for qid in years[year].qids}


def spans(
    facts: SnapshotFacts, subject: str, pid: str, years: dict[int, Gold]
) -> list[tuple[int, int, int]]:
    """(y1, y2, count) of the spans of 2 to 10 years in 1950..snapshot year, both ends with a
    gold, whose 2 to 15 values are all labelled and whose days are covered."""
    ends = sorted(year for year in years if FIRST_YEAR <= year <= facts.snapshot_year)
    found = []
    for y1 in ends:
        for y2 in ends:
            if MIN_YEARS <= y2 - y1 + 1 <= MAX_YEARS:
                values = held(years, y1, y2)
                if (
                    MIN_COUNT <= len(values) <= MAX_COUNT
                    and facts.verbalizable(tuple(values))
                    and facts.span_covered(subject, pid, y1, y2, "incomplete_count")
                ):
                    found.append((y1, y2, len(values)))
    return found


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        if not facts.single_holder(subject, pid, "count"):
            continue
        candidates = spans(facts, subject, pid, facts.year_golds(subject, pid))
        if not candidates:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        y1, y2, count = rng.choice(candidates)
        question = pick(templates, rng, pid, "count", subject=name, year=y1, year2=y2)
        first = span_turn(question, pid, subject, name, (y1, y2), str(count), "count")
        second = facts.turn(
            pick(templates, rng, pid, "scope_switch", year=y2),
            subject, pid, str(y2), explicit=True,
        )  # fmt: skip
        if second is not None:
            yield Chain(FAMILY, facts.snapshot_year, first.scope_anchor, (first, second))
