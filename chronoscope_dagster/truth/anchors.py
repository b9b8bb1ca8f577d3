"""The anchor calendar: the time scopes at which truth is tabulated.

An anchor is a day (``scope = 'day'``: the values valid on that date) or a
year (``scope = 'year'``: every value valid at some point of that year, so
"in 2010" accepts both prime ministers the UK had that year). The default
calendar of a snapshot year Y is the paper's quarterly day anchors of Y
(Y-01-01, Y-04-01, Y-07-01, Y-10-01) plus one year anchor for every year from
1950 to Y, so historical questions have gold sets.
"""

from __future__ import annotations

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
