"""Interval reasoning: did a value hold at any time within a span of years?

What it tests: a yes/no question over a span of years, not a single year; the
model must know whether a value was valid anywhere in the span, then answer an
entity question at the span's last year.

Rule: for each (subject, property) with whole-year facts and a nameable
subject, the candidate spans are y1 < y2 with 1950 <= y1, y2 <= the snapshot
year, 2 to 10 whole years long (both ends included), both ends having a gold
and the gold of y2 labelled. The values held in a span are the union of the
whole-year golds of y1..y2. A "yes" value is one held in the span; a "no" value
is one the pair held in another year but never in the span, with positive
evidence that it did not hold there (``SnapshotFacts.never_held``: a covered
span of a single-holder property, or the value's own statements all dated and
outside the span). An asked value must
be labelled with a label no other value of the pair shares. Only pairs where
both answers are possible are used: the item's generator draws the answer (yes
or no, evenly), then a span where that answer is possible, then the value. Turn
1 asks ``interval_yes_no`` (answer "yes"/"no", ``asked_qid`` the value); turn 2
asks the property's ``scope_switch`` at y2, gold the values valid in y2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import Gold, SnapshotFacts
from chronoscope_dagster.chains.families.common import askable_pairs, pick, span_turn
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for

FAMILY = "interval_reasoning"
FIRST_YEAR = 1950
MIN_YEARS, MAX_YEARS = 2, 10


def spans(facts: SnapshotFacts, years: dict[int, Gold]) -> list[tuple[int, int]]:
    """Spans of 2 to 10 years in 1950..snapshot year, both ends with a gold, y2's labelled."""
    ends = sorted(year for year in years if FIRST_YEAR <= year <= facts.snapshot_year)
    return [
        (y1, y2)
        for y1 in ends
        for y2 in ends
        if MIN_YEARS <= y2 - y1 + 1 <= MAX_YEARS and facts.verbalizable(years[y2].qids)
    ]


def held(years: dict[int, Gold], y1: int, y2: int) -> set[str]:
    """Every value valid at any time from y1 to y2, both included."""
    return {qid for year in range(y1, y2 + 1) if year in years for qid in years[year].qids}


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        years = facts.year_golds(subject, pid)
        askable = _askable(facts, {qid for gold in years.values() for qid in gold.qids})
        options: dict[str, list[tuple[tuple[int, int], list[str]]]] = {"yes": [], "no": []}
        for span in spans(facts, years):
            inside = held(years, *span)
            for answer, values in (
                ("yes", [qid for qid in askable if qid in inside]),
                (
                    "no",
                    [
                        qid
                        for qid in askable
                        if qid not in inside and facts.never_held(subject, pid, qid, *span)
                    ],
                ),
            ):
                if values:
                    options[answer].append((span, values))
        if not options["yes"] or not options["no"]:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        answer = "yes" if rng.random() < 0.5 else "no"
        (y1, y2), values = rng.choice(options[answer])
        value = rng.choice(values)
        question = pick(
            templates, rng, pid, "interval_yes_no",
            subject=name, value=facts.labels[value].label, year=y1, year2=y2,
        )  # fmt: skip
        first = span_turn(question, pid, subject, name, (y1, y2), answer, "yes_no", value)
        second = facts.turn(
            pick(templates, rng, pid, "scope_switch", year=y2),
            subject, pid, str(y2), explicit=True,
        )  # fmt: skip
        if second is not None:
            yield Chain(FAMILY, facts.snapshot_year, first.scope_anchor, (first, second))


def _askable(facts: SnapshotFacts, qids: set[str]) -> list[str]:
    """The labelled values whose label no other value shares, by QID number."""
    labelled = sorted((qid for qid in qids if qid in facts.labels), key=lambda q: int(q[1:]))
    counts = Counter(facts.labels[qid].label.casefold() for qid in qids if qid in facts.labels)
    return [qid for qid in labelled if counts[facts.labels[qid].label.casefold()] == 1]
