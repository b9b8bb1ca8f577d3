"""The agents a probe run uses: a chat model reading the history in context, the oracle reader
(the ceiling), and the timestamp-blind floor.

The chat agent and the oracle reader place every message in time perfectly by construction: the
chat agent writes each turn's instant into its prompt, the oracle reader computes from the
instants it was handed. They show what the timestamps make possible; neither is a memory system,
and a memory system is measured by implementing the typed channel itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from chronoscope_dagster.llm.base import ChatRequest, Completion, Decoding, Message
from chronoscope_dagster.llm.registry import ModelSpec
from chronoscope_dagster.llm.session import open_chat
from chronoscope_dagster.probe.grounding import (
    AgentAnswer,
    TextEpisode,
    TimestampedEpisode,
    TimestampedHistory,
    TimestampedHistoryAgent,
    agent_name,
)
from chronoscope_dagster.probe.longmemeval import WEEKDAYS, Item
from chronoscope_dagster.probe.rules import AnswerSpec, anchors, evaluate

CHAT_INSTRUCTIONS = (
    "You are an assistant with a memory of your earlier conversations with the user, shown "
    "below, oldest first.{stamps} Answer the user's question from them. Give a date as day, "
    "month and year; begin a yes-or-no answer with Yes or No; give a count as a number with "
    "its unit. Answer in one short sentence."
)
STAMPED = " Each message starts with the date and time (UTC) it was sent."
DEFAULT_DECODING = Decoding(max_new_tokens=48)


class Completer(Protocol):
    """What the chat agent and the judge call: a ChatBackend or a CachedChat."""

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]: ...


def stamp(instant: datetime) -> str:
    """``2026-03-03 (Tue) 18:00``: how the chat agent writes an instant into its prompt."""
    return f"{instant:%Y-%m-%d} ({WEEKDAYS[instant.weekday()]}) {instant:%H:%M}"


def _answers(completions: Sequence[Completion]) -> list[AgentAnswer]:
    return [
        AgentAnswer("", c.error) if c.error or c.text is None else AgentAnswer(c.text.strip())
        for c in completions
    ]


def evidence_by_session(item: Item) -> dict[str, tuple[str, ...]]:
    """Per session of ``item``, the texts of its turns marked as holding the answer (all of
    its turns where none is marked): what a reader dates an anchor session by."""
    evidence = {}
    for sid, session in zip(item.haystack_session_ids, item.haystack_sessions, strict=False):
        marked = tuple(t.content for t in session if t.has_answer)
        evidence[sid] = marked or tuple(t.content for t in session)
    return evidence


class ChatAgent:
    """A chat model answering from the whole history in its prompt. Every call goes through
    ``chat`` (wrap a backend in CachedChat so every call is cached)."""

    def __init__(self, chat: Completer, decoding: Decoding = DEFAULT_DECODING, name: str = "chat"):
        self.chat = chat
        self.decoding = decoding
        self.name = name

    def timestamped_messages(self, episode: TimestampedEpisode) -> tuple[Message, ...]:
        lines = []
        for turn in episode.history.turns:
            if turn.synthetic:
                lines += ["", turn.content]
            else:
                lines.append(f"[{stamp(turn.timestamp)}] {turn.role.capitalize()}: {turn.content}")
        system = CHAT_INSTRUCTIONS.format(stamps=STAMPED)
        system += f"\nCurrent date and time: {stamp(episode.history.query_time)} UTC."
        return self._messages(system, lines, episode.query)

    def text_messages(self, episode: TextEpisode) -> tuple[Message, ...]:
        lines = []
        for turn in episode.turns:
            if turn.synthetic:
                lines += ["", turn.content]
            else:
                lines.append(f"{turn.role.capitalize()}: {turn.content}")
        return self._messages(CHAT_INSTRUCTIONS.format(stamps=""), lines, episode.query)

    @staticmethod
    def _messages(system: str, lines: list[str], query: str) -> tuple[Message, ...]:
        history = "\n".join(lines).strip()
        return (
            ("system", system),
            ("user", f"Earlier conversations:\n\n{history}\n\n{query}"),
        )

    def answer_timestamped(self, episodes: Sequence[TimestampedEpisode]) -> list[AgentAnswer]:
        requests = [
            ChatRequest(self.timestamped_messages(e), gold=e.reference_answer) for e in episodes
        ]
        return _answers(self.chat.complete(requests, self.decoding))

    def answer_text(self, episodes: Sequence[TextEpisode]) -> list[AgentAnswer]:
        requests = [ChatRequest(self.text_messages(e), gold=e.reference_answer) for e in episodes]
        return _answers(self.chat.complete(requests, self.decoding))


class OracleReader:
    """The ceiling: reads the answer spec of each question and evaluates it at the instants
    the typed channel delivered for the evidence turns (found by their text), as of the query
    time. Deterministic, no model. With true timestamps it scores 1.0 on every item that has
    a spec; a question without one is answered with an error."""

    name = "oracle-reader"

    def __init__(self, items: Sequence[Item], specs: Mapping[str, AnswerSpec]) -> None:
        self.specs = dict(specs)
        self.evidence: dict[str, dict[str, tuple[str, ...]]] = {}
        for item in items:
            self.evidence[item.question_id] = evidence_by_session(item)

    def answer_timestamped(self, episodes: Sequence[TimestampedEpisode]) -> list[AgentAnswer]:
        return [self._answer(episode) for episode in episodes]

    def _answer(self, episode: TimestampedEpisode) -> AgentAnswer:
        spec = self.specs.get(episode.question_id)
        evidence = self.evidence.get(episode.question_id)
        if spec is None or evidence is None:
            return AgentAnswer("", f"oracle reader: no answer spec for {episode.question_id}")
        delivered: dict[str, datetime] = {}
        for turn in episode.history.turns:
            if not turn.synthetic:
                delivered.setdefault(turn.content, turn.timestamp)
        instants = {}
        for session_id in anchors(spec):
            found = [delivered[c] for c in evidence.get(session_id, ()) if c in delivered]
            if not found:
                return AgentAnswer("", f"oracle reader: evidence of {session_id} not delivered")
            instants[session_id] = found[0]
        return AgentAnswer(evaluate(spec, instants, episode.history.query_time).text)


class BlindFloor:
    """A system that stamps messages with ingestion time instead of the time they were said:
    every turn is restamped as if ingested one per second just before the query (order kept,
    calendar position lost), then handed to ``inner``. What it still gets right is what
    ordering and guessing earn."""

    def __init__(self, inner: TimestampedHistoryAgent, name: str | None = None) -> None:
        if not isinstance(inner, TimestampedHistoryAgent):
            raise TypeError(f"agent {agent_name(inner)!r} does not take timestamped histories")
        self.inner = inner
        self.name = name or f"{agent_name(inner)}+ingestion-time"

    @staticmethod
    def restamp(history: TimestampedHistory) -> TimestampedHistory:
        count = len(history.turns)
        return replace(
            history,
            turns=tuple(
                replace(turn, timestamp=history.query_time - timedelta(seconds=count - position))
                for position, turn in enumerate(history.turns)
            ),
        )

    def answer_timestamped(self, episodes: Sequence[TimestampedEpisode]) -> list[AgentAnswer]:
        blind = [replace(e, history=self.restamp(e.history)) for e in episodes]
        return self.inner.answer_timestamped(blind)


@contextmanager
def chat_agent_for_model(
    spec: ModelSpec, cache_path: str | Path | None, decoding: Decoding | None = None
) -> Iterator[ChatAgent]:
    """A ChatAgent over a registry model behind the on-disk response cache (none when
    ``cache_path`` is None), closed on leaving; ``decoding`` defaults to the model's own, one
    candidate."""
    with open_chat(spec, cache_path) as chat:
        yield ChatAgent(chat, decoding or replace(spec.decoding, k=1), name=spec.name)
