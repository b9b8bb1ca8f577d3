"""Interval reasoning: did a value hold throughout a span of years?

What it tests: after an explicit anchor question, yes/no questions over spans
of years that move: the paper's family verifies whether a specific fact
remains true throughout a continuous temporal span. The model must know
whether a value held on every day of each span.

Structure (4 or 5 turns): 1. explicit, entity, year Y (the anchor); then 3 or
4 turns (3 with probability ``SHORT_SHARE``), each explicit, yes/no, over a
span of years different from the turn before: the scored turns. A turn about
the same value as the one before may be asked as the generic
``throughout_switch`` ("And throughout the years 2016 to 2020?").

Rule: for each (subject, property) with dated, whole-year facts and a
nameable subject, the candidate spans are y1 < y2 with 1950 <= y1, y2 <= the
snapshot year, 2 to 10 whole years long (both ends included). A value is
asked about only if its label is its own among the pair's values and all its
statements are dated. "yes": the value's statements of known start and end
cover every day of the span. "no": the value held on some day of the span but
not on another, decided only from complete facts: a single-holder property
(``functional``) whose values cover the span (``SnapshotFacts.covers_years``),
or, for a property of several values at once, the value's own statements, all
dated, leaving a day of the span uncovered (a statement that ended at an
unknown date may hold on any day after its start). Anything else is not
asked: a span the value never touches would ask trivia ("throughout the
1950s?" of a president elected in 2009), not its term.

No answer follows from the conversation: a value is not asked again over a
span that overlaps one it was asked over; for a single-holder property, a
value other than the anchor's answer is not asked over a span holding Y (the
anchor says another value held then), nor a value other than one answered
"yes" over a span overlapping that one. Within these, the answers are drawn
evenly and do not follow from what a reader sees without the facts: the item's
generator draws the answer of every turn (yes or no, even odds), then realizes
them turn by turn, each from a cell drawn among those where both answers
remain (cells group the options by what a reader sees: the value is the
anchor's answer or not; the span's length; whether it holds Y; whether it
overlaps the previous turn's span). A sequence that cannot be realized is cut
to its longest realizable prefix of at least 3 turns, and is kept only where
the opposite answers are realizable too (by a second generator): otherwise
the sequences easier to realize (more "yes") would survive more often. A pair
where no prefix is kept is refused (``too_short``). Yes/no turns ask ``interval_yes_no`` (answer
"yes"/"no", ``asked_qid`` the value).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from chronoscope_dagster.chains.evidence import FOREVER, anchor_span, longest_gap, merge
from chronoscope_dagster.chains.facts import SnapshotFacts
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


@dataclass(frozen=True)
class Option:
    """A yes/no question: the span (y1, y2), the asked value and the answer."""

    span: tuple[int, int]
    value: str
    answer: str


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    spans = _spans(facts.snapshot_year)
    for subject, name, pid in askable_pairs(facts, templates):
        if facts.is_timeless(subject, pid):
            continue
        years = facts.year_golds(subject, pid)
        anchors = sorted(
            year
            for year, gold in years.items()
            if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
        )
        options = _options(facts, subject, pid, spans)
        if not anchors or {o.answer for o in options} != {"yes", "no"}:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        year = rng.choice(anchors)
        first = facts.turn(
            pick(templates, rng, pid, "explicit_year", subject=name, year=year),
            subject, pid, str(year), explicit=True,
        )  # fmt: skip
        if first is None:
            continue
        wanted = MIN_SPAN_TURNS if rng.random() < SHORT_SHARE else MIN_SPAN_TURNS + 1
        answers = [rng.choice(("yes", "no")) for _ in range(wanted)]
        draws = (rng_for(seed, FAMILY, subject, pid, "a"), rng_for(seed, FAMILY, subject, pid, "b"))
        context = _Context(year, first.canonical_qid, pid in facts.functional)
        asked = _symmetric(draws, options, answers, context)
        if asked is None:
            facts.refuse(subject, pid, None, "too_short")
            continue
        turns = [first]
        for index, drawn in enumerate(asked):
            (y1, y2), value = drawn.span, drawn.value
            label = facts.labels[value].label
            if index and asked[index - 1].value == value and rng.random() < 0.5:
                question = pick_generic(templates, rng, "throughout_switch", year=y1, year2=y2)
            else:
                question = pick(
                    templates, rng, pid, "interval_yes_no",
                    subject=name, value=label, year=y1, year2=y2,
                )  # fmt: skip
            turns.append(
                span_turn(
                    question, pid, subject, name, drawn.span, drawn.answer, "yes_no",
                    (value, label),
                )
            )  # fmt: skip
        yield Chain(FAMILY, facts.snapshot_year, first.scope_anchor, tuple(turns))


def _spans(snapshot_year: int) -> list[tuple[int, int, int, int]]:
    """Every candidate span as (y1, y2, first day, last day), by y1 then y2."""
    ends = list(range(FIRST_YEAR, snapshot_year + 1))
    return [
        (y1, y2, *anchor_span(f"{y1}-{y2}", snapshot_year))
        for y1, y2 in year_spans(ends, MIN_YEARS, MAX_YEARS)
    ]


def _options(
    facts: SnapshotFacts, subject: str, pid: str, spans: list[tuple[int, int, int, int]]
) -> list[Option]:
    """Every (span, value) whose answer the facts decide, in span then QID order."""
    key = (subject, pid)
    spans_of = facts.value_spans.get(key, {})
    undated = facts.timeless_values.get(key, set()) | facts.unstarted_values.get(key, set())
    values = [
        value
        for value in _distinctly_labelled(facts, set(spans_of))
        if value not in undated and spans_of[value]
    ]
    held = {value: merge(spans_of[value]) for value in values}
    open_from = {} if pid in facts.functional else facts.open_from.get(key, {})
    possible = {
        value: merge((*held[value], (open_from[value], FOREVER))) if value in open_from else days
        for value, days in held.items()
    }
    if not values:
        return []
    first_day = min(held[v][0][0] for v in values)
    last_day = max(held[v][-1][1] for v in values)
    found = []
    for y1, y2, start, end in spans:
        if end < first_day or start > last_day:
            continue
        touching = [v for v in values if held[v][0][0] <= end and held[v][-1][1] >= start]
        if not touching:
            continue
        decided = pid not in facts.functional or facts.covers_years(subject, pid, y1, y2)
        for value in touching:
            gap = longest_gap(held[value], start, end)
            if gap == 0:
                found.append(Option((y1, y2), value, "yes"))
            elif gap <= end - start and decided and longest_gap(possible[value], start, end):
                found.append(Option((y1, y2), value, "no"))
    return found


def _distinctly_labelled(facts: SnapshotFacts, qids: set[str]) -> list[str]:
    """The labelled values whose label no other value shares, by QID number."""
    labelled = sorted((qid for qid in qids if qid in facts.labels), key=lambda q: int(q[1:]))
    counts = Counter(facts.labels[qid].label.casefold() for qid in labelled)
    return [qid for qid in labelled if counts[facts.labels[qid].label.casefold()] == 1]


@dataclass(frozen=True)
class _Context:
    """What the anchor turn tells: its year, its answer, and whether the property has one
    value at a time."""

    year: int
    anchor_value: str | None
    single: bool


class _Options:
    """The options a turn may ask, as columns: each span's years, the value (a number per
    value), the answer, and what a reader sees of it without the facts but for the turn before
    (``seen``: whether the value is the anchor's answer, the span's length and whether it holds
    the anchor's year, as one number ordered as that tuple). Left out: another value of a
    single-holder property over a span holding the anchor's year, which the anchor answers."""

    def __init__(self, options: list[Option], context: _Context) -> None:
        self.options = [
            option
            for option in options
            if not (
                context.single
                and option.value != context.anchor_value
                and option.span[0] <= context.year <= option.span[1]
            )
        ]
        self.single = context.single
        self.first = np.array([o.span[0] for o in self.options], dtype=np.int64)
        self.last = np.array([o.span[1] for o in self.options], dtype=np.int64)
        numbers: dict[str, int] = {}
        self.value = np.array([numbers.setdefault(o.value, len(numbers)) for o in self.options])
        self.yes = np.array([o.answer == "yes" for o in self.options], dtype=bool)
        anchor = np.array([o.value == context.anchor_value for o in self.options], dtype=bool)
        holds = (self.first <= context.year) & (context.year <= self.last)
        self.seen = ((anchor * (MAX_YEARS + 1) + self.last - self.first) * 2 + holds).astype(
            np.int64
        )

    def overlapping(self, index: int) -> np.ndarray:
        return (self.first <= self.last[index]) & (self.first[index] <= self.last)


def _realize(rng: random.Random, table: _Options, answers: list[str]) -> list[Option] | None:
    """Options answering ``answers`` in turn, each from a cell drawn among those where both
    answers remain (a cell: ``seen`` and whether the span overlaps the turn before's, so the
    cell does not tell the answer), or None where a turn has none. An option the turns asked
    answer is left out: the same value over an overlapping span, or, for a single-holder
    property, any value over a span overlapping one answered "yes"; so is the span just asked."""
    asked: list[int] = []
    for answer in answers:
        free = np.ones(len(table.options), dtype=bool)
        follows = np.zeros(len(table.options), dtype=bool)
        if asked:
            last = asked[-1]
            free &= (table.first != table.first[last]) | (table.last != table.last[last])
            follows = table.overlapping(last)
            for index in asked:
                answered = table.overlapping(index)
                if not (table.single and table.yes[index]):
                    answered &= table.value == table.value[index]
                free &= ~answered
        cell = table.seen * 2 + follows
        both = np.intersect1d(cell[free & table.yes], cell[free & ~table.yes])
        if not both.size:
            return None
        drawn = rng.choice(both.tolist())
        wanted = table.yes if answer == "yes" else ~table.yes
        asked.append(rng.choice(np.flatnonzero(free & wanted & (cell == drawn)).tolist()))
    return [table.options[index] for index in asked]


def _symmetric(
    draws: tuple[random.Random, random.Random],
    options: list[Option],
    answers: list[str],
    context: _Context,
) -> list[Option] | None:
    """The realization of ``answers`` (the longest of its prefixes of at least
    ``MIN_SPAN_TURNS`` answers) by the first generator, kept only where the second also
    realizes the opposite answers. Some answer sequences are easier to realize than others;
    requiring both makes a chain's acceptance the same for a sequence and its opposite, so
    the answers that survive stay even."""
    table = _Options(options, context)
    for length in range(len(answers), MIN_SPAN_TURNS - 1, -1):
        wanted = answers[:length]
        opposite = ["no" if answer == "yes" else "yes" for answer in wanted]
        first, second = (random.Random(draw.random()) for draw in draws)
        found = _realize(first, table, wanted)
        if found is not None and _realize(second, table, opposite) is not None:
            return found
    return None
