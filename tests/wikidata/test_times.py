from datetime import date

import pytest

from chronoscope_dagster.wikidata.times import (
    InvalidTime,
    epoch_day_to_gregorian,
    gregorian_to_epoch_day,
    parse_time,
)

GREGORIAN = "http://www.wikidata.org/entity/Q1985727"
JULIAN = "http://www.wikidata.org/entity/Q1985786"


def days(y: int, m: int, d: int) -> int:
    return (date(y, m, d) - date(1970, 1, 1)).days


@pytest.mark.parametrize(
    ("time", "precision", "calendar", "expected_day", "expected_precision", "year"),
    [
        ("+2010-05-17T00:00:00Z", 11, GREGORIAN, days(2010, 5, 17), 11, 2010),
        ("+2010-05-00T00:00:00Z", 10, GREGORIAN, days(2010, 5, 1), 10, 2010),
        ("+2010-00-00T00:00:00Z", 9, GREGORIAN, days(2010, 1, 1), 9, 2010),
        ("+1990-00-00T00:00:00Z", 8, GREGORIAN, days(1990, 1, 1), 8, 1990),
        ("+1901-00-00T00:00:00Z", 7, GREGORIAN, days(1901, 1, 1), 7, 1901),
        ("+00000002014-01-01T00:00:00Z", 11, GREGORIAN, days(2014, 1, 1), 11, 2014),
        ("+00000002014-00-00T00:00:00Z", 9, GREGORIAN, days(2014, 1, 1), 9, 2014),
        # a day of 00 lowers the stated precision to what the string holds
        ("+2010-05-00T00:00:00Z", 11, GREGORIAN, days(2010, 5, 1), 10, 2010),
        ("+2010-00-00T00:00:00Z", 11, GREGORIAN, days(2010, 1, 1), 9, 2010),
        # leap days
        ("+2000-02-29T00:00:00Z", 11, GREGORIAN, days(2000, 2, 29), 11, 2000),
        ("+2024-02-29T00:00:00Z", 11, GREGORIAN, days(2024, 2, 29), 11, 2024),
        # Julian day precision converts to Gregorian (13 days apart in 1917)
        ("+1917-10-25T00:00:00Z", 11, JULIAN, days(1917, 11, 7), 11, 1917),
        # Julian year precision keeps its literal year
        ("+1500-00-00T00:00:00Z", 9, JULIAN, days(1500, 1, 1), 9, 1500),
        # a missing sign means CE
        ("2001-01-01T00:00:00Z", 11, GREGORIAN, days(2001, 1, 1), 11, 2001),
    ],
)
def test_valid_times(time, precision, calendar, expected_day, expected_precision, year):
    parsed = parse_time({"time": time, "precision": precision, "calendarmodel": calendar})
    assert parsed.epoch_day == expected_day
    assert parsed.precision == expected_precision
    assert parsed.year == year


def test_bce_years_are_historical():
    # 44 BCE is astronomical year -43; 1 BCE is astronomical year 0
    ides = parse_time({"time": "-0044-03-15T00:00:00Z", "precision": 11, "calendarmodel": JULIAN})
    assert ides.year == -44
    one_bce = parse_time({"time": "-0001-01-01T00:00:00Z", "precision": 9})
    one_ce = parse_time({"time": "+0001-01-01T00:00:00Z", "precision": 9})
    assert one_ce.epoch_day - one_bce.epoch_day == 366  # astronomical year 0 is a leap year
    assert epoch_day_to_gregorian(one_bce.epoch_day) == (0, 1, 1)
    august = parse_time({"time": "-0027-00-00T00:00:00Z", "precision": 9})
    assert epoch_day_to_gregorian(august.epoch_day) == (-26, 1, 1)


def test_precision_defaults_to_day_and_calendar_to_gregorian():
    parsed = parse_time({"time": "+2020-03-04T00:00:00Z"})
    assert (parsed.precision, parsed.calendar) == (11, "gregorian")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"time": "+2010-02-30T00:00:00Z", "precision": 11}, "day does not exist"),
        ({"time": "+2023-02-29T00:00:00Z", "precision": 11}, "day does not exist"),
        ({"time": "+1900-02-29T00:00:00Z", "precision": 11}, "day does not exist"),
        ({"time": "+2010-13-01T00:00:00Z", "precision": 11}, "month out of range"),
        ({"time": "+2010-04-31T00:00:00Z", "precision": 11}, "day does not exist"),
        ({"time": "+0000-00-00T00:00:00Z", "precision": 9}, "year 0"),
        ({"time": "+13798000000-00-00T00:00:00Z", "precision": 3}, "year out of range"),
        ({"time": "2010", "precision": 9}, "malformed"),
        ({"time": "+2010-5-1T00:00:00Z", "precision": 11}, "malformed"),
        ({"time": 2010, "precision": 9}, "not a string"),
        ({"time": "+2010-01-01T00:00:00Z", "precision": 15}, "precision"),
        ({"time": "+2010-01-01T00:00:00Z", "precision": "11"}, "precision"),
        ("+2010-01-01T00:00:00Z", "not an object"),
    ],
)
def test_invalid_times(value, message):
    with pytest.raises(InvalidTime, match=message):
        parse_time(value)


def test_julian_leap_day_exists_where_gregorian_does_not():
    parsed = parse_time({"time": "+1700-02-29T00:00:00Z", "precision": 11, "calendarmodel": JULIAN})
    assert epoch_day_to_gregorian(parsed.epoch_day) == (1700, 3, 11)


def test_epoch_day_round_trip():
    for epoch_day in range(-800_000, 800_000, 997):
        assert gregorian_to_epoch_day(*epoch_day_to_gregorian(epoch_day)) == epoch_day
