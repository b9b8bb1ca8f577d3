"""Hand-built snapshot facts for the family tests."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from chronoscope_dagster.chains.facts import SnapshotFacts

Row = tuple[str | None, str, str, list[str]]


def facts_from_rows(
    rows: Iterable[Row], names: dict[str, str | tuple[str, str | None]]
) -> SnapshotFacts:
    """Facts from (anchor, subject, pid, values) truth rows (the first value canonical) and
    labels given as ``{qid: label}`` or ``{qid: (label, description)}``."""
    anchors, subjects, pids, values = (list(column) for column in zip(*rows, strict=True))
    truth = pa.table(
        {
            "anchor": pa.array(anchors, pa.string()),
            "subject_qid": subjects,
            "pid": pids,
            "value_qids": values,
            "canonical_value_qid": [v[0] for v in values],
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
    return SnapshotFacts(2025, truth, labels)


def facts_of_one_subject(years: dict[int, list[str]], names: dict[str, str]) -> SnapshotFacts:
    """Facts of Q1's P6 (head of government) from ``{year: values}``."""
    return facts_from_rows([(str(y), "Q1", "P6", v) for y, v in years.items()], names)


def held_over_span(facts: SnapshotFacts, subject: str, pid: str, y1: int, y2: int) -> set[str]:
    """Every value of (subject, pid) valid at some time in the years y1..y2, from year_golds."""
    years = facts.year_golds(subject, pid)
    return {qid for year in range(y1, y2 + 1) if year in years for qid in years[year].qids}
