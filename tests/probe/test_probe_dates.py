"""The date-like detector (stricter than the anchor's) and the answer-date reader."""

from __future__ import annotations

from datetime import date

import pytest

from chronoscope_dagster.probe.dates import date_mentions, extract_dates, is_date_like, number_word


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("We met in 2024.", "year"),
        ("back in the 1990s", "year"),
        ("that was the summer of '19", "short_year"),
        ("2024-05-06", "iso_date"),
        ("2026/03/02 at noon", "iso_date"),
        ("2023/05/20 (Sat) 02:21", "iso_date"),
        ("2024-05-06T10:00 sharp", "iso_date"),
        ("on 3/4/26", "numeric_date"),
        ("12-31-2024", "numeric_date"),
        ("20.05.2023", "numeric_date"),
        ("see you 05/06", "day_month"),
        ("about 1/2 of it", "day_month"),
        ("March 3", "month_day"),
        ("on March 3rd we left", "month_day"),
        ("Mar. 3", "month_day"),
        ("march the 3rd", "month_day"),
        ("Sept 21st", "month_day"),
        ("May 5", "month_day"),
        ("December twenty-first", "month_day"),
        ("the 3rd of March", "day_month_name"),
        ("3 March", "day_month_name"),
        ("21st Dec", "day_month_name"),
        ("the third of March", "day_month_name"),
        ("on the first of May", "day_month_name"),
        ("costs 2000 dollars", "year"),
    ],
)
def test_date_like_text_is_flagged(text, rule):
    mentions = date_mentions(text)
    assert mentions, text
    assert mentions[0].rule == rule


@pytest.mark.parametrize(
    "text",
    [
        "three weeks from today",
        "the first Monday of next month",
        "a fortnight from tomorrow",
        "a week on Friday",
        "at 3 pm",
        "19:45",
        "Room 101",
        "the 3rd floor",
        "on the 3rd",
        "24/7 support",
        "2-3 times a week",
        "1,999 steps",
        "since March",
        "you may 3D-print it",
        "We may first check the forecast",
        "next Tuesday",
        "it costs 45 pounds",
        "ten days from now",
        "forty-five-day trial",
        "the third time this week",
        "three marbles",
    ],
)
def test_relative_and_non_date_text_is_not_flagged(text):
    assert not is_date_like(text), date_mentions(text)


def test_every_mention_is_reported_once_with_its_position():
    mentions = date_mentions("From 2024-05-06 to March 3, or 7/8.")
    assert [(m.rule, m.text) for m in mentions] == [
        ("iso_date", "2024-05-06"),
        ("month_day", "March 3"),
        ("day_month", "7/8"),
    ]


@pytest.mark.parametrize(
    ("text", "near", "expected"),
    [
        ("It is on 27 April 2026.", date(2026, 4, 27), [date(2026, 4, 27)]),
        ("April 27th, 2026", date(2026, 4, 27), [date(2026, 4, 27)]),
        ("the 27th of April", date(2026, 4, 27), [date(2026, 4, 27)]),
        ("2026-04-27", date(2026, 4, 27), [date(2026, 4, 27)]),
        ("early January", date(2026, 1, 2), []),
        ("January 2nd", date(2025, 12, 30), [date(2026, 1, 2)]),
        ("4/5/2026", date(2026, 4, 5), [date(2026, 5, 4), date(2026, 4, 5)]),
        ("the twenty-first of June 2025", date(2025, 6, 21), [date(2025, 6, 21)]),
    ],
)
def test_dates_are_read_out_of_answers(text, near, expected):
    assert extract_dates(text, near) == expected


def test_number_words():
    assert [number_word(w) for w in ("zero", "eleven", "twenty-one", "forty", "lots")] == [
        0,
        11,
        21,
        40,
        None,
    ]
