"""The anchor calendar: the time scopes at which truth is tabulated.

An anchor is a day (``scope = 'day'``: the values valid on that date) or a
year (``scope = 'year'``: every value valid at some point of that year, so
"in 2010" accepts both prime ministers the UK had that year). The default
calendar of a snapshot year Y is the paper's quarterly day anchors of Y
(Y-01-01, Y-04-01, Y-07-01, Y-10-01) plus one year anchor for every year from
1950 to Y, so historical questions have gold sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import pyarrow as pa

QUARTER_DAYS = ("01-01", "04-01", "07-01", "10-01")
FIRST_HISTORICAL_YEAR = 1950


@dataclass(frozen=True, order=True)
class Anchor:
    anchor_date: date
    scope: str

    @property
    def key(self) -> str:
        """``2022-04-01`` for a day anchor, ``2022`` for a year anchor."""
        return self.anchor_date.isoformat() if self.scope == "day" else str(self.anchor_date.year)

    @property
    def scope_start(self) -> date:
        return self.anchor_date if self.scope == "day" else date(self.anchor_date.year, 1, 1)

    @property
    def scope_end(self) -> date:
        return self.anchor_date if self.scope == "day" else date(self.anchor_date.year, 12, 31)


def default_calendar(
    snapshot_year: int,
    quarter_days: tuple[str, ...] = QUARTER_DAYS,
    first_year: int = FIRST_HISTORICAL_YEAR,
) -> list[Anchor]:
    days = [Anchor(date.fromisoformat(f"{snapshot_year}-{day}"), "day") for day in quarter_days]
    years = [Anchor(date(year, 1, 1), "year") for year in range(first_year, snapshot_year + 1)]
    return sorted(days + years)


def anchors_table(anchors: list[Anchor]) -> pa.Table:
    return pa.table(
        {
            "anchor": pa.array([a.key for a in anchors], pa.string()),
            "anchor_date": pa.array([a.anchor_date for a in anchors], pa.date32()),
            "anchor_scope": pa.array([a.scope for a in anchors], pa.string()),
            "scope_start": pa.array([a.scope_start for a in anchors], pa.date32()),
            "scope_end": pa.array([a.scope_end for a in anchors], pa.date32()),
        }
    )


@dataclass(frozen=True)
class ModelPresent:
    """The present of a model whose knowledge ends at ``knowledge_cutoff``: the truth at
    ``anchor`` (a day anchor) of the snapshot ``snapshot_year``. ``is_dump_present``: it is the
    dump's present (the latest day anchor of the latest snapshot)."""

    knowledge_cutoff: date
    snapshot_year: int
    anchor: Anchor
    is_dump_present: bool

    def describe(self) -> dict[str, object]:
        return {
            "knowledge_cutoff": self.knowledge_cutoff.isoformat(),
            "snapshot_year": self.snapshot_year,
            "anchor": self.anchor.key,
            "is_dump_present": self.is_dump_present,
        }


def model_present(cutoff: date, calendars: Mapping[int, Sequence[Anchor]]) -> ModelPresent:
    """The present of a model whose knowledge ends at ``cutoff``, among the snapshots'
    anchor calendars (``calendars``: each snapshot year's anchors).

    The rule: the model's present is the latest day anchor on or before the cutoff, among
    every snapshot's day anchors, and its values are that anchor's snapshot's. A snapshot of
    year Y holds what Wikidata knew on 31 December of Y, and its day anchors lie in Y, so a
    cutoff within a snapshot's year takes that snapshot's latest day anchor on or before it
    (2023-12-31: the 2023 snapshot at 2023-10-01); a cutoff after the latest snapshot's year
    takes the dump's present (the latest day anchor of the latest snapshot), the same numbers
    as without a cutoff; a cutoff before every anchor (before the earliest snapshot's year) is
    an error naming the snapshots there are. Without a cutoff a model's present is the dump's.
    """
    days = [
        (anchor.anchor_date, year, anchor)
        for year, anchors in calendars.items()
        for anchor in anchors
        if anchor.scope == "day"
    ]
    if not days:
        raise ValueError("no snapshot has a day anchor")
    earlier = [day for day in days if day[0] <= cutoff]
    if not earlier:
        raise ValueError(
            f"knowledge cutoff {cutoff.isoformat()} is before every snapshot's first day "
            f"anchor ({min(days)[2].key}); the snapshots are "
            f"{', '.join(str(year) for year in sorted(calendars))}"
        )
    _, year, anchor = max(earlier)
    return ModelPresent(
        cutoff, year, anchor, is_dump_present=(anchor.anchor_date, year, anchor) == max(days)
    )
