"""Temporal narrative: one subject and property followed through the years, in order.

What it tests: story-tracking. The user walks forward in time over the same
subject (same QID) and property, naming each new year; the model must answer
for each year and follow the changes, not repeat an earlier answer.

Rule: for each (subject, property) with templates, the usable years are the
whole-year anchors from 1950 to the snapshot year whose gold can be verbalized;
consecutive years with the same gold set form a run, and at least three runs
(two changes) are needed. The length n is drawn in 3..min(11, usable years).
Three years are drawn from three consecutive runs (so the gold changes at least
twice whatever else is added), then n - 3 further usable years; all are sorted
ascending. Turn 1 asks ``explicit_year``; each later turn asks the property's
``scope_switch`` or the generic ``scope_switch`` (even odds), and the last turn
uses the generic ``narrative_last`` instead one time in two. Every turn states its year; its gold is the
set of values valid at any point of that year (``year_golds``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import askable_pairs, pick
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for

FAMILY = "temporal_narrative"
FIRST_YEAR = 1950
MIN_TURNS = 3
MAX_TURNS = 11


def generate(facts: SnapshotFacts, templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        golds = facts.year_golds(subject, pid)
        years = sorted(
            year
            for year, gold in golds.items()
            if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
        )
        runs = _runs(years, {year: frozenset(golds[year].qids) for year in years})
        if len(runs) < MIN_TURNS:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        chosen = _narrative_years(rng, years, runs)
        questions = [pick(templates, rng, pid, "explicit_year", subject=name, year=chosen[0])]
        questions += [
            _later_question(templates, rng, pid, year, last=index == len(chosen) - 1)
            for index, year in enumerate(chosen[1:], start=1)
        ]
        turns = [
            facts.turn(question, subject, pid, str(year), explicit=True)
            for question, year in zip(questions, chosen, strict=True)
        ]
        if all(turns):
            yield Chain(FAMILY, facts.snapshot_year, str(chosen[0]), tuple(turns))


def _runs(years: list[int], gold_sets: dict[int, frozenset[str]]) -> list[list[int]]:
    """The sorted years grouped into maximal runs of consecutive years with the same gold."""
    runs: list[list[int]] = []
    for year in years:
        if runs and gold_sets[runs[-1][-1]] == gold_sets[year]:
            runs[-1].append(year)
        else:
            runs.append([year])
    return runs


def _narrative_years(rng: random.Random, years: list[int], runs: list[list[int]]) -> list[int]:
    """n ascending years, one from each of three consecutive runs plus n - 3 others."""
    length = rng.randint(MIN_TURNS, min(MAX_TURNS, len(years)))
    start = rng.randrange(len(runs) - 2)
    anchors = [rng.choice(run) for run in runs[start : start + 3]]
    others = [year for year in years if year not in anchors]
    return sorted(anchors + rng.sample(others, length - 3))


def _later_question(templates, rng: random.Random, pid: str, year: int, *, last: bool) -> str:
    """A turn after the first: the property's scope switch, a generic one, or a closing one."""
    slot = "narrative_last" if last and rng.random() < 0.5 else "scope_switch"
    if slot == "scope_switch" and rng.random() < 0.5:
        return pick(templates, rng, pid, "scope_switch", year=year)
    index = rng.randrange(len(templates.generic_phrasings(slot)))
    return templates.render_generic(slot, index, year=year)
