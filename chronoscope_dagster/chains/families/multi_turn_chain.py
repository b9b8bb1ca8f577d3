"""Multi-turn chain: several properties of one subject under one implicit year.

What it tests: turn 1 fixes a year explicitly; every later turn asks another
property of the same subject (same QID) with neither subject nor year, so the
model must keep the year of turn 1 across the whole chain.

Structure (3 to 6 turns): 1. explicit, entity, year Y; then each turn
implicit (no subject, no year), entity, another property at Y: the scored
turns.

Rule: for each subject, its whole-year anchors are visited in an order drawn
from the item's generator; at each year Y its askable dated properties are
shuffled, the least scope-sensitive moved first to open the chain (turn 1 is
not scored) and the others ordered most scope-sensitive first, and taken
greedily: a later one is kept only when its gold in Y shares no value with
the golds already kept (no answer is correct for two turns, none can be
copied from the conversation). A later turn whose pronoun could also mean the
answer before it (``common.clear_pronoun``) names the subject instead ("And
for Norway, who was the head of government at the time?"); its year stays
implicit. A first pass keeps only
drift-eligible follow-ups (today's value is wrong at Y); the first year that
keeps at least ``MIN_TURNS`` turns is used, else a second pass accepts any
scope-sensitive follow-up (its gold is not today's value, or, with none today,
shares nothing with the latest year's). A follow-up whose gold does not depend on the
year (an instance of, a membership that still holds) is never asked: it could
be answered without the scope. The length is drawn uniformly between
``MIN_TURNS`` and ``min(MAX_TURNS, kept)``: the paper's chains run from 3 to 6
turns. Turn 1 asks ``explicit_year`` of
the first property at Y; each later turn asks ``followup`` or, with
probability one half, ``followup_then``; no question repeats. Every gold is
the values valid at any time in Y.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import (
    askable,
    clear_pronoun,
    pick,
    sensitivity,
)
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "multi_turn_chain"
MIN_TURNS = 3
MAX_TURNS = 6
LEVELS = (2, 1)


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, pids in facts.root_subjects():
        name = facts.subject_name(subject)
        if name is None:
            continue
        by_year: dict[int, list[str]] = {}
        for pid in (pid for pid in pids if askable(facts, templates, subject, pid)):
            for year in sorted(facts.year_golds(subject, pid)):
                by_year.setdefault(year, []).append(pid)
        years = sorted(year for year, held in by_year.items() if len(held) >= MIN_TURNS)
        if not years:
            continue
        rng = rng_for(seed, FAMILY, subject)
        rng.shuffle(years)
        chain = _first_chain(facts, templates, rng, subject, name, years, by_year)
        if chain is None:
            facts.refuse(subject, "*", None, "scope_insensitive")
            continue
        length = rng.randint(MIN_TURNS, min(MAX_TURNS, len(chain)))
        yield Chain(FAMILY, facts.snapshot_year, chain[0].scope_anchor, tuple(chain[:length]))


def _first_chain(
    facts: SnapshotFacts, templates: Templates, rng: random.Random, subject: str, name: str,
    years: list[int], by_year: dict[int, list[str]],
) -> list[Turn] | None:  # fmt: skip
    """The turns of the first year keeping ``MIN_TURNS``, in passes of decreasing
    strictness (``LEVELS``)."""
    for level in LEVELS:
        for year in years:
            turns = _turns(facts, templates, rng, subject, name, year, by_year[year], level)
            if len(turns) >= MIN_TURNS:
                return turns
    return None


def _turns(
    facts: SnapshotFacts, templates: Templates, rng: random.Random, subject: str, name: str, year: int,
    pids: list[str], level: int,
) -> list[Turn]:  # fmt: skip
    """Turns on ``pids`` in a drawn order: the first explicit (the least scope-sensitive
    property opens, keeping the others for the scored turns), each later one implicit, with
    a gold disjoint from the earlier ones and of ``sensitivity`` at least ``level``; a
    later turn whose pronoun could mean the answer before it names the subject."""
    order = list(pids)
    rng.shuffle(order)
    anchor = str(year)
    levels = {pid: sensitivity(facts, subject, pid, anchor) for pid in order}
    order.sort(key=lambda pid: levels[pid])
    order[1:] = sorted(order[1:], key=lambda pid: -levels[pid])
    turns: list[Turn] = []
    for pid in order:
        if turns and levels[pid] < level:
            continue
        if not turns:
            question = pick(templates, rng, pid, "explicit_year", subject=name, year=year)
        elif clear_pronoun(facts, templates, subject, pid, turns[-1].canonical_qid):
            slot = "followup_then" if rng.random() < 0.5 else "followup"
            question = pick(templates, rng, pid, slot)
        else:
            question = pick(templates, rng, pid, "cross_entity", subject=name)
        turn = facts.turn(question, subject, pid, anchor, explicit=not turns)
        if turn is None or any(
            set(turn.gold_qids) & set(kept.gold_qids) or turn.question == kept.question
            for kept in turns
        ):
            continue
        turns.append(turn)
    return turns
