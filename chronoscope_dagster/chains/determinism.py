"""Whether generating a snapshot's families again gives the chains stored for it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow.parquet as pq

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.records import generate_family, rooted_in
from chronoscope_dagster.chains.templates import load_templates


def differing_families(
    facts: SnapshotFacts, stored: Mapping[str, Path], used: Mapping[str, Mapping]
) -> list[str]:
    """The families whose chains stored in ``stored[family]`` (the snapshot's Parquet file),
    those rooted in the shard of ``facts``, differ from the chains generated again from
    ``facts`` with the seed and language each was built with (``used[family]``: its report)."""
    shard = facts.wide.roots
    differing = []
    for family in FAMILIES:
        again = generate_family(
            facts, family, load_templates(used[family]["language"]), used[family]["seed"]
        )
        table = pq.read_table(stored[family])
        if not again.table.equals(table if shard.count == 1 else rooted_in(table, shard)):
            differing.append(family)
    return differing
