"""LongMemEval's JSON shape, both ways, and its session dates.

A file is a bare JSON array of items. Each item has ``question_id``, ``question_type``,
``question``, ``question_date``, ``answer`` (a string, or a number in a few upstream items),
``haystack_session_ids``, ``haystack_dates`` and ``haystack_sessions`` (a list of sessions, a
session a list of ``{role, content, has_answer?}`` turns) and ``answer_session_ids``. Upstream
marks ``has_answer`` only on evidence turns; this project's corpus writes it on every turn. Keys
this module does not know are kept, so a file round-trips.

Dates look like ``2023/05/20 (Sat) 02:21``. They are read as UTC and without a locale: the
weekday label is matched by pattern and ignored (the calendar date wins over a wrong label), and
a date that cannot be read is an error naming the question, the field and the value, never a
placeholder: a placeholder would make a question unanswerable and still score it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chronoscope_dagster.files import atomic_write

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
ITEM_KEYS = (
    "question_id",
    "question_type",
    "question",
    "question_date",
    "answer",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
)

_DATE = re.compile(
    r"^\s*(?P<y>\d{4})[/-](?P<m>\d{1,2})[/-](?P<d>\d{1,2})"
    r"(?:\s*\((?P<label>[A-Za-z]{3,9})\))?"
    r"(?:(?:\s+|T)(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?)?"
    r"\s*(?:Z|UTC|\+00:?00)?\s*$"
)


class FormatError(ValueError):
    """A file or an item is not in LongMemEval's shape; the message says where."""


