"""Multi-turn chain: several properties of one subject under one implicit year.

What it tests: turn 1 fixes a year explicitly; every later turn asks another
property of the same subject (same QID) with neither subject nor year, so the
model must keep the year of turn 1 across the whole chain.

Rule: for each subject, its whole-year anchors are visited in an order drawn
from the item's generator; at each year Y its dated properties (with templates) are shuffled
and taken greedily, keeping one only when its gold in Y shares no value with
the golds already kept (no answer is correct for two turns). The first year
that keeps at least ``MIN_TURNS`` properties is used, and the length is drawn
uniformly between ``MIN_TURNS`` and ``min(MAX_TURNS, kept)``. Turn 1 asks
``explicit_year`` of the first property at Y; each later turn asks
``followup`` or, with probability one half, ``followup_then``. Every gold is
the values valid at any time in Y.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import pick
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.rng import rng_for

FAMILY = "multi_turn_chain"
MIN_TURNS = 3
MAX_TURNS = 6


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, pids in facts.pids_by_subject.items():
        name = facts.subject_name(subject)
        if name is None:
            continue
        by_year: dict[int, list[str]] = {}
        for pid in (pid for pid in pids if pid in templates.properties):
            for year in sorted(facts.year_golds(subject, pid)):
                by_year.setdefault(year, []).append(pid)
        years = sorted(year for year, held in by_year.items() if len(held) >= MIN_TURNS)
        rng = rng_for(seed, FAMILY, subject)
        rng.shuffle(years)
        for year in years:
            turns = _turns(facts, templates, rng, subject, name, year, by_year[year])
            if len(turns) >= MIN_TURNS:
                length = rng.randint(MIN_TURNS, min(MAX_TURNS, len(turns)))
                yield Chain(FAMILY, facts.snapshot_year, str(year), tuple(turns[:length]))
                break


def _turns(
    facts: SnapshotFacts, templates, rng: random.Random, subject: str, name: str, year: int,
    pids: list[str],
) -> list[Turn]:  # fmt: skip
    """Turns on ``pids`` in a drawn order, each with a gold disjoint from the earlier ones."""
    order = list(pids)
    rng.shuffle(order)
    turns: list[Turn] = []
    for pid in order:
        if turns:
            slot = "followup_then" if rng.random() < 0.5 else "followup"
            question = pick(templates, rng, pid, slot)
        else:
            question = pick(templates, rng, pid, "explicit_year", subject=name, year=year)
        turn = facts.turn(question, subject, pid, str(year), explicit=not turns)
        if turn is None or any(
            set(turn.gold_qids) & set(kept.gold_qids) or turn.question == kept.question
            for kept in turns
        ):
            continue
        turns.append(turn)
    return turns
