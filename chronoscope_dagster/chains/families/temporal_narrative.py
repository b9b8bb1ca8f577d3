"""Temporal narrative: one subject and property followed through the years, in order.

What it tests: story-tracking. The user walks forward in time over the same
subject (same QID) and property, naming each new year; the model must answer
for each year and follow the changes, not repeat an earlier answer.

Structure (3 to 11 turns, 3 in half the chains): 1. explicit, entity, year Y1;
then each turn explicit (names its year, not the subject), entity, a later year.

Rule: for each (subject, property) with templates, the usable years are the
whole-year anchors from 1950 to the snapshot year whose gold can be verbalized;
consecutive years with the same gold set form a run. A narrative visits runs
in order, each turn's gold disjoint from the one before it (so no answer is
correct for two consecutive turns and copying the previous answer never
scores): from a run, the next is the first later run disjoint from it, up to
11 turns. A pair whose longest such walk has ``LONG_WALK`` turns or more (rare:
a story of five changes) always gets it in full; otherwise the length is 3
with probability ``SHORT_SHARE``, else the longest walk's; the first run is
drawn among those that allow the length, and each turn's year within its
run. Turn 1 asks ``explicit_year``;
each later turn asks the property's ``scope_switch`` or the generic
``scope_switch`` (even odds), and the last turn uses the generic
``narrative_last`` instead one time in two. Every turn states its year; its
gold is the set of values valid at any point of that year (``year_golds``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import askable_pairs, pick
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "temporal_narrative"
FIRST_YEAR = 1950
MIN_TURNS = 3
MAX_TURNS = 11
SHORT_SHARE = 0.5
LONG_WALK = 6


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    for subject, name, pid in askable_pairs(facts, templates):
        golds = facts.year_golds(subject, pid)
        years = sorted(
            year
            for year, gold in golds.items()
            if FIRST_YEAR <= year <= facts.snapshot_year and facts.verbalizable(gold.qids)
        )
        runs = _runs(years, {year: frozenset(golds[year].qids) for year in years})
        walks = [_walk(runs, start) for start in range(len(runs))]
        longest = max((len(walk) for walk in walks), default=0)
        if longest < MIN_TURNS:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        short = longest < LONG_WALK and rng.random() < SHORT_SHARE
        length = MIN_TURNS if short else longest
        walk = rng.choice([walk for walk in walks if len(walk) >= length])[:length]
        chosen = [rng.choice(runs[index][0]) for index in walk]
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


Run = tuple[list[int], frozenset[str]]


def _runs(years: list[int], gold_sets: dict[int, frozenset[str]]) -> list[Run]:
    """The sorted years grouped into maximal runs of consecutive years with the same gold."""
    runs: list[Run] = []
    for year in years:
        if runs and runs[-1][1] == gold_sets[year]:
            runs[-1][0].append(year)
        else:
            runs.append(([year], gold_sets[year]))
    return runs


def _walk(runs: list[Run], start: int) -> list[int]:
    """Run indexes from ``start``, each the first later run disjoint from the one before."""
    walk = [start]
    for index in range(start + 1, len(runs)):
        if len(walk) == MAX_TURNS:
            break
        if not runs[index][1] & runs[walk[-1]][1]:
            walk.append(index)
    return walk


def _later_question(
    templates: Templates, rng: random.Random, pid: str, year: int, *, last: bool
) -> str:
    """A turn after the first: the property's scope switch, a generic one, or a closing one."""
    slot = "narrative_last" if last and rng.random() < 0.5 else "scope_switch"
    if slot == "scope_switch" and rng.random() < 0.5:
        return pick(templates, rng, pid, "scope_switch", year=year)
    index = rng.randrange(len(templates.generic_phrasings(slot)))
    return templates.render_generic(slot, index, year=year)
