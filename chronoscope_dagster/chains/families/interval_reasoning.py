"""Interval reasoning: did a value hold at any time within a span of years?

What it tests: after an explicit anchor question, yes/no questions over spans
of years that move, not single years; the model must know whether a value was
valid anywhere in each span.

Structure (4 or 5 turns): 1. explicit, entity, year Y (the anchor); then 3 or
4 turns (3 with probability ``SHORT_SHARE``), each explicit, yes/no, over a
span of years different from the turn before: the scored turns. A turn about
the same value as the one before may be asked as the generic ``span_switch``
("And between 2016 and 2020?").

Rule: for each (subject, property) with whole-year facts and a nameable
subject, the candidate spans are y1 < y2 with 1950 <= y1, y2 <= the snapshot
year, 2 to 10 whole years long (both ends included), both ends having a gold
and the gold of y2 labelled. The values held in a span are the union of the
whole-year golds of y1..y2. A "yes" value is one held in the span; a "no" value
is one the pair held in another year but never in the span, with positive
evidence that it did not hold there (``SnapshotFacts.never_held``: a covered
span of a single-holder property, or the value's own statements all dated and
outside the span). An asked value must be labelled with a label no other value
of the pair shares. Only pairs where both answers are possible are used. The
anchor Y is drawn among the labelled years; for each yes/no turn the item's
generator draws the answer (yes or no, evenly, where unused options of both
remain), then an unused (span, value) with that answer whose span differs from
the previous turn's. A pair with fewer than 3 options is refused
(``too_short``). Yes/no turns ask ``interval_yes_no`` (answer "yes"/"no",
``asked_qid`` the value).
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from collections import Counter
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

FAMILY = "interval_reasoning"
FIRST_YEAR = 1950
MIN_YEARS, MAX_YEARS = 2, 10
MIN_SPAN_TURNS = 3
SHORT_SHARE = 0.6


def spans(facts: SnapshotFacts, years: dict[int, Gold]) -> list[tuple[int, int]]:
    """Spans of 2 to 10 years in 1950..snapshot year, both ends with a gold, y2's labelled."""
    ends = sorted(year for year in years if FIRST_YEAR <= year <= facts.snapshot_year)
    return [
        (y1, y2)
        for y1, y2 in year_spans(ends, MIN_YEARS, MAX_YEARS)
        if facts.verbalizable(years[y2].qids)
    ]


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        years = facts.year_golds(subject, pid)
        askable = _askable(facts, {qid for gold in years.values() for qid in gold.qids})
        options: dict[str, list[Option]] = {"yes": [], "no": []}
        for span, inside in _held_in_spans(years, spans(facts, years)):
            covered = facts.covers_years(subject, pid, *span)
            for qid in askable:
                if qid in inside:
                    options["yes"].append((span, qid))
                elif covered or facts.never_held(subject, pid, qid, *span):
                    options["no"].append((span, qid))
        if not options["yes"] or not options["no"]:
            continue
        if len(options["yes"]) + len(options["no"]) < MIN_SPAN_TURNS:
            facts.refuse(subject, pid, None, "too_short")
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        anchors = sorted(
            year
            for year, gold in years.items()
            if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
        )
        year = rng.choice(anchors)
        first = facts.turn(
            pick(templates, rng, pid, "explicit_year", subject=name, year=year),
            subject, pid, str(year), explicit=True,
        )  # fmt: skip
        if first is None:
            continue
        turns = [first]
        wanted = MIN_SPAN_TURNS if rng.random() < SHORT_SHARE else MIN_SPAN_TURNS + 1
        previous: Option | None = None
        for _ in range(wanted):
            drawn = _draw(rng, options, previous)
            if drawn is None:
                break
            answer, ((y1, y2), value) = drawn
            if previous is not None and previous[1] == value and rng.random() < 0.5:
                question = pick_generic(templates, rng, "span_switch", year=y1, year2=y2)
            else:
                question = pick(
                    templates, rng, pid, "interval_yes_no",
                    subject=name, value=facts.labels[value].label, year=y1, year2=y2,
                )  # fmt: skip
            asked = (value, facts.labels[value].label)
            turns.append(span_turn(question, pid, subject, name, (y1, y2), answer, "yes_no", asked))
            previous = ((y1, y2), value)
        if len(turns) > MIN_SPAN_TURNS:
            yield Chain(FAMILY, facts.snapshot_year, first.scope_anchor, tuple(turns))


Option = tuple[tuple[int, int], str]
"""A yes/no question: the span (y1, y2) and the asked value."""


def _held_in_spans(
    years: dict[int, Gold], spans: list[tuple[int, int]]
) -> Iterator[tuple[tuple[int, int], set[str]]]:
    """Each span (sorted by y1, then y2) with the values ``held`` in it, each y1's spans
    grown year by year; the set is reused, so read it before the next span."""
    start, end, inside = None, 0, set()
    for y1, y2 in spans:
        if y1 != start:
            start, end, inside = y1, y1 - 1, set()
        for year in range(end + 1, y2 + 1):
            if year in years:
                inside.update(years[year].qids)
        end = y2
        yield (y1, y2), inside


def _draw(
    rng: random.Random, options: dict[str, list[Option]], previous: Option | None
) -> tuple[str, Option] | None:
    """An answer (even odds where both remain), then an unused option with it whose span
    differs from the previous question's; the option is used up. Options are in span order,
    so those of the previous span are one block, skipped by index rather than copied."""
    blocks = {answer: _span_block(found, previous) for answer, found in options.items()}
    answers = [
        answer
        for answer in ("yes", "no")
        if len(options[answer]) > blocks[answer][1] - blocks[answer][0]
    ]
    if not answers:
        return None
    answer = rng.choice(answers)
    found, (low, high) = options[answer], blocks[answer]
    index = rng.choice(range(len(found) - (high - low)))
    return answer, found.pop(index if index < low else index + high - low)


def _span_block(found: list[Option], previous: Option | None) -> tuple[int, int]:
    """Where the options of the previous question's span lie in ``found``."""
    if previous is None:
        return 0, 0
    span = previous[0]
    return (
        bisect_left(found, span, key=_span_of),
        bisect_right(found, span, key=_span_of),
    )


def _span_of(option: Option) -> tuple[int, int]:
    return option[0]


def _askable(facts: SnapshotFacts, qids: set[str]) -> list[str]:
    """The labelled values whose label no other value shares, by QID number."""
    labelled = sorted((qid for qid in qids if qid in facts.labels), key=lambda q: int(q[1:]))
    counts = Counter(facts.labels[qid].label.casefold() for qid in qids if qid in facts.labels)
    return [qid for qid in labelled if counts[facts.labels[qid].label.casefold()] == 1]