class UnparseableDate(ValueError):
    """A session or question date that cannot be read; a grounded run stops on it."""

    def __init__(self, question_id: str, field: str, value: object) -> None:
        self.question_id = question_id
        self.field = field
        self.value = value
        super().__init__(
            f"question {question_id!r}: field {field} holds {value!r}, which is not a date "
            "(expected e.g. '2023/05/20 (Sat) 02:21', read as UTC); fix the entry or run it "
            "with mode None"
        )


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    has_answer: bool | None = None
    """None when the key is absent (upstream writes it only where true)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.has_answer is not None:
            record["has_answer"] = self.has_answer
        record.update(self.extra)
        return record


@dataclass(frozen=True)
class Item:
    question_id: str
    question_type: str
    question: str
    question_date: str
    answer: str | int | float
    haystack_session_ids: tuple[str, ...]
    haystack_dates: tuple[str, ...]
    haystack_sessions: tuple[tuple[Turn, ...], ...]
    answer_session_ids: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_abstention(self) -> bool:
        return "_abs" in self.question_id

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "question_id": self.question_id,
            "question_type": self.question_type,
            "question": self.question,
            "question_date": self.question_date,
            "answer": self.answer,
            "haystack_session_ids": list(self.haystack_session_ids),
            "haystack_dates": list(self.haystack_dates),
            "haystack_sessions": [
                [turn.to_json() for turn in session] for session in self.haystack_sessions
            ],
            "answer_session_ids": list(self.answer_session_ids),
        }
        record.update(self.extra)
        return record


def parse_date(value: str) -> datetime | None:
    """A LongMemEval date as an aware UTC instant, or None when it is not one. Date-only
    values are midnight. The weekday label, when present, is not checked."""
    if not isinstance(value, str):
        return None
    match = _DATE.match(value)
    if not match:
        return None
    parts = match.groupdict()
    try:
        return datetime(
            int(parts["y"]),
            int(parts["m"]),
            int(parts["d"]),
            int(parts["H"] or 0),
            int(parts["M"] or 0),
            int(parts["S"] or 0),
            tzinfo=UTC,
        )
    except ValueError:
        return None


def weekday_label(value: str) -> str | None:
    """The weekday label written in a date, if any (``Sat`` in ``2023/05/20 (Sat) 02:21``)."""
    match = _DATE.match(value) if isinstance(value, str) else None
    return match.group("label") if match else None


def label_matches(label: str, instant: datetime) -> bool:
    index = instant.weekday()
    return label.lower() in (WEEKDAYS[index].lower(), WEEKDAY_NAMES[index].lower())


def format_date(instant: datetime) -> str:
    """``YYYY/MM/DD (Ddd) HH:MM`` with an English weekday whatever the locale."""
    instant = instant.astimezone(UTC)
    return (
        f"{instant.year:04d}/{instant.month:02d}/{instant.day:02d} "
        f"({WEEKDAYS[instant.weekday()]}) {instant.hour:02d}:{instant.minute:02d}"
    )


def question_instant(item: Item) -> datetime:
    instant = parse_date(item.question_date)
    if instant is None:
        raise UnparseableDate(item.question_id, "question_date", item.question_date)
    return instant


def session_instants(item: Item) -> list[datetime]:
    """One instant per session, in file order; the first unreadable one raises."""
    instants = []
    for index, value in enumerate(item.haystack_dates):
        instant = parse_date(value)
        if instant is None:
            raise UnparseableDate(item.question_id, f"haystack_dates[{index}]", value)
        instants.append(instant)
    return instants


def check_dates(items: Iterable[Item]) -> None:
    """Raise on the first date that cannot be read, before any model is called."""
    for item in items:
        question_instant(item)
        session_instants(item)


def item_from_json(record: Any, where: str = "item") -> Item:
    if not isinstance(record, dict):
        raise FormatError(f"{where}: an item must be an object, got {type(record).__name__}")
    question_id = record.get("question_id")
    if isinstance(question_id, str):
        where = f"{where} ({question_id})"
    missing = [key for key in ITEM_KEYS if key not in record]
    if missing:
        raise FormatError(f"{where}: missing field(s) {', '.join(missing)}")
    for key in ("question_id", "question_type", "question", "question_date"):
        if not isinstance(record[key], str):
            raise FormatError(f"{where}: field {key} must be a string")
    if not isinstance(record["answer"], str | int | float) or isinstance(record["answer"], bool):
        raise FormatError(f"{where}: field answer must be a string or a number")
    for key in ("haystack_session_ids", "haystack_dates", "answer_session_ids"):
        values = record[key]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise FormatError(f"{where}: field {key} must be a list of strings")
    sessions = record["haystack_sessions"]
    if not isinstance(sessions, list) or not all(isinstance(s, list) for s in sessions):
        raise FormatError(f"{where}: field haystack_sessions must be a list of lists")
    return Item(
        question_id=question_id,
        question_type=record["question_type"],
        question=record["question"],
        question_date=record["question_date"],
        answer=record["answer"],
        haystack_session_ids=tuple(record["haystack_session_ids"]),
        haystack_dates=tuple(record["haystack_dates"]),
        haystack_sessions=tuple(
            tuple(
                _turn(turn, f"{where}: haystack_sessions[{i}][{j}]")
                for j, turn in enumerate(session)
            )
            for i, session in enumerate(sessions)
        ),
        answer_session_ids=tuple(record["answer_session_ids"]),
        extra={key: value for key, value in record.items() if key not in ITEM_KEYS},
    )


def _turn(record: Any, where: str) -> Turn:
    if not isinstance(record, dict):
        raise FormatError(f"{where}: a turn must be an object")
    role, content = record.get("role"), record.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise FormatError(f"{where}: a turn needs string fields role and content")
    has_answer = record.get("has_answer")
    if has_answer is not None and not isinstance(has_answer, bool):
        raise FormatError(f"{where}: field has_answer must be true or false")
    extra = {k: v for k, v in record.items() if k not in ("role", "content", "has_answer")}
    return Turn(role, content, has_answer, extra)


def items_from_json(document: Any, source: str = "LongMemEval file") -> list[Item]:
    if not isinstance(document, list):
        raise FormatError(f"{source}: expected a JSON array of items")
    return [item_from_json(record, f"{source}: item #{n}") for n, record in enumerate(document, 1)]


def load_items(path: str | Path) -> list[Item]:
    """Every item of a LongMemEval-shaped file (upstream's or this project's)."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise FormatError(f"{path}: not valid JSON: {error}") from error
    return items_from_json(document, str(path))


def items_to_json(items: Sequence[Item]) -> str:
    """The file text: 2-space indent, non-ASCII kept, a trailing newline; stable byte for
    byte for the same items."""
    return json.dumps([item.to_json() for item in items], indent=2, ensure_ascii=False) + "\n"


def dump_items(items: Sequence[Item], path: str | Path) -> Path:
    """Write items as a LongMemEval file, through a temporary name so a reader never sees half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as temporary:
        temporary.write_text(items_to_json(items), encoding="utf-8", newline="\n")
    return path
