"""Whether generating a snapshot's families again gives the chains stored for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path

import pyarrow.parquet as pq

from chronoscope_dagster.chains.facts import Shard, SnapshotFacts
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.records import generate_families, rooted_in


def differing_families(
    facts: Callable[[Shard], SnapshotFacts],
    shard: Shard,
    roots: AbstractSet[str] | None,
    stored: Mapping[str, Path],
    used: Mapping[str, Mapping],
    workers: int = 1,
) -> list[str]:
    """The families whose chains stored in ``stored[family]`` (the snapshot's Parquet file),
    those rooted in ``shard`` (whose subjects are ``roots``; None for every subject), differ
    from the chains generated again with the seed and language each was built with
    (``used[family]``: its report), as a shard step generates them (``generate_families``:
    ``facts`` loads the index of a shard, over ``workers`` processes)."""
    settings = {family: (used[family]["language"], used[family]["seed"]) for family in FAMILIES}
    differing = set()
    for language, seed in dict.fromkeys(settings.values()):
        families = [family for family in FAMILIES if settings[family] == (language, seed)]
        for family, again in generate_families(facts, families, language, seed, workers, shard):
            table = pq.read_table(stored[family])
            if not again.table.equals(table if roots is None else rooted_in(table, roots)):
                differing.add(family)
    return [family for family in FAMILIES if family in differing]
