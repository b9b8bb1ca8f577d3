"""Whether generating a snapshot's families again gives the chains stored for it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import pyarrow.parquet as pq

from chronoscope_dagster.chains.facts import Shard
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.reach import sampled_warehouse_facts
from chronoscope_dagster.chains.records import generate_family, rooted_in
from chronoscope_dagster.chains.templates import load_templates
from chronoscope_dagster.processes import in_own_process
from chronoscope_dagster.warehouse import Warehouse


def differing_families(
    warehouse: Warehouse, max_roots: int, which: int, year: str
) -> tuple[Shard, list[str]]:
    """The families of snapshot ``year`` whose stored chains rooted in one (``which``) of as
    few subject-hash shards as hold at most ``max_roots`` roots each differ from the chains
    generated again with the seed and language each was built with; and that shard."""
    facts = sampled_warehouse_facts(warehouse, year, max_roots, which)
    shard = facts.wide.roots
    differing = []
    for family in FAMILIES:
        used = warehouse.read_report(f"family_{family}", snapshot_year=year)
        again = generate_family(facts, family, load_templates(used["language"]), used["seed"])
        stored = pq.read_table(warehouse.data_path(f"family_{family}", snapshot_year=year))
        if not again.table.equals(stored if shard.count == 1 else rooted_in(stored, shard)):
            differing.append(family)
    return shard, differing


def differing_by_year(
    warehouse: Warehouse, years: Sequence[str], max_roots: int, which: int
) -> dict[str, tuple[Shard, list[str]]]:
    """``differing_families`` of each snapshot of ``years``, by year, each in a process of its
    own (``in_own_process``)."""
    return {
        year: in_own_process(partial(differing_families, warehouse, max_roots, which, year))
        for year in years
    }
