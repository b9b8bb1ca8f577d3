"""Carryover: a second property of the same subject, asked with no subject and no year.

What it tests: turn 1 fixes a year explicitly; turn 2 asks another property of
the same subject (same QID) without naming the subject or a time, so the model
must carry the year of turn 1 over instead of answering for the present.

Structure (2 turns): 1. explicit, entity, year Y; 2. implicit (no subject, no
year), entity, year Y: the scored turn.

Rule: for each subject and each property p that has a complement q in
``common.COMPLEMENTS`` (P6<->P35, P39<->P102, P108<->P463, P54<->P286, P127<->P169,
P131<->P17, P488->P169) held by the same subject, the candidate years Y are
those where both have a verbalizable gold and q's gold depends on the year
(``common``: scope-sensitive, preferably drift-eligible, whose tier decides),
turn 2 can only refer to the subject (``common.refers_cleanly``: turn 1's
answer is not of the subject's kind), and the two golds share no value (a
head of state who also heads the government would make turn 2 a copy of
turn 1: ``common.answered_apart``). Y is drawn from the item's generator
among the best tier. Turn 1 asks ``explicit_year`` of p at Y, turn 2
``followup`` of q; both golds are the values valid at any time in Y. Timeless
pairs are not asked: their follow-up does not depend on the year.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import carryover_chains
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.templates import Templates

FAMILY = "carryover"


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    yield from carryover_chains(facts, templates, seed, FAMILY, "followup")
