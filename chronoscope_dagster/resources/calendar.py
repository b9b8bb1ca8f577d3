from __future__ import annotations

import dagster as dg
from pydantic import Field

from chronoscope_dagster.truth.anchors import (
    FIRST_HISTORICAL_YEAR,
    QUARTER_DAYS,
    Anchor,
    default_calendar,
)


class AnchorCalendar(dg.ConfigurableResource):
    """The anchors at which truth is tabulated for each snapshot year."""

    day_anchors: list[str] = Field(
        default=list(QUARTER_DAYS),
        description="Month-day of the day anchors within the snapshot year (the paper: quarterly).",
    )
    first_historical_year: int = Field(
        default=FIRST_HISTORICAL_YEAR,
        description="Year anchors (whole-year scopes) run from this year to the snapshot year.",
    )

    def anchors(self, snapshot_year: int) -> list[Anchor]:
        return default_calendar(snapshot_year, tuple(self.day_anchors), self.first_historical_year)

    def present_day_anchor(self, snapshot_year: int) -> Anchor:
        return max(a for a in self.anchors(snapshot_year) if a.scope == "day")
