"""Interval change: did the value differ between two years, and what was it then?

What it tests: a yes/no comparison of two explicit years, then updates to a
new year and implicit follow-ups under it; the model must compare scopes,
answer for the updated year, and keep it for the follow-up.

Structure (4 to 6 turns):
1. explicit, yes/no: did p differ in y1 from y0 (span y0..y1)?
2. explicit update (``scope_switch``), entity: p at y1;
3. implicit (no subject, no year), entity: another property r at y1;
4. explicit, yes/no: did p differ in y2 from y1 (span y1..y2)? (scored)
5. where turn 4 is "yes", explicit update, entity: p at y2 (after a "no" its
   gold would be turn 2's: the conversation would answer it);
6. after turn 5, with probability 1 - ``SHORT_SHARE``, implicit, entity: r at
   y2, whose gold differs from r's at y1 and depends on the year.
No entity turn's gold shares a value with an earlier entity turn's.

Rule: for each single-holder property p (``functional``: a change of value
presupposes one value at a time) of a nameable subject with whole-year facts,
the candidate spans are y < y' with 1950 <= y, y' <= the snapshot year, 2 to
10 whole years long (both ends included), both ends having a labelled gold,
and the two golds equal or disjoint (a partial overlap, such as a change
during y, makes "a different value" ambiguous and is left out). The answer is
"yes" iff the value set of y' differs from that of y (endpoints only; what
happened in between does not count). Candidates are the years y0 < y1 < y2
with both spans usable and an r for y1: another askable property of the
subject whose gold at y1 is verbalizable, shares nothing with p's, depends on
the year and refers cleanly after p's answer (``common``); only pairs where
turn 4 can be answered either way are used. The item's generator draws a cell (the length
buckets of turn 4's and turn 1's spans: 2-3, 4-6 or 7-10 years) among those
where all four pairs of answers are possible, then both answers (yes or no,
evenly and independently), so that neither a span's length nor the other
answer tells one; then the years among the best tier (r drift-eligible at
y1, ``common``), then r.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import Gold, SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    askable,
    askable_pairs,
    best_tier,
    fresh_followup,
    pick,
    refers_cleanly,
    sensitivity,
    span_turn,
    year_spans,
)
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "interval_change"
FIRST_YEAR = 1950
MIN_YEARS, MAX_YEARS = 2, 10
SHORT_SHARE = 0.6
LENGTH_BUCKETS = ((2, 3), (4, 6), (7, 10))


def spans(facts: SnapshotFacts, years: dict[int, Gold]) -> list[tuple[int, int]]:
    """Spans of 2 to 10 years in 1950..snapshot year whose two ends have a labelled gold."""
    ends = sorted(
        year
        for year, gold in years.items()
        if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
    )
    return year_spans(ends, MIN_YEARS, MAX_YEARS)


def changed(years: dict[int, Gold], y1: int, y2: int) -> str | None:
    """ "yes" if the ends' value sets are disjoint, "no" if equal, None if they partly overlap."""
    first, last = set(years[y1].qids), set(years[y2].qids)
    if first == last:
        return "no"
    return None if first & last else "yes"


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        if not facts.single_holder(subject, pid, "change"):
            continue
        years = facts.year_golds(subject, pid)
        answers = {
            span: answer for span in spans(facts, years) if (answer := changed(years, *span))
        }
        starts = {y1 for y1, _ in answers}
        companions = {
            y1: found for y1 in starts if (found := _companions(facts, templates, subject, pid, y1))
        }
        onward: dict[int, list[int]] = defaultdict(list)
        for start, y2 in answers:
            onward[start].append(y2)
        best = {y1: max(found for _, found in found_at) for y1, found_at in companions.items()}
        tiered = [
            ((y0, y1, y2), best[y1])
            for (y0, y1) in answers
            if y1 in companions
            for y2 in onward[y1]
        ]
        rng = rng_for(seed, FAMILY, subject, pid)
        tiered = _balanced(rng, tiered, answers)
        if not tiered:
            continue
        triples = best_tier(facts, tiered, (subject, pid))
        y0, y1, y2 = rng.choice(triples)
        other = rng.choice([r for r, found in companions[y1] if found == best[y1]])
        asked: list[str] = []
        plan = [
            (pick(templates, rng, pid, "scope_switch", year=y1), pid, y1, True),
            (fresh_followup(templates, rng, other, asked), other, y1, False),
        ]
        first = span_turn(
            pick(templates, rng, pid, "interval_change", subject=name, year=y0, year2=y1),
            pid, subject, name, (y0, y1), answers[(y0, y1)], "yes_no",
        )  # fmt: skip
        second = span_turn(
            pick(templates, rng, pid, "interval_change", subject=name, year=y1, year2=y2),
            pid, subject, name, (y1, y2), answers[(y1, y2)], "yes_no",
        )  # fmt: skip
        entity_turns = [
            facts.turn(question, subject, asked_pid, str(year), explicit=explicit)
            for question, asked_pid, year, explicit in plan
        ]
        if not all(entity_turns):
            continue
        turns = [first, *entity_turns, second]
        answered = {qid for turn in entity_turns if turn for qid in turn.gold_qids}
        update = facts.turn(
            pick(templates, rng, pid, "scope_switch", year=y2), subject, pid, str(y2), explicit=True
        )
        if answers[(y1, y2)] == "yes" and update and not answered & set(update.gold_qids):
            turns.append(update)
            answered.update(update.gold_qids)
            if rng.random() >= SHORT_SHARE and _follows(
                facts, templates, subject, pid, other, y1, y2
            ):
                last = facts.turn(
                    fresh_followup(templates, rng, other, asked),
                    subject, other, str(y2), explicit=False,
                )  # fmt: skip
                if last and not answered & set(last.gold_qids):
                    turns.append(last)
        yield Chain(FAMILY, facts.snapshot_year, first.scope_anchor, tuple(turns))


