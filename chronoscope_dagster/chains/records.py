"""Chains as tables: one row per turn, with the chain's fields beside each turn."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.chains.explicit import explicit_by_chain
from chronoscope_dagster.chains.facts import Shard, SnapshotFacts
from chronoscope_dagster.chains.families import family_module
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.templates import Templates, load_templates

STRINGS = pa.list_(pa.string())
TURNS_SCHEMA = pa.schema(
    [
        pa.field("chain_id", pa.string(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("anchor", pa.string(), nullable=False),
        pa.field("chain_length", pa.int16(), nullable=False),
        pa.field("scope_shifts", pa.int16(), nullable=False),
        pa.field("implicit_share", pa.float64(), nullable=False),
        pa.field("span_years", pa.int16(), nullable=False),
        pa.field("turn_index", pa.int16(), nullable=False),
        pa.field("question", pa.string(), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("answer_kind", pa.string(), nullable=False),
        pa.field("pid", pa.string(), nullable=False),
        pa.field("subject_qid", pa.string(), nullable=False),
        pa.field("subject_label", pa.string(), nullable=False),
        pa.field("gold_qids", STRINGS, nullable=False),
        pa.field("gold_labels", STRINGS, nullable=False),
        pa.field("gold_aliases", STRINGS, nullable=False),
        pa.field("canonical_qid", pa.string()),
        pa.field("asked_qid", pa.string()),
        pa.field("asked_label", pa.string()),
        pa.field("scope_year", pa.int16()),
        pa.field("scope_end_year", pa.int16()),
        pa.field("scope_anchor", pa.string()),
        pa.field("is_explicit", pa.bool_(), nullable=False),
        pa.field("present_qids", STRINGS, nullable=False),
        pa.field("present_labels", STRINGS, nullable=False),
        pa.field("drift_eligible", pa.bool_(), nullable=False),
        pa.field("explicit_question", pa.string()),
        pa.field("rival_labels", STRINGS, nullable=False),
        pa.field("scope_dependent", pa.bool_(), nullable=False),
    ]
)

MERGED_TURNS_SCHEMA = TURNS_SCHEMA.append(pa.field("snapshot_year", pa.int32()))


def turns_table(
    chains: Iterable[Chain], explicit: Mapping[str, Sequence[str | None]] | None = None
) -> pa.Table:
    """One row per turn; ``explicit`` holds each chain's explicit questions by chain id
    (``chains.explicit``), null where absent."""
    rows = []
    for chain in chains:
        head = {
            "chain_id": chain.chain_id,
            "family": chain.family,
            "anchor": chain.anchor,
            "chain_length": chain.length,
            "scope_shifts": chain.scope_shifts,
            "implicit_share": chain.implicit_share,
            "span_years": chain.span_years,
        }
        standalone = (explicit or {}).get(chain.chain_id) or (None,) * chain.length
        answered = [(*turn.gold_labels, *turn.gold_aliases) for turn in chain.turns]
        for index, turn in enumerate(chain.turns):
            rows.append(
                {
                    **head,
                    "turn_index": index,
                    "question": turn.question,
                    "answer": turn.answer,
                    "answer_kind": turn.answer_kind,
                    "pid": turn.pid,
                    "subject_qid": turn.subject_qid,
                    "subject_label": turn.subject_label,
                    "gold_qids": list(turn.gold_qids),
                    "gold_labels": list(turn.gold_labels),
                    "gold_aliases": list(turn.gold_aliases),
                    "canonical_qid": turn.canonical_qid,
                    "asked_qid": turn.asked_qid,
                    "asked_label": turn.asked_label,
                    "scope_year": turn.scope_year,
                    "scope_end_year": turn.scope_end_year,
                    "scope_anchor": turn.scope_anchor,
                    "is_explicit": turn.is_explicit,
                    "present_qids": list(turn.present_qids),
                    "present_labels": list(turn.present_labels),
                    "drift_eligible": turn.drift_eligible,
                    "explicit_question": standalone[index],
                    "rival_labels": _rivals(turn, answered, index),
                    "scope_dependent": turn.scope_dependent,
                }
            )
    return pa.Table.from_pylist(rows, schema=TURNS_SCHEMA)


def _rivals(turn: Turn, answered: Sequence[tuple[str, ...]], index: int) -> list[str]:
    """What an entity turn's answer must not name beside its gold: the other values of its
    property at any time, and the answers of the chain's other entity turns."""
    if turn.answer_kind != "entity":
        return []
    own = {*turn.gold_labels, *turn.gold_aliases}
    found = dict.fromkeys(turn.rival_labels)
    for other, labels in enumerate(answered):
        if other != index:
            found.update(dict.fromkeys(labels))
    return [label for label in found if label not in own]


def family_turns_table(
    chains: Sequence[Chain], templates: Templates, label_of: Mapping[str, Any], *, seed: int
) -> tuple[pa.Table, Counter[str]]:
    """A family's turns with their explicit questions, and the turns left without one by
    reason (``chains.explicit``)."""
    explicit, missing = explicit_by_chain(chains, templates, label_of, seed=seed)
    return turns_table(chains, explicit), missing


@dataclass(frozen=True)
class FamilyOutput:
    chains: list[Chain]
    table: pa.Table
    no_explicit_question: Counter[str]
    scopes_refused: Counter[str]
    refused: frozenset[tuple[str, str, str | None, str]] = frozenset()
    unnameable_subjects: int = 0


