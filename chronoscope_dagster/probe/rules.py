"""Relative time as data, and the gold answers computed from it.

A corpus file never types a date into an answer. It writes what a speaker's relative phrase
means as a rule of steps applied to the day of an anchor: a session (the moment the phrase was
said) or ``now`` (the question's moment). Steps:

- ``{days: n}``, ``{weeks: n}``: add n days or 7n days (negative goes back);
- ``{months: n}``: calendar months, the day clamped to the target month's length;
- ``{next: friday}``: the first such weekday strictly after the day;
- ``{first: monday, month: n}``, ``{last: saturday, month: n}``: the first or last such weekday
  of the month n months after the day's month (n = 1: "next month");
- ``{month_start: n}``: the 1st of the month n months after the day's month.

"A fortnight from tomorrow" said at S is ``[{days: 1}, {weeks: 2}]`` from S. Rules work on
calendar days in UTC; the time of day never moves an answer.

An answer is one of four kinds, each evaluated from the anchors' instants and the question's:
``date`` (when is the event), ``yes_no`` (has the event happened, or is it still pending, by
today), ``choice`` (which value held on a day: the option whose start is the latest on or before
it) and ``count`` (whole days, weeks or months between two events, plus a base such as an age
stated in a session). The same evaluation produces the gold at generation and the oracle
reader's answer from whatever timestamps it was given.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from chronoscope_dagster.probe.dates import format_day

NOW = "now"
WEEKDAY_INDEX = {
    name: index
    for index, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
STEP_OPS = ("days", "weeks", "months", "next", "first", "last", "month_start")
UNITS = ("days", "weeks", "months")


class RuleError(ValueError):
    """A rule or an answer spec is malformed; the message says which part."""


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def whole_months(start: date, end: date) -> int:
    months = (end.year - start.year) * 12 + end.month - start.month
    if months > 0 and end.day < start.day:
        months -= 1
    elif months < 0 and end.day > start.day:
        months += 1
    return months


@dataclass(frozen=True)
class Step:
    op: str
    n: int = 0
    weekday: int = 0

    def apply(self, day: date) -> date:
        if self.op == "days":
            return day + timedelta(days=self.n)
        if self.op == "weeks":
            return day + timedelta(weeks=self.n)
        if self.op == "months":
            return add_months(day, self.n)
        if self.op == "next":
            return day + timedelta(days=(self.weekday - day.weekday() - 1) % 7 + 1)
        first = add_months(day.replace(day=1), self.n)
        if self.op == "month_start":
            return first
        if self.op == "first":
            return first + timedelta(days=(self.weekday - first.weekday()) % 7)
        last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
        return last - timedelta(days=(last.weekday() - self.weekday) % 7)

    def to_json(self) -> dict[str, Any]:
        if self.op in ("days", "weeks", "months", "month_start"):
            return {self.op: self.n}
        name = next(k for k, v in WEEKDAY_INDEX.items() if v == self.weekday)
        if self.op == "next":
            return {"next": name}
        return {self.op: name, "month": self.n}


def parse_step(raw: Any) -> Step:
    if not isinstance(raw, dict) or not raw:
        raise RuleError(f"a step must be a mapping such as {{weeks: 3}}, got {raw!r}")
    ops = [key for key in raw if key in STEP_OPS]
    if len(ops) != 1 or set(raw) - {ops[0], "month"}:
        raise RuleError(f"a step needs exactly one of {', '.join(STEP_OPS)}: {raw!r}")
    op = ops[0]
    value = raw[op]
    if op in ("days", "weeks", "months", "month_start"):
        if not isinstance(value, int) or isinstance(value, bool) or "month" in raw:
            raise RuleError(f"step {op} takes one whole number: {raw!r}")
        return Step(op, value)
    weekday = WEEKDAY_INDEX.get(str(value).lower())
    if weekday is None:
        raise RuleError(f"step {op}: {value!r} is not a weekday name")
    if op == "next":
        if "month" in raw:
            raise RuleError(f"step next takes no month: {raw!r}")
        return Step(op, 0, weekday)
    month = raw.get("month", 0)
    if not isinstance(month, int) or isinstance(month, bool):
        raise RuleError(f"step {op}: month must be a whole number: {raw!r}")
    return Step(op, month, weekday)


@dataclass(frozen=True)
class Event:
    """A day: a rule applied to the day of an anchor (a session id, or ``now``)."""

    anchor: str
    rule: tuple[Step, ...] = ()

    def resolve(self, instants: Mapping[str, datetime]) -> date:
        day = instants[self.anchor].date()
        for step in self.rule:
            day = step.apply(day)
        return day

    def to_json(self) -> dict[str, Any]:
        return {"anchor": self.anchor, "rule": [step.to_json() for step in self.rule]}


@dataclass(frozen=True)
class DateAnswer:
    event: Event


@dataclass(frozen=True)
class YesNoAnswer:
    event: Event
    yes_if: str
    """``happened``: yes once the event's day is on or before today; ``pending``: yes while
    it is after today."""


@dataclass(frozen=True)
class ChoiceAnswer:
    at: Event
    options: tuple[tuple[str, Event], ...]
    """(value, the day it starts to hold)."""


@dataclass(frozen=True)
class CountAnswer:
    unit: str
    start: Event
    end: Event
    base: int = 0


AnswerSpec = DateAnswer | YesNoAnswer | ChoiceAnswer | CountAnswer


def events(spec: AnswerSpec) -> list[Event]:
    if isinstance(spec, DateAnswer | YesNoAnswer):
        return [spec.event]
    if isinstance(spec, ChoiceAnswer):
        return [spec.at, *(event for _, event in spec.options)]
    return [spec.start, spec.end]


def anchors(spec: AnswerSpec) -> list[str]:
    """The session ids the answer depends on, in first-use order."""
    seen: list[str] = []
    for event in events(spec):
        if event.anchor != NOW and event.anchor not in seen:
            seen.append(event.anchor)
    return seen


@dataclass(frozen=True)
class Gold:
    """An evaluated answer: its kind, its text, and the value the deterministic checker
    compares with. ``margin_days`` is the distance of a yes/no or choice decision from its
    boundary day; below 2 the ±1-day tolerance or the time of day could flip it."""

    kind: str
    text: str
    day: date | None = None
    yes: bool | None = None
    choice: str | None = None
    options: tuple[str, ...] = ()
    count: int | None = None
    unit: str = ""
    margin_days: int | None = None


def evaluate(spec: AnswerSpec, instants: Mapping[str, datetime], now: datetime) -> Gold:
    """The answer the spec gives when its anchors sit at ``instants`` (session id -> instant)
    and the question is asked at ``now``."""
    clock = {**instants, NOW: now}
    today = now.date()
    if isinstance(spec, DateAnswer):
        day = spec.event.resolve(clock)
        return Gold("date", format_day(day), day=day)
    if isinstance(spec, YesNoAnswer):
        day = spec.event.resolve(clock)
        happened = day <= today
        yes = happened if spec.yes_if == "happened" else not happened
        where = "today" if day == today else "before today" if day < today else "after today"
        text = f"{'Yes' if yes else 'No'} — the day that decides it is {format_day(day)}, {where}."
        return Gold("yes_no", text, day=day, yes=yes, margin_days=abs((day - today).days))
    if isinstance(spec, ChoiceAnswer):
        at = spec.at.resolve(clock)
        starts = [(value, event.resolve(clock)) for value, event in spec.options]
        holding = [(start, value) for value, start in starts if start <= at]
        choice = max(holding)[1] if holding else None
        margin = min(abs((start - at).days) for _, start in starts)
        return Gold(
            "choice",
            choice or "none of them",
            day=at,
            choice=choice,
            options=tuple(value for value, _ in spec.options),
            margin_days=margin,
        )
    start, end = spec.start.resolve(clock), spec.end.resolve(clock)
    if spec.unit == "days":
        amount = (end - start).days
    elif spec.unit == "weeks":
        amount = (end - start).days // 7
    else:
        amount = whole_months(start, end)
    count = spec.base + amount
    unit = spec.unit if abs(count) != 1 else spec.unit[:-1]
    return Gold("count", f"{count} {unit}", count=count, unit=spec.unit)


def _event(raw: Any, session_id: Callable[[int], str] | None, where: str) -> Event:
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: an event must be a mapping, got {raw!r}")
    if NOW in raw:
        if set(raw) != {NOW}:
            raise RuleError(f"{where}: a now-event is {{now: [steps]}}: {raw!r}")
        anchor, steps = NOW, raw[NOW] or []
    elif "session" in raw:
        if session_id is None or not isinstance(raw["session"], int):
            raise RuleError(f"{where}: session must be a session number: {raw!r}")
        if set(raw) - {"session", "rule"}:
            raise RuleError(f"{where}: unknown keys in {raw!r}")
        anchor, steps = session_id(raw["session"]), raw.get("rule") or []
    elif "anchor" in raw:
        anchor, steps = str(raw["anchor"]), raw.get("rule") or []
    else:
        raise RuleError(f"{where}: an event needs now, session or anchor: {raw!r}")
    if not isinstance(steps, list):
        raise RuleError(f"{where}: a rule is a list of steps: {steps!r}")
    try:
        return Event(anchor, tuple(parse_step(step) for step in steps))
    except RuleError as error:
        raise RuleError(f"{where}: {error}") from None


def spec_from_json(
    raw: Any, session_id: Callable[[int], str] | None = None, where: str = "answer"
) -> AnswerSpec:
    """An answer spec from its data form. ``session_id`` maps the 1-based ``session: k`` of
    a corpus file to a session id; exported specs name anchors by id already."""
    if not isinstance(raw, dict) or len(raw) != 1:
        raise RuleError(f"{where}: one of date, yes_no, choice, count expected, got {raw!r}")
    [(kind, body)] = raw.items()
    if kind == "date":
        return DateAnswer(_event(body, session_id, f"{where}.date"))
    if not isinstance(body, dict):
        raise RuleError(f"{where}.{kind}: a mapping expected, got {body!r}")
    if kind == "yes_no":
        if body.get("yes_if") not in ("happened", "pending") or set(body) != {"event", "yes_if"}:
            raise RuleError(f"{where}.yes_no: needs event and yes_if happened|pending")
        return YesNoAnswer(_event(body["event"], session_id, f"{where}.yes_no"), body["yes_if"])
    if kind == "choice":
        options = body.get("options")
        if not isinstance(options, list) or len(options) < 2 or set(body) != {"at", "options"}:
            raise RuleError(f"{where}.choice: needs at and two or more options")
        parsed = []
        for position, option in enumerate(options, 1):
            if not isinstance(option, dict) or not isinstance(option.get("value"), str):
                raise RuleError(f"{where}.choice option {position}: needs value and since")
            since = _event(option.get("since"), session_id, f"{where}.choice option {position}")
            parsed.append((option["value"], since))
        return ChoiceAnswer(_event(body["at"], session_id, f"{where}.choice.at"), tuple(parsed))
    if kind == "count":
        if body.get("unit") not in UNITS or not set(body) <= {"unit", "start", "end", "base"}:
            raise RuleError(f"{where}.count: needs unit ({', '.join(UNITS)}), start and end")
        base = body.get("base", 0)
        if not isinstance(base, int) or isinstance(base, bool):
            raise RuleError(f"{where}.count: base must be a whole number")
        return CountAnswer(
            body["unit"],
            _event(body.get("start"), session_id, f"{where}.count.start"),
            _event(body.get("end"), session_id, f"{where}.count.end"),
            base,
        )
    raise RuleError(f"{where}: unknown answer kind {kind!r}")


def spec_to_json(spec: AnswerSpec) -> dict[str, Any]:
    if isinstance(spec, DateAnswer):
        return {"date": spec.event.to_json()}
    if isinstance(spec, YesNoAnswer):
        return {"yes_no": {"event": spec.event.to_json(), "yes_if": spec.yes_if}}
    if isinstance(spec, ChoiceAnswer):
        return {
            "choice": {
                "at": spec.at.to_json(),
                "options": [{"value": v, "since": e.to_json()} for v, e in spec.options],
            }
        }
    return {
        "count": {
            "unit": spec.unit,
            "base": spec.base,
            "start": spec.start.to_json(),
            "end": spec.end.to_json(),
        }
    }
