"""Where a question's dates reach the agent: the three modes, the typed channel, and the
record of what was delivered.

======================  ==========================  ===============================
mode                    dates in the text           timestamps on the typed channel
======================  ==========================  ===============================
``None``                session headers, question   no
``TimestampsAndText``   session headers, question   yes (the control arm)
``TimestampsOnly``      none added by the harness   yes (the probe arm)
======================  ==========================  ===============================

"In the text" means the harness's own scaffolding: a header per session with its date and a
``Current Date:`` line before the question. Dates the speakers wrote stay in every mode (count
them with ``sessions_with_date_like_content``); the authored corpus has none.

On the typed channel every turn carries its session's instant (there are no per-turn times in
LongMemEval) and its 0-based session index, a synthetic header turn opens each session, and the
history carries the query time: the "now" that separates already-happened from not-yet, which
no conversation supplies on its own. A timestamp is valid time (when the exchange happened),
not the moment a system ingested it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from chronoscope_dagster.probe.dates import is_date_like
from chronoscope_dagster.probe.longmemeval import Item, question_instant, session_instants

MARKER_ROLE = "system"


class GroundingMode(StrEnum):
    NONE = "None"
    TIMESTAMPS_AND_TEXT = "TimestampsAndText"
    TIMESTAMPS_ONLY = "TimestampsOnly"

    @property
    def grounded(self) -> bool:
        return self is not GroundingMode.NONE

    @property
    def dates_in_text(self) -> bool:
        return self is not GroundingMode.TIMESTAMPS_ONLY


@dataclass(frozen=True)
class TimestampedTurn:
    role: str
    """``user``, ``assistant``, or ``system`` for a synthetic session header."""
    content: str
    timestamp: datetime
    session_index: int
    synthetic: bool = False


@dataclass(frozen=True)
class TimestampedHistory:
    turns: tuple[TimestampedTurn, ...]
    query_time: datetime


@dataclass(frozen=True)
class TimestampedEpisode:
    """One question on the typed channel: its history, its query text, and the reference
    answer that only reference systems (``oracle``, ``present_day``) may read."""

    question_id: str
    history: TimestampedHistory
    query: str
    reference_answer: str = ""


@dataclass(frozen=True)
class TextTurn:
    role: str
    content: str
    session_index: int
    synthetic: bool = False


@dataclass(frozen=True)
class TextEpisode:
    """One question with its history as text only (mode ``None``)."""

    question_id: str
    turns: tuple[TextTurn, ...]
    query: str
    reference_answer: str = ""


@dataclass(frozen=True)
class AgentAnswer:
    text: str
    error: str | None = None


@runtime_checkable
class TimestampedHistoryAgent(Protocol):
    """The typed channel. The agent receives each question's history as turns with their
    timestamps and session index, and the query time, then answers the query. A memory
    system implements it by storing every turn at ``turn.timestamp`` as valid time, and by
    answering as of ``history.query_time``; episodes are independent questions (a system
    resets between them), passed in a batch so a chat model can answer them together."""

    def answer_timestamped(self, episodes: Sequence[TimestampedEpisode]) -> list[AgentAnswer]: ...


@runtime_checkable
class TextHistoryAgent(Protocol):
    """Mode ``None``: the history as text, dates only where the text holds them."""

    def answer_text(self, episodes: Sequence[TextEpisode]) -> list[AgentAnswer]: ...


def agent_name(agent: object) -> str:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


def session_header(index: int, date_text: str | None) -> str:
    return (
        f"--- Session {index + 1} ({date_text}) ---"
        if date_text
        else f"--- Session {index + 1} ---"
    )


def query_text(item: Item, mode: GroundingMode) -> str:
    if mode.dates_in_text:
        return f"Current Date: {item.question_date}\n\n{item.question}"
    return item.question


def timestamped_episode(item: Item, mode: GroundingMode) -> TimestampedEpisode:
    """The typed-channel delivery of one item; raises UnparseableDate naming the field."""
    if not mode.grounded:
        raise ValueError("mode None delivers no timestamps; use text_episode")
    query_time = question_instant(item)
    turns: list[TimestampedTurn] = []
    for index, (instant, raw_date, session) in enumerate(
        zip(session_instants(item), item.haystack_dates, item.haystack_sessions, strict=True)
    ):
        header = session_header(index, raw_date if mode.dates_in_text else None)
        turns.append(TimestampedTurn(MARKER_ROLE, header, instant, index, synthetic=True))
        turns += [TimestampedTurn(t.role, t.content, instant, index) for t in session]
    return TimestampedEpisode(
        item.question_id,
        TimestampedHistory(tuple(turns), query_time),
        query_text(item, mode),
        str(item.answer),
    )


def text_episode(item: Item) -> TextEpisode:
    """Mode ``None``: LongMemEval's own layout, a dated header per session and the
    question after a ``Current Date:`` line; nothing is parsed, so nothing can fail."""
    turns: list[TextTurn] = []
    for index, (raw_date, session) in enumerate(
        zip(item.haystack_dates, item.haystack_sessions, strict=True)
    ):
        turns.append(TextTurn(MARKER_ROLE, session_header(index, raw_date), index, synthetic=True))
        turns += [TextTurn(t.role, t.content, index) for t in session]
    return TextEpisode(
        item.question_id, tuple(turns), query_text(item, GroundingMode.NONE), str(item.answer)
    )


def gold_sessions_only(item: Item) -> Item:
    """The item with only its evidence sessions, in their original order (the oracle's view)."""
    gold = set(item.answer_session_ids)
    keep = [i for i, sid in enumerate(item.haystack_session_ids) if sid in gold]
    return replace(
        item,
        haystack_session_ids=tuple(item.haystack_session_ids[i] for i in keep),
        haystack_dates=tuple(item.haystack_dates[i] for i in keep),
        haystack_sessions=tuple(item.haystack_sessions[i] for i in keep),
    )


@dataclass(frozen=True)
class DeliveredRecord:
    """What a run actually delivered, counted from the episodes it built.

    ``questions``: questions delivered; ``sessions_timestamped`` / ``turns_timestamped``:
    sessions and conversation turns that went through the typed channel (synthetic headers
    not counted; 0 in mode None); ``earliest`` / ``latest``: the extreme turn timestamps (ISO
    8601, UTC), None when nothing was timestamped; ``in_text_dates_removed``: the harness's
    dates were left out of the text; ``sessions_with_date_like_content``: delivered sessions
    whose messages themselves hold a date-like string, which no mode can remove.
    """

    mode: str
    questions: int
    sessions: int
    sessions_timestamped: int
    turns_timestamped: int
    earliest: str | None
    latest: str | None
    in_text_dates_removed: bool
    sessions_with_date_like_content: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def delivered_record(
    mode: GroundingMode, items: Sequence[Item], episodes: Sequence[TimestampedEpisode] = ()
) -> DeliveredRecord:
    stamps = [
        turn.timestamp
        for episode in episodes
        for turn in episode.history.turns
        if not turn.synthetic
    ]
    sessions_timestamped = sum(
        len({turn.session_index for turn in episode.history.turns}) for episode in episodes
    )
    dated = sum(
        any(is_date_like(turn.content) for turn in session)
        for item in items
        for session in item.haystack_sessions
    )
    return DeliveredRecord(
        mode=mode.value,
        questions=len(items),
        sessions=sum(len(item.haystack_sessions) for item in items),
        sessions_timestamped=sessions_timestamped,
        turns_timestamped=len(stamps),
        earliest=min(stamps).isoformat() if stamps else None,
        latest=max(stamps).isoformat() if stamps else None,
        in_text_dates_removed=not mode.dates_in_text,
        sessions_with_date_like_content=dated,
    )
