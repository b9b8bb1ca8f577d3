"""Dates written as text: the detector that keeps them out of the corpus, and the reader that
finds them in a model's answer.

The detector flags text that would let a system with no notion of time place a message on the
calendar without its timestamp. It is stricter than the anchor's (years and numeric dates only):

- ``year``: a word-bounded 19xx or 20xx, decades included ("2024", "the 1990s"); like the anchor
  it also flags amounts such as "2000 dollars", so the corpus writes numbers in words;
- ``short_year``: an apostrophe year ("summer of '24");
- ``iso_date``: year-month-day with ``-``, ``/`` or ``.``, a time after it allowed;
- ``numeric_date``: day-month-year or month-day-year with ``-``, ``/`` or ``.``;
- ``day_month``: a slash pair that reads as a day and a month ("05/06", "3/4"); "24/7" is exempt,
  fractions ("1/2") are flagged on purpose: the corpus writes "half";
- ``month_day`` / ``day_month_name``: a month name (full or abbreviated) with a day number in
  either order, digits or ordinal words ("March 3", "3rd of March", "the third of March",
  "Mar. 3rd"). "May" counts only capitalised, so "you may 3..." is not a date.

Not flagged, by decision: relative phrases ("three weeks from today", "the first Monday of next
month", "on the 3rd" with no month), which are what needs a timestamp; weekday names; a month
name alone ("since March"); clock times ("at 3 pm", "19:45"); ranges ("2-3 times"); numbers
that are not years ("Room 101", "3rd floor").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70}
_ORDINAL_UNITS = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
ORDINAL_WORDS: dict[str, int] = {word: n for n, word in enumerate(_ORDINAL_UNITS, 1)}
ORDINAL_WORDS |= {"twentieth": 20, "thirtieth": 30}
for _n, _word in enumerate(_ORDINAL_UNITS[:9], 1):
    ORDINAL_WORDS[f"twenty-{_word}"] = 20 + _n
    ORDINAL_WORDS[f"twenty {_word}"] = 20 + _n
ORDINAL_WORDS["thirty-first"] = ORDINAL_WORDS["thirty first"] = 31

_MONTH_ALTERNATIVES = "|".join(sorted((m for m in MONTHS if m != "may"), key=len, reverse=True))
MONTH = rf"(?:(?i:{_MONTH_ALTERNATIVES})\.?|May|MAY)"
DAY_NUMBER = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
ORDINAL = "(?i:" + "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True)) + ")"
DAY = rf"(?:{DAY_NUMBER}|{ORDINAL})"

DETECTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iso_date", re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?\b")),
    ("numeric_date", re.compile(r"\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b")),
    ("year", re.compile(r"\b(?:19|20)\d{2}s?\b")),
    ("short_year", re.compile(r"(?<![\w'’])['’]\d{2}s?\b")),
    ("day_month", re.compile(r"(?<![\w/.])(\d{1,2})/(\d{1,2})(?![\w/]|\.\d)")),
    ("month_day", re.compile(rf"\b{MONTH}\s+(?:the\s+)?{DAY}\b")),
    ("day_month_name", re.compile(rf"\b{DAY}\s+(?:(?:day\s+)?of\s+)?{MONTH}(?![A-Za-z])")),
)


@dataclass(frozen=True)
class DateMention:
    rule: str
    text: str
    start: int


def date_mentions(text: str) -> list[DateMention]:
    """Every date-like span in ``text``; spans already claimed by an earlier rule are skipped."""
    found: list[DateMention] = []
    taken: list[tuple[int, int]] = []
    for rule, pattern in DETECTORS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            if rule == "day_month" and not _day_month_pair(int(match[1]), int(match[2])):
                continue
            taken.append((start, end))
            found.append(DateMention(rule, match.group(0), start))
    return sorted(found, key=lambda m: m.start)


def is_date_like(text: str) -> bool:
    return bool(date_mentions(text))


def _day_month_pair(first: int, second: int) -> bool:
    if (first, second) == (24, 7):
        return False
    return 1 <= first <= 31 and 1 <= second <= 31 and min(first, second) <= 12


def format_day(day: date) -> str:
    """``27 April 2026``: the form every gold answer uses."""
    return f"{day.day} {MONTH_NAMES[day.month - 1]} {day.year}"


def number_word(word: str) -> int | None:
    """0-99 in words ("eleven", "twenty-one"), or None."""
    word = word.lower().replace(" ", "-")
    if word in _UNITS:
        return _UNITS.index(word)
    if word in _TENS:
        return _TENS[word]
    tens, _, unit = word.partition("-")
    if tens in _TENS and unit in _UNITS[1:10]:
        return _TENS[tens] + _UNITS.index(unit)
    return None


NUMBER_WORD = (
    r"(?:(?:"
    + "|".join(_TENS)
    + r")(?:[- ](?:"
    + "|".join(_UNITS[1:10])
    + r"))?|"
    + "|".join(sorted(_UNITS, key=len, reverse=True))
    + ")"
)
_YEAR = r"(?P<year>\d{4})"
_ANSWER_DATES = (
    re.compile(r"\b(?P<year>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<a>\d{1,2})[-/.](?P<b>\d{1,2})[-/.](?P<year>\d{2}|\d{4})\b"),
    re.compile(
        rf"\b(?:the\s+)?(?P<day>{DAY})\s+(?:(?:day\s+)?of\s+)?(?P<month>{MONTH})(?![A-Za-z])"
        rf"(?:,?\s+{_YEAR}\b)?"
    ),
    re.compile(rf"\b(?P<month>{MONTH})\s+(?:the\s+)?(?P<day>{DAY})\b(?:,?\s+{_YEAR}\b)?"),
)


def _day_value(token: str) -> int:
    token = token.lower()
    if token in ORDINAL_WORDS:
        return ORDINAL_WORDS[token]
    return int(re.sub(r"\D", "", token))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def extract_dates(text: str, near: date) -> list[date]:
    """Calendar dates written in an answer. A date without a year takes the year that puts it
    nearest ``near``; a numeric date that reads both day-first and month-first gives both."""
    found: list[date] = []
    taken: list[tuple[int, int]] = []
    for number, pattern in enumerate(_ANSWER_DATES):
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue
            taken.append((start, end))
            parts = match.groupdict()
            year = int(parts["year"]) if parts.get("year") else None
            if year is not None and year < 100:
                year += 2000
            if number == 0:
                candidates = [(int(parts["m"]), int(parts["d"]))]
            elif number == 1:
                a, b = int(parts["a"]), int(parts["b"])
                candidates = [(b, a), (a, b)]
            else:
                candidates = [
                    (MONTHS[parts["month"].lower().rstrip(".")], _day_value(parts["day"]))
                ]
            for month, day in candidates:
                years = [year] if year is not None else [near.year - 1, near.year, near.year + 1]
                options = [d for y in years if (d := _safe_date(y, month, day))]
                if options:
                    found.append(min(options, key=lambda d: abs((d - near).days)))
    return found