def _balanced(
    rng: random.Random,
    tiered: list[tuple[tuple[int, int, int], int]],
    answers: dict[tuple[int, int], str],
) -> list[tuple[tuple[int, int, int], int]]:
    """The triples of a drawn cell (the length buckets of turn 4's and turn 1's spans) and
    drawn answers of both, the cell among those where all four pairs of answers are
    possible, each answer evenly: neither a span's length nor the other answer tells one."""
    cells: dict[tuple[int, int], set[tuple[str, str]]] = defaultdict(set)
    for triple, _ in tiered:
        cells[_cell(triple)].add((answers[triple[1:]], answers[triple[:2]]))
    eligible = sorted(cell for cell, found in cells.items() if len(found) == 4)
    if not eligible:
        return []
    cell = rng.choice(eligible)
    wanted = (rng.choice(("no", "yes")), rng.choice(("no", "yes")))
    return [
        (triple, found)
        for triple, found in tiered
        if _cell(triple) == cell and (answers[triple[1:]], answers[triple[:2]]) == wanted
    ]


def _cell(triple: tuple[int, int, int]) -> tuple[int, int]:
    return _bucket(triple[1:]), _bucket(triple[:2])


def _bucket(span: tuple[int, int]) -> int:
    length = span[1] - span[0] + 1
    return next(i for i, (low, high) in enumerate(LENGTH_BUCKETS) if low <= length <= high)


def _companions(
    facts: SnapshotFacts, templates: Templates, subject: str, pid: str, year: int
) -> list[tuple[str, int]]:
    """The properties r an implicit turn may ask at ``year`` after p's answer, with their tier."""
    anchor = str(year)
    held = facts.gold(subject, pid, anchor)
    found = []
    for other in facts.pids_by_subject.get(subject, ()):
        gold = facts.gold(subject, other, anchor)
        if (
            other == pid
            or gold is None
            or held is None
            or not facts.verbalizable(gold.qids)
            or set(gold.qids) & set(held.qids)
            or not askable(facts, templates, subject, other)
            or not refers_cleanly(facts, templates, subject, other, held.canonical)
        ):
            continue
        level = sensitivity(facts, subject, other, anchor)
        if level:
            found.append((other, level))
    return found


def _follows(
    facts: SnapshotFacts, templates: Templates, subject: str, pid: str, other: str, y1: int, y2: int
) -> bool:
    """Whether r can be asked again, implicitly, at y2: a labelled gold unlike r's at y1 and
    p's at y2 that depends on the year (``common.sensitivity``: not today's value), and a
    clean reference after p's answer at y2."""
    gold, before, held = (
        facts.gold(subject, other, str(y2)),
        facts.gold(subject, other, str(y1)),
        facts.gold(subject, pid, str(y2)),
    )
    return (
        gold is not None
        and before is not None
        and held is not None
        and facts.verbalizable(gold.qids)
        and set(gold.qids) != set(before.qids)
        and not set(gold.qids) & set(held.qids)
        and sensitivity(facts, subject, other, str(y2)) > 0
        and refers_cleanly(facts, templates, subject, other, held.canonical)
    )
