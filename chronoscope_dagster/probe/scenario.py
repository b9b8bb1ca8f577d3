"""From a scenario (sessions at chosen instants, a question, an answer rule) to a LongMemEval
item whose gold is computed, never typed.

Both the authored corpus and the generator go through :func:`build_item`: the session dates are
formatted with their computed weekday, the session ids are ``<question id>-s<k>``, and the
answer is the rule evaluated against the dates as written in the item, so the arithmetic in the
answers cannot drift from the timestamps the harness delivers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from chronoscope_dagster.probe.longmemeval import (
    Item,
    Turn,
    format_date,
    question_instant,
    session_instants,
)
from chronoscope_dagster.probe.rules import AnswerSpec, Gold, RuleError, evaluate, spec_from_json

PROBE_TYPES = ("temporal-as-of", "temporal-current", "prospective-memory")
_INSTANT = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})$")


@dataclass(frozen=True)
class SessionDraft:
    at: datetime
    turns: tuple[Turn, ...]
    gold: bool


def parse_instant(text: str, where: str = "instant") -> datetime:
    """``YYYY-MM-DD HH:MM`` as written in the corpus file, read as UTC."""
    match = _INSTANT.match(str(text))
    if not match:
        raise RuleError(f"{where}: {text!r} is not 'YYYY-MM-DD HH:MM'")
    year, month, day, hour, minute = (int(part) for part in match.groups())
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError as error:
        raise RuleError(f"{where}: {text!r}: {error}") from None


def session_id(question_id: str, number: int) -> str:
    return f"{question_id}-s{number}"


def gold_for(item: Item, spec: AnswerSpec) -> Gold:
    """The spec evaluated against the item's own timestamps."""
    instants = dict(zip(item.haystack_session_ids, session_instants(item), strict=True))
    return evaluate(spec, instants, question_instant(item))


def build_item(
    question_id: str,
    question_type: str,
    question: str,
    asked_at: datetime,
    sessions: Sequence[SessionDraft],
    answer: Mapping[str, Any],
) -> tuple[Item, AnswerSpec]:
    """The item and its answer spec (anchors named by session id)."""
    ids = [session_id(question_id, number) for number in range(1, len(sessions) + 1)]

    def by_number(number: int) -> str:
        if not 1 <= number <= len(ids):
            raise RuleError(f"{question_id}: answer names session {number} of {len(ids)}")
        return ids[number - 1]

    spec = spec_from_json(dict(answer), by_number, where=f"{question_id}: answer")
    item = Item(
        question_id=question_id,
        question_type=question_type,
        question=question,
        question_date=format_date(asked_at),
        answer="",
        haystack_session_ids=tuple(ids),
        haystack_dates=tuple(format_date(session.at) for session in sessions),
        haystack_sessions=tuple(session.turns for session in sessions),
        answer_session_ids=tuple(i for i, s in zip(ids, sessions, strict=True) if s.gold),
    )
    return replace(item, answer=gold_for(item, spec).text), spec
