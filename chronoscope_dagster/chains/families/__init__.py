"""The chain families of the paper's Table 2, one module each.

Each module states in its docstring what its family tests and how the gold is
chosen, and exposes ``FAMILY`` (its name) and ``generate(facts, templates,
seed)``, which yields chains in a deterministic order.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Protocol

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.templates import Templates

FAMILIES = (
    "carryover",
    "carryover_then",
    "scope_switch",
    "cross_entity_then",
    "multi_turn_chain",
    "temporal_narrative",
    "interval_reasoning",
    "interval_change",
    "distinct_count",
    "change_point",
    "bridged_multi_pid",
)


class FamilyModule(Protocol):
    FAMILY: str

    def generate(
        self, facts: SnapshotFacts, templates: Templates, seed: int
    ) -> Iterator[Chain]: ...


def family_module(name: str) -> FamilyModule:
    if name not in FAMILIES:
        raise KeyError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}")
    return importlib.import_module(f"{__name__}.{name}")  # type: ignore[return-value]
