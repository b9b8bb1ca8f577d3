"""Carryover-then: carryover with a "then" / "at the time" marker on the follow-up.

What it tests: as carryover, whether a discourse marker helps or hinders the
model in carrying the year of turn 1 over to an implicit question.

Rule: exactly the dated chains of carryover (see ``carryover``), drawn from
this family's own generator, with turn 2 asked in ``followup_then``: turn 1
``explicit_year`` of p at Y, turn 2 ``followup_then`` of p's complement q for
the same subject; both golds are the values valid at any time in Y; years are
chosen and timeless pairs left out as there.
"""

from __future__ import annotations

from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families.common import carryover_chains
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.templates import Templates

FAMILY = "carryover_then"


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    yield from carryover_chains(facts, templates, seed, FAMILY, "followup_then")