def generate_family(
    facts: SnapshotFacts, family: str, templates: Templates, seed: int
) -> FamilyOutput:
    """One family's chains and turns table from an index of a snapshot's facts (the chains
    that start from its shard's subjects, turn 1's), with the family's own refusal counts
    (``SnapshotFacts.fresh``): the asset and its determinism check both call this."""
    own = facts.fresh()
    chains = list(family_module(family).generate(own, templates, seed))
    table, missing = family_turns_table(chains, templates, own.labels, seed=seed)
    return FamilyOutput(
        chains, table, missing, own.drops, own.refused, facts.wide.unnameable_subjects
    )


def generate_families(
    facts: Callable[[Shard], SnapshotFacts],
    families: Sequence[str],
    language: str,
    seed: int,
    workers: int = 1,
    shard: Shard | None = None,
) -> Iterator[tuple[str, FamilyOutput]]:
    """The ``families`` of the chains rooted in one ``shard`` of a snapshot (all of it
    without one), each as ``generate_family`` gives it, one at a time. ``facts`` (picklable)
    loads the index of a shard. With several ``workers``, each process loads one part of the
    shard and generates every family from it; the parts' chains are merged back in the order
    of their first subjects, and refusals are counted once over all parts, so the output is
    the same for any number of workers."""
    shard = shard or Shard(0, 1)
    if workers <= 1:
        index, templates = facts(shard), load_templates(language)
        for family in families:
            yield family, generate_family(index, family, templates, seed)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        outputs = list(
            pool.map(
                _shard_families, repeat(facts), repeat(families), repeat(language), repeat(seed),
                shard.split(workers),
            )
        )  # fmt: skip
    for family in families:
        yield family, _merged([output.pop(family) for output in outputs])


def _shard_families(
    facts: Callable[[Shard], SnapshotFacts],
    families: Sequence[str],
    language: str,
    seed: int,
    shard: Shard,
) -> dict[str, FamilyOutput]:
    index, templates = facts(shard), load_templates(language)
    return {family: generate_family(index, family, templates, seed) for family in families}


def _merged(parts: Sequence[FamilyOutput]) -> FamilyOutput:
    """One family's shards as one output: chains (and their turns) by first subject's QID
    number, as unsharded generation yields them; a refusal made in several shards once."""
    refused = frozenset().union(*(part.refused for part in parts))
    return FamilyOutput(
        sorted((chain for part in parts for chain in part.chains), key=_root_number),
        merged_turns([part.table for part in parts]),
        sum((part.no_explicit_question for part in parts), Counter()),
        Counter(reason for *_, reason in refused),
        refused,
        parts[0].unnameable_subjects,
    )


def merged_turns(tables: Sequence[pa.Table]) -> pa.Table:
    """Turns tables of one family's shards as the one table of unsharded generation: chains by
    the QID number of their first subject (a chain's rows stay together and in order). Tables
    read back from Parquet take the turns schema again (Parquet renames a list's item field)."""
    table = pa.concat_tables(table.cast(TURNS_SCHEMA) for table in tables)
    firsts = table.filter(pc.equal(table.column("turn_index"), 0))
    rank = {
        chain_id: int(subject[1:])
        for chain_id, subject in zip(
            firsts.column("chain_id").to_pylist(),
            firsts.column("subject_qid").to_pylist(),
            strict=True,
        )
    }
    chain_ids = table.column("chain_id").to_pylist()
    order = sorted(range(table.num_rows), key=lambda row: rank[chain_ids[row]])
    return table.take(pa.array(order, pa.int64())).combine_chunks()


def merged_turns_sql(parts: Sequence[str]) -> str:
    """SQL of the turns tables of one family's shards (``parts``: SQL sources, in shard order,
    each with its ``file_row_number``) as ``merged_turns`` orders them, for DuckDB to sort
    within its memory limit: a family is never one table in memory."""
    numbered = " UNION ALL ".join(
        f"SELECT *, {index} AS shard_part FROM {source}" for index, source in enumerate(parts)
    )
    return f"""
    WITH parts AS ({numbered}),
    ranked AS (
        SELECT *, max(CAST(subject_qid[2:] AS BIGINT)) FILTER (WHERE turn_index = 0)
                      OVER (PARTITION BY chain_id) AS root_number
        FROM parts)
    SELECT * EXCLUDE (shard_part, file_row_number, root_number) FROM ranked
    ORDER BY root_number, shard_part, file_row_number"""


def _root_number(chain: Chain) -> int:
    return int(chain.turns[0].subject_qid[1:])


def rooted_in(table: pa.Table, roots: AbstractSet[str]) -> pa.Table:
    """The rows of a family's turns table whose chain starts from one of ``roots`` (turn 1's
    subject), in their order: what ``generate_family`` gives for the shard of those roots."""
    firsts = table.filter(pc.equal(table.column("turn_index"), 0))
    chain_ids = [
        chain_id
        for chain_id, subject in zip(
            firsts.column("chain_id").to_pylist(),
            firsts.column("subject_qid").to_pylist(),
            strict=True,
        )
        if subject in roots
    ]
    return table.filter(pc.is_in(table.column("chain_id"), pa.array(chain_ids, pa.string())))
