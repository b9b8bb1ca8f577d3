"""Distinct count: how many different values held within windows of years that move?

What it tests: counting the distinct values of one subject and property over
a span of years (every value valid at any time in it), then again as the
window moves; the model must recount for each new window.

Structure (4 or 5 turns; 4 with probability ``SHORT_SHARE``): each explicit
(states its span), count, over a window of years different from every earlier
one; the first asks ``count`` in full, each later one either ``count`` or the
generic ``span_switch`` ("And between 2005 and 2010?"), even odds. Turns 2 on
are scored.

Rule: for each single-holder property (``functional``; an open-ended one has
no complete count) of a nameable subject with whole-year facts, the candidate
windows are y1 < y2 with 1950 <= y1, y2 <= the snapshot year, 2 to 10 whole
years long (both ends included), every year of which has a decided gold, whose
values (the union of the whole-year golds of y1..y2, counted by QID) are all
labelled and number 1 to 15, and whose every day the facts cover (no gap over
31 days, ``chains.evidence``).

No count follows from the conversation: all windows of a chain have one
length L, drawn among the lengths whose windows give at least
``MIN_DISTINCT_COUNTS`` different counts, and each turn's count is drawn
evenly among the counts of length-L windows not yet asked, then a window with
that count: the length tells nothing of the count, and the earlier counts
tell only which counts are possible. A count may repeat the previous one. A
pair without such a length, or whose windows allow fewer than 4 turns, is
refused (``too_short``). The answer is the number of values, as a string.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import Gold, SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    askable_pairs,
    pick,
    pick_generic,
    span_turn,
    year_spans,
)
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "distinct_count"
FIRST_YEAR = 1950
MIN_YEARS, MAX_YEARS = 2, 10
MIN_COUNT, MAX_COUNT = 1, 15
MIN_TURNS = 4
MIN_DISTINCT_COUNTS = 3
SHORT_SHARE = 0.6


def held(years: dict[int, Gold], y1: int, y2: int) -> set[str]:
    """Every value valid at any time from y1 to y2, both included."""
    return {qid for year in range(y1, y2 + 1) if year in years for qid in years[year].qids}


def spans(
    facts: SnapshotFacts, subject: str, pid: str, years: dict[int, Gold]
) -> list[tuple[int, int, int]]:
    """(y1, y2, count) of the spans of 2 to 10 years in 1950..snapshot year, every year
    decided, whose 1 to 15 values are all labelled and whose days are covered."""
    ends = sorted(year for year in years if FIRST_YEAR <= year <= facts.snapshot_year)
    found = []
    for y1, y2 in year_spans(ends, MIN_YEARS, MAX_YEARS):
        if any(year not in years for year in range(y1, y2 + 1)):
            continue
        values = held(years, y1, y2)
        if (
            MIN_COUNT <= len(values) <= MAX_COUNT
            and facts.verbalizable(tuple(values))
            and facts.span_covered(subject, pid, y1, y2, "incomplete_count")
        ):
            found.append((y1, y2, len(values)))
    return found


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        if not facts.single_holder(subject, pid, "count"):
            continue
        candidates = spans(facts, subject, pid, facts.year_golds(subject, pid))
        if not candidates:
            continue
        by_length: dict[int, dict[int, list[tuple[int, int, int]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for window in candidates:
            by_length[window[1] - window[0] + 1][window[2]].append(window)
        lengths = sorted(n for n, counts in by_length.items() if len(counts) >= MIN_DISTINCT_COUNTS)
        if not lengths:
            facts.refuse(subject, pid, None, "too_short")
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        wanted = MIN_TURNS if rng.random() < SHORT_SHARE else MIN_TURNS + 1
        unused = {count: list(found) for count, found in by_length[rng.choice(lengths)].items()}
        windows: list[tuple[int, int, int]] = []
        while len(windows) < wanted:
            counts = sorted(count for count, found in unused.items() if found)
            if not counts:
                break
            found = unused[rng.choice(counts)]
            windows.append(found.pop(rng.randrange(len(found))))
        if len(windows) < MIN_TURNS:
            facts.refuse(subject, pid, None, "too_short")
            continue
        turns = []
        for index, (y1, y2, count) in enumerate(windows):
            question = _question(templates, rng, pid, name, y1, y2, first=index == 0)
            turns.append(span_turn(question, pid, subject, name, (y1, y2), str(count), "count"))
        yield Chain(FAMILY, facts.snapshot_year, turns[0].scope_anchor, tuple(turns))


def _question(
    templates: Templates, rng: random.Random, pid: str, name: str, y1: int, y2: int, *, first: bool
) -> str:
    if first or rng.random() < 0.5:
        return pick(templates, rng, pid, "count", subject=name, year=y1, year2=y2)
    return pick_generic(templates, rng, "span_switch", year=y1, year2=y2)
