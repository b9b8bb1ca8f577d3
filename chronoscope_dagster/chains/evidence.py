"""What decides a gold: coverage of single-holder properties and subject lifespans.

Rules (days are inclusive; every scope is clipped to the snapshot's last day):

* A single-holder property (``functional`` in ``data/properties.yaml``)
  decides a scope only where the union of the certain intervals of all its
  values covers the scope, clipped to the subject's lifespan, with no gap
  longer than ``MAX_GAP_DAYS``. A missing successor must not make the
  remaining holder the whole gold: such a scope is not asked
  (``incomplete_scope``).
* A subject's lifespan runs from the first day of its earliest start (birth
  P569, inception P571) to the last day of its latest end (death P570,
  dissolution P576), each at its precision. Without a birth or inception,
  the first start of any dated statement the subject takes part in (as
  subject or as value) stands in for it as the bound of timeless values (it
  existed at least from then); coverage is clipped to the recorded lifespan
  only, so a missing predecessor never shortens a scope. An unknown bound is
  open. A
  timeless value (a statement with no time qualifier) holds only within it:
  a scope wholly before it (``before_lifespan``) or wholly after it
  (``after_lifespan``) has no timeless gold. The scope of a question without
  a year (the present) is the snapshot's last day.
* A count ("how many different ...") or a change ("was it different in Y2
  than in Y1?") is decided only for a single-holder property
  (``open_ended_count``, ``open_ended_change`` otherwise); a count only over a
  covered span (``incomplete_count``).
* A "no" needs positive evidence (``no_evidence`` otherwise): a covered span
  of a single-holder property, or the asked value's own statements all dated
  and none reaching into the span.
* A scope where a value may or may not hold decides nothing: a statement with
  an end but no known start (``truth.intervals``) from its possible beginning
  to its end (``unknown_start``), or one that ended at an unrecorded date after
  its start (``unknown_end``). Its value never counts as a known span.
* A timeless value holds only within both its subject's and its own lifespan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache, lru_cache

import pyarrow as pa
import pyarrow.compute as pc

MAX_GAP_DAYS = 31
DROP_REASONS = (
    "incomplete_scope",
    "before_lifespan",
    "after_lifespan",
    "open_ended_count",
    "open_ended_change",
    "incomplete_count",
    "no_evidence",
    "unknown_start",
    "unknown_end",
)
NEVER = -(1 << 40)
FOREVER = 1 << 40

Span = tuple[int, int]
"""An inclusive range of days (``date.toordinal``), open ends as ``NEVER`` / ``FOREVER``."""


def day_number(value: date | None, default: int) -> int:
    return default if value is None else value.toordinal()


@lru_cache(maxsize=1 << 16)
@cache
def anchor_span(anchor: str | None, snapshot_year: int) -> Span:
    """The days of an anchor key: a day, a year, a span of years ``Y1-Y2``, or the present."""
    if anchor is None:
        last = date(snapshot_year, 12, 31).toordinal()
        return last, last
    if len(anchor) == 4:
        year = int(anchor)
        return date(year, 1, 1).toordinal(), date(year, 12, 31).toordinal()
    if len(anchor) == 9:
        first, last = int(anchor[:4]), int(anchor[5:])
        return date(first, 1, 1).toordinal(), date(last, 12, 31).toordinal()
    day = date.fromisoformat(anchor).toordinal()
    return day, day


def merge(spans: Iterable[Span]) -> tuple[Span, ...]:
    """The union of ``spans`` as sorted, disjoint, non-adjacent spans."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((start, end) for start, end in merged)


def longest_gap(covered: tuple[Span, ...], start: int, end: int) -> int:
    """The most consecutive days of ``start..end`` outside the merged spans ``covered``."""
    gap, cursor = 0, start
    for low, high in covered:
        if high < cursor:
            continue
        if low > end:
            break
        gap = max(gap, low - cursor)
        cursor = high + 1
        if cursor > end:
            return gap
    return max(gap, end - cursor + 1)


@dataclass(frozen=True, slots=True)
class Lifespan:
    """The days a subject existed; ``NEVER`` / ``FOREVER`` where no bound is known."""

    start: int = NEVER
    end: int = FOREVER

    def outside(self, span: Span) -> str | None:
        """``before_lifespan`` / ``after_lifespan`` if ``span`` lies wholly outside, else None."""
        if span[1] < self.start:
            return "before_lifespan"
        if span[0] > self.end:
            return "after_lifespan"
        return None

    def clip(self, span: Span) -> Span:
        return max(span[0], self.start), min(span[1], self.end)


def python_dates(table: pa.Table) -> pa.Table:
    """``table`` with its dates clamped to the years Python's ``date`` holds (1 to 9999).

    Wikidata dates reach far outside them (births BCE, the universe's inception, typos in
    the far future); clamping keeps every such date before (or after) every scope a chain
    asks about, which lie within the snapshot's own century."""
    low = pa.scalar(date.min, pa.date32())
    high = pa.scalar(date.max, pa.date32())
    for index, column in enumerate(table.schema):
        if pa.types.is_date32(column.type):
            clamped = pc.max_element_wise(table.column(index), low, skip_nulls=False)
            clamped = pc.min_element_wise(clamped, high, skip_nulls=False)
            table = table.set_column(index, column, clamped)
    return table


def lifespans(table: pa.Table | None) -> dict[str, Lifespan]:
    """Each subject's lifespan from ``lifespans`` rows (qid, bound, date, precision)."""
    if table is None or not table.num_rows:
        return {}
    starts: dict[str, int] = {}
    ends: dict[str, int] = {}
    for row in python_dates(table.select(["qid", "bound", "date", "precision"])).to_pylist():
        first, last = _precision_span(row["date"], row["precision"])
        if row["bound"] == "start":
            starts[row["qid"]] = min(starts.get(row["qid"], FOREVER), first)
        else:
            ends[row["qid"]] = max(ends.get(row["qid"], NEVER), last)
    return {
        qid: Lifespan(starts.get(qid, NEVER), ends.get(qid, FOREVER))
        for qid in sorted(starts.keys() | ends.keys())
    }


def _precision_span(day: date, precision: int) -> Span:
    """The first and last day a date of this precision may mean (a year covers its year)."""
    if precision >= 11:
        return day.toordinal(), day.toordinal()
    if precision == 10:
        following = date(day.year + (day.month == 12), day.month % 12 + 1, 1)
        return date(day.year, day.month, 1).toordinal(), following.toordinal() - 1
    unit = 10 ** max(9 - precision, 0)
    first = max(day.year // unit * unit, 1)
    last = min(first + unit - 1, 9999)
    return date(first, 1, 1).toordinal(), date(last, 12, 31).toordinal()
