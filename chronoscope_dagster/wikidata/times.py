"""Wikidata time values as typed dates.

A Wikidata time is a string such as ``+2010-05-00T00:00:00Z`` with a precision
(0 = billion years ... 9 = year, 10 = month, 11 = day) and a calendar model.
Rules, in order:

* The year may carry any number of digits (``+00000002014``) and a sign. A
  negative year is BCE in the historical count (``-0044`` is 44 BCE, year 0
  does not exist), so it becomes the astronomical year ``year + 1``.
* Month or day ``00`` means "not given": the field is read as 1 and the
  precision is lowered to what the string really states (a day-precision value
  with day ``00`` is month precision). Hours, minutes, seconds and the time
  zone are ignored, as Wikidata stores dates at midnight UTC.
* A Julian-calendar date of day precision is converted to the proleptic
  Gregorian calendar; coarser Julian dates keep their literal year and month,
  since converting the first day of a span would move it into another span.
* The result is the first day of the span the precision names, as days since
  1970-01-01 (Arrow ``date32``). The span itself is the truth stage's business.
* Anything else is invalid: a malformed string, year 0, a month above 12, a
  day that does not exist in its month, a precision outside 0-14, or a year
  beyond +-5,000,000 (outside what a date column can hold).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GREGORIAN = "Q1985727"
JULIAN = "Q1985786"
CALENDAR_NAMES = {GREGORIAN: "gregorian", JULIAN: "julian"}

PRECISION_DAY = 11
PRECISION_MONTH = 10
PRECISION_YEAR = 9
MAX_ABS_YEAR = 5_000_000

_TIME = re.compile(r"([+-]?)(\d+)-(\d\d)-(\d\d)T\d\d:\d\d:\d\dZ")


class InvalidTime(ValueError):
    """A time value that cannot be read as a date."""


@dataclass(frozen=True, slots=True)
class WikidataTime:
    """A parsed time: the first day of its span and how precise it is."""

    epoch_day: int
    year: int
    precision: int
    calendar: str

    def __str__(self) -> str:
        return f"{_iso(self.epoch_day)} (precision {self.precision}, {self.calendar})"


def parse_time(value: object) -> WikidataTime:
    """Parse a Wikidata ``time`` datavalue (the dict under ``datavalue.value``)."""
    if not isinstance(value, dict):
        raise InvalidTime(f"time value is not an object: {value!r}")
    raw = value.get("time")
    precision = value.get("precision", PRECISION_DAY)
    calendar_url = value.get("calendarmodel") or GREGORIAN
    if not isinstance(raw, str):
        raise InvalidTime(f"time is not a string: {raw!r}")
    if not isinstance(precision, int) or isinstance(precision, bool) or not 0 <= precision <= 14:
        raise InvalidTime(f"precision out of range: {precision!r}")
    calendar_qid = str(calendar_url).rsplit("/", 1)[-1]
    calendar = CALENDAR_NAMES.get(calendar_qid, calendar_qid)
    return parse_time_string(raw, precision, calendar)


def parse_time_string(raw: str, precision: int, calendar: str = "gregorian") -> WikidataTime:
    match = _TIME.fullmatch(raw)
    if match is None:
        raise InvalidTime(f"malformed time string: {raw!r}")
    sign, year_digits, month_digits, day_digits = match.groups()
    year = int(year_digits) * (-1 if sign == "-" else 1)
    month, day = int(month_digits), int(day_digits)
    if year == 0:
        raise InvalidTime(f"year 0 does not exist: {raw!r}")
    if abs(year) > MAX_ABS_YEAR:
        raise InvalidTime(f"year out of range: {raw!r}")
    if month > 12:
        raise InvalidTime(f"month out of range: {raw!r}")
    if month == 0:
        precision = min(precision, PRECISION_YEAR)
        month, day = 1, 1
    elif day == 0:
        precision = min(precision, PRECISION_MONTH)
        day = 1
    astronomical_year = year + 1 if year < 0 else year
    julian = calendar == "julian"
    if day > days_in_month(astronomical_year, month, julian=julian):
        raise InvalidTime(f"day does not exist: {raw!r}")
    if julian and precision >= PRECISION_DAY:
        epoch_day = julian_to_epoch_day(astronomical_year, month, day)
    else:
        epoch_day = gregorian_to_epoch_day(astronomical_year, month, day)
    return WikidataTime(epoch_day, year, precision, calendar)


def days_in_month(year: int, month: int, *, julian: bool = False) -> int:
    if month == 2:
        leap = year % 4 == 0 if julian else year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def gregorian_to_epoch_day(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical year)."""
    y = year - (month <= 2)
    era = y // 400
    year_of_era = y - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def julian_to_epoch_day(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Julian date (astronomical year)."""
    a = (14 - month) // 12
    y = year + 4800 - a
    m = month + 12 * a - 3
    julian_day_number = day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083
    return julian_day_number - 2440588


def epoch_day_to_gregorian(epoch_day: int) -> tuple[int, int, int]:
    z = epoch_day + 719468
    era = z // 146097
    day_of_era = z - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _iso(epoch_day: int) -> str:
    year, month, day = epoch_day_to_gregorian(epoch_day)
    return f"{year:04d}-{month:02d}-{day:02d}"
