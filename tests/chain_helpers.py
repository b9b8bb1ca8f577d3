"""Hand-built snapshot facts for the family tests."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import date

import pyarrow as pa

from chronoscope_dagster.chains.facts import Shard, SnapshotFacts
from chronoscope_dagster.chains.reach import INTERVALS_SCHEMA, table_facts
from chronoscope_dagster.wikidata.extract import LIFESPANS_SCHEMA

Row = tuple[str | None, str, str, list[str]]


def intervals_table(
    spans: Iterable[tuple[str, str, str, str | None, str | None]],
    *,
    ended_unknown: Collection[tuple[str, str, str]] = (),
) -> pa.Table:
    """``fact_intervals`` rows from (subject, pid, value, first day, last day) with ISO days;
    both days None is a timeless statement, a last day without a first one a statement whose
    start is unknown (``start_unknown``). A (subject, pid, value) of ``ended_unknown`` with no
    last day ended at an unknown date (``end_unknown``): certain on its first day only."""
    records = [
        {"subject_qid": subject, "pid": pid, "value_qid": value,
         "valid_from": date.fromisoformat(first) if first else None,
         "valid_until": date.fromisoformat(last) if last else None,
         "certain_until": date.fromisoformat(first) if first and unknown_end else None,
         "is_timeless": first is None and last is None and not unknown_end,
         "end_unknown": unknown_end, "start_unknown": first is None and last is not None}
        for subject, pid, value, first, last in spans
        for unknown_end in [last is None and (subject, pid, value) in ended_unknown]
    ]  # fmt: skip
    return pa.Table.from_pylist(records, schema=INTERVALS_SCHEMA)


def intervals_of_rows(rows: list[Row]) -> pa.Table:
    """``fact_intervals`` rows that say exactly what truth rows say: a value of a year anchor
    holds that whole year, of a day anchor that day; a row without anchor is timeless."""
    spans = []
    for anchor, subject, pid, values in rows:
        if anchor is None:
            first = last = None
        elif len(anchor) == 4:
            first, last = f"{anchor}-01-01", f"{anchor}-12-31"
        else:
            first = last = anchor
        spans += [(subject, pid, value, first, last) for value in values]
    return intervals_table(spans)


def lifespans_table(bounds: dict[str, tuple[str | None, str | None]]) -> pa.Table:
    """``lifespans`` rows from ``{qid: (start, end)}`` day-precision ISO dates."""
    records = [
        {"qid": qid, "pid": pid, "bound": bound, "date": date.fromisoformat(day),
         "precision": 11, "calendar": "gregorian", "rank": "normal"}
        for qid, (start, end) in bounds.items()
        for pid, bound, day in (("P571", "start", start), ("P576", "end", end))
        if day is not None
    ]  # fmt: skip
    return pa.Table.from_pylist(records, schema=LIFESPANS_SCHEMA)


def shard_apart(facts: Callable[[Shard], SnapshotFacts], held: str, apart: str) -> Shard:
    """The first shard (of 2 to 39) whose index ``facts`` gives holds root ``held`` and not
    ``apart``."""
    return next(
        shard
        for count in range(2, 40)
        for shard in [Shard(index, count) for index in range(count)]
        for roots in [facts(shard).wide.roots or frozenset()]
        if held in roots and apart not in roots
    )


def facts_from_rows(
    rows: Iterable[Row],
    names: dict[str, str | tuple[str, str | None]],
    *,
    intervals: pa.Table | None = None,
    lifespans: dict[str, tuple[str | None, str | None]] | None = None,
    present: dict[tuple[str, str], list[str]] | None = None,
    shard: Shard | None = None,
    uncertain: dict[tuple[str | None, str, str], list[str]] | None = None,
) -> SnapshotFacts:
    """Facts from (anchor, subject, pid, values) truth rows (the first value canonical) and
    labels given as ``{qid: label}`` or ``{qid: (label, description)}``; the intervals say
    what the rows say unless given; ``present``: today's values by (subject, pid); ``shard``:
    index what the chains rooted in it reach; ``uncertain``: the values of unknown validity
    of an (anchor, subject, pid) (its row, added without values if missing, has no gold)."""
    rows = list(rows)
    uncertain = uncertain or {}
    keys = {(anchor, subject, pid) for anchor, subject, pid, _ in rows}
    rows += [(*key, []) for key in uncertain if key not in keys]
    anchors, subjects, pids, values = (list(column) for column in zip(*rows, strict=True))
    truth = pa.table(
        {
            "anchor": pa.array(anchors, pa.string()),
            "subject_qid": subjects,
            "pid": pids,
            "value_qids": pa.array(values, pa.list_(pa.string())),
            "canonical_value_qid": pa.array([v[0] if v else None for v in values], pa.string()),
            "uncertain_value_qids": pa.array(
                [uncertain.get(key, []) for key in zip(anchors, subjects, pids, strict=True)],
                pa.list_(pa.string()),
            ),
        }
    )
    pairs = [name if isinstance(name, tuple) else (name, None) for name in names.values()]
    labels = pa.table(
        {
            "qid": list(names),
            "label": [label for label, _ in pairs],
            "description": pa.array([description for _, description in pairs], pa.string()),
            "aliases": pa.array([[] for _ in names], pa.list_(pa.string())),
        }
    )
    present_day = pa.table(
        {
            "subject_qid": [subject for subject, _ in present or {}],
            "pid": [pid for _, pid in present or {}],
            "value_qids": pa.array(list((present or {}).values()), pa.list_(pa.string())),
        }
    )
    return table_facts(
        2025,
        truth,
        labels,
        present_day,
        intervals=intervals if intervals is not None else intervals_of_rows(rows),
        lifespan_rows=lifespans_table(lifespans or {}),
        shard=shard,
    )


def facts_of_one_subject(years: dict[int, list[str]], names: dict[str, str]) -> SnapshotFacts:
    """Facts of Q1's P6 (head of government) from ``{year: values}``."""
    return facts_from_rows([(str(y), "Q1", "P6", v) for y, v in years.items()], names)


def held_over_span(facts: SnapshotFacts, subject: str, pid: str, y1: int, y2: int) -> set[str]:
    """Every value of (subject, pid) valid at some time in the years y1..y2, from year_golds."""
    years = facts.year_golds(subject, pid)
    return {qid for year in range(y1, y2 + 1) if year in years for qid in years[year].qids}
