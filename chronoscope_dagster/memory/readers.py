"""Readers: what answers a question from what a memory recalled for it.

A reader is handed a :class:`Recall` per question, built from the store's rows alone (the
question as asked, the store's "now", the recalled messages with their stored stamps and
session headers), never the episode the memory was given. ``ModelReader`` puts the recall in
a registry model's prompt; ``RuleReader`` answers by the probe's rules with no model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Protocol

from chronoscope_dagster.llm.base import ChatRequest, Decoding, Message
from chronoscope_dagster.memory.store import StoredMessage
from chronoscope_dagster.probe.agents import (
    CHAT_INSTRUCTIONS,
    DEFAULT_DECODING,
    Completer,
    evidence_by_session,
    stamp,
)
from chronoscope_dagster.probe.grounding import AgentAnswer
from chronoscope_dagster.probe.longmemeval import Item, parse_date
from chronoscope_dagster.probe.rules import AnswerSpec, anchors, evaluate

MEMORY_STAMPED = " Each message starts with the date and time (UTC) your memory holds for it."
_HEADER_DATE = re.compile(r"^--- Session \d+ \((?P<date>.+)\) ---$")
_QUERY_DATE = re.compile(r"^Current Date: (?P<date>.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Recall:
    """One question as a memory hands it to its reader: the query text as asked, the store's
    "now", and the recalled messages, best match first."""

    question_id: str
    query: str
    now: datetime
    messages: tuple[StoredMessage, ...]


class Reader(Protocol):
    name: str

    def read(self, recalls: Sequence[Recall]) -> list[AgentAnswer]: ...


def memory_messages(recall: Recall) -> tuple[Message, ...]:
    """The prompt: the recalled messages in the order stored, under their session headers,
    each after its stored stamp, then the query; the store's now in the system message."""
    lines: list[str] = []
    ordered = sorted(recall.messages, key=lambda m: m.id)
    for _, group in groupby(ordered, key=lambda m: m.session_index):
        messages = list(group)
        header = messages[0].session_header
        lines += ["", header] if header else [""]
        lines += [f"[{stamp(m.stamp)}] {m.role.capitalize()}: {m.content}" for m in messages]
    system = CHAT_INSTRUCTIONS.format(stamps=MEMORY_STAMPED)
    system += f"\nCurrent date and time: {stamp(recall.now)} UTC."
    history = "\n".join(lines).strip() or "(nothing recalled)"
    return (
        ("system", system),
        ("user", f"Recalled from earlier conversations:\n\n{history}\n\n{recall.query}"),
    )


class ModelReader:
    """A registry model answering from the recall in its prompt (``chat``: a CachedChat, so
    every call is cached)."""

    def __init__(self, chat: Completer, decoding: Decoding = DEFAULT_DECODING, name: str = "model"):
        self.chat = chat
        self.decoding = decoding
        self.name = name

    def read(self, recalls: Sequence[Recall]) -> list[AgentAnswer]:
        requests = [ChatRequest(memory_messages(recall)) for recall in recalls]
        return [
            AgentAnswer("", c.error) if c.error or c.text is None else AgentAnswer(c.text.strip())
            for c in self.chat.complete(requests, self.decoding)
        ]


def printed_date(text: str, pattern: re.Pattern[str]) -> datetime | None:
    match = pattern.search(text)
    return parse_date(match["date"]) if match else None


class RuleReader:
    """The oracle reader's rules over a recall, with no model: it knows each question's answer
    spec and which messages are its evidence (as the oracle reader does), and takes every
    instant from the recall. An evidence message sits at the date printed in its session
    header where there is one (the control arm's crutch, which a model reading its prompt
    takes too), else at its stored stamp; "now" is the query's printed ``Current Date`` where
    there is one, else the store's. An anchor none of whose evidence was recalled is answered
    with an error."""

    name = "rule-reader"

    def __init__(self, items: Sequence[Item], specs: Mapping[str, AnswerSpec]) -> None:
        self.specs = dict(specs)
        self.evidence: dict[str, dict[str, frozenset[str]]] = {}
        for item in items:
            self.evidence[item.question_id] = {
                sid: frozenset(texts) for sid, texts in evidence_by_session(item).items()
            }

    def read(self, recalls: Sequence[Recall]) -> list[AgentAnswer]:
        return [self._answer(recall) for recall in recalls]

    def _answer(self, recall: Recall) -> AgentAnswer:
        spec = self.specs.get(recall.question_id)
        evidence = self.evidence.get(recall.question_id)
        if spec is None or evidence is None:
            return AgentAnswer("", f"rule reader: no answer spec for {recall.question_id}")
        instants: dict[str, datetime] = {}
        for session_id in anchors(spec):
            found = [
                printed_date(m.session_header, _HEADER_DATE) or m.stamp
                for m in sorted(recall.messages, key=lambda m: m.id)
                if m.content in evidence.get(session_id, frozenset())
            ]
            if not found:
                return AgentAnswer("", f"rule reader: evidence of {session_id} not recalled")
            instants[session_id] = found[0]
        now = printed_date(recall.query, _QUERY_DATE) or recall.now
        return AgentAnswer(evaluate(spec, instants, now).text)
