"""The property list (``data/properties.yaml``): which properties and qualifiers are extracted,
which are single-holder (``functional``), which bound an entity's lifespan and which classes are
people."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from chronoscope_dagster.data import PROPERTIES_FILE


@dataclass(frozen=True)
class PropertyCatalog:
    labels: dict[str, str]
    chain_pids: tuple[str, ...]
    complements: dict[str, str]
    functional_pids: frozenset[str]
    lifespan_properties: dict[str, str]
    person_classes: frozenset[str]
    time_qualifiers: dict[str, str]
    entity_qualifiers: dict[str, str]
    ordinal_qualifiers: dict[str, str]

    @property
    def pids(self) -> tuple[str, ...]:
        return tuple(self.labels)

    @property
    def list_columns(self) -> tuple[str, ...]:
        return (*self.entity_qualifiers.values(), *self.ordinal_qualifiers.values())


def load_catalog(path: Path = PROPERTIES_FILE) -> PropertyCatalog:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    properties = raw["properties"]
    return PropertyCatalog(
        labels={pid: spec["label"] for pid, spec in properties.items()},
        chain_pids=tuple(pid for pid, spec in properties.items() if spec.get("chains")),
        complements={
            pid: spec["complement"] for pid, spec in properties.items() if "complement" in spec
        },
        functional_pids=frozenset(
            pid for pid, spec in properties.items() if spec.get("functional")
        ),
        lifespan_properties=dict(raw["lifespan_properties"]),
        person_classes=frozenset(raw["person_classes"]),
        time_qualifiers=dict(raw["time_qualifiers"]),
        entity_qualifiers=dict(raw["entity_qualifiers"]),
        ordinal_qualifiers=dict(raw["ordinal_qualifiers"]),
    )


@cache
def default_catalog() -> PropertyCatalog:
    return load_catalog()
