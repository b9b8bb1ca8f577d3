"""Two memory systems on one SQLite store, differing only in the time they store.

Both implement the probe's typed channel. Per question they open a fresh store, write every
session header and message of the history into it, recall the top ``k`` messages for the
query (``MessageStore.recall``: FTS5 over the text, so the same messages for both), and hand
the reader a :class:`Recall` read back from the store. Nothing of the episode reaches the
reader except through the store.

- ``valid_time_memory`` stores each message at its turn's timestamp (when it was said) and the
  history's query time as "now": bitemporal in the small.
- ``ingest_time_memory`` stores each message at the moment it was ingested, as a memory layer
  that records ``created_at`` does. Its clock is deterministic: the history is ingested just
  before the question is asked, as a benchmark replays it, one message a second, the last one
  second before the query time, which is the store's "now". That is the kindest ingestion
  clock: its "now" and its order are right, so all it loses is where each message sits on the
  calendar, which is what the probe measures. A wall-clock stamp would make two runs differ
  and would move "now" as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.memory.readers import ModelReader, Reader, Recall
from chronoscope_dagster.memory.store import MessageStore
from chronoscope_dagster.probe.agents import DEFAULT_DECODING, Completer
from chronoscope_dagster.probe.dates import date_mentions
from chronoscope_dagster.probe.grounding import AgentAnswer, TimestampedEpisode, TimestampedHistory

TOP_K = 6
"""Messages recalled per question. The probe's histories hold 6 to 10 messages (7.7 on
average); at 6 the store recalls the evidence of every item of the shipped corpus."""
AUDIT_EXAMPLES = 20


class Stamping(StrEnum):
    INGEST_TIME = "ingest_time"
    VALID_TIME = "valid_time"


@dataclass(frozen=True)
class StoreAudit:
    """What a memory wrote, read back from its stores: ``date_like_messages`` counts stored
    messages whose text holds a date (the probe's corpus rule: it must stay 0),
    ``date_like_headers`` session headers that do (the control arm's are dated by design);
    the first few of each are quoted."""

    episodes: int = 0
    sessions: int = 0
    messages: int = 0
    date_like_messages: int = 0
    date_like_headers: int = 0
    message_examples: tuple[str, ...] = field(default_factory=tuple)
    header_examples: tuple[str, ...] = field(default_factory=tuple)

    def add(self, store: MessageStore) -> StoreAudit:
        sessions = store.sessions()
        messages = store.messages()
        headers = [
            f"session {index}: {mention.rule} {mention.text!r}"
            for index, header in sessions
            for mention in date_mentions(header)
        ]
        texts = [
            f"message {message.id}: {mention.rule} {mention.text!r}"
            for message in messages
            for mention in date_mentions(message.content)
        ]
        return replace(
            self,
            episodes=self.episodes + 1,
            sessions=self.sessions + len(sessions),
            messages=self.messages + len(messages),
            date_like_messages=self.date_like_messages
            + sum(bool(date_mentions(m.content)) for m in messages),
            date_like_headers=self.date_like_headers
            + sum(bool(date_mentions(header)) for _, header in sessions),
            message_examples=(*self.message_examples, *texts)[:AUDIT_EXAMPLES],
            header_examples=(*self.header_examples, *headers)[:AUDIT_EXAMPLES],
        )


def ingestion_stamps(history: TimestampedHistory, count: int) -> list[datetime]:
    return [history.query_time - timedelta(seconds=count - position) for position in range(count)]


class SQLiteMemory:
    """The store, the retrieval and the reader both systems share; ``stamping`` decides which
    time is stored. ``audit`` accumulates what every store held (``take_audit`` resets it)."""

    def __init__(
        self, reader: Reader, stamping: Stamping, *, k: int = TOP_K, name: str | None = None
    ) -> None:
        self.reader = reader
        self.stamping = Stamping(stamping)
        self.k = k
        self.name = name or f"{self.stamping.value}_memory"
        self.audit = StoreAudit()

    def ingest(self, history: TimestampedHistory) -> MessageStore:
        """A new store holding ``history`` (the caller closes it)."""
        turns = [turn for turn in history.turns if not turn.synthetic]
        if self.stamping is Stamping.VALID_TIME:
            stamps = [turn.timestamp for turn in turns]
        else:
            stamps = ingestion_stamps(history, len(turns))
        store = MessageStore()
        try:
            sessions: set[int] = set()
            position = 0
            for turn in history.turns:
                if turn.session_index not in sessions:
                    store.add_session(turn.session_index, turn.content if turn.synthetic else "")
                    sessions.add(turn.session_index)
                if not turn.synthetic:
                    store.add_message(turn.session_index, turn.role, turn.content, stamps[position])
                    position += 1
            store.set_now(history.query_time)
        except BaseException:
            store.close()
            raise
        return store

    def recall(self, episode: TimestampedEpisode) -> Recall:
        with self.ingest(episode.history) as store:
            self.audit = self.audit.add(store)
            messages = tuple(store.recall(episode.query, self.k))
            return Recall(episode.question_id, episode.query, store.now, messages)

    def answer_timestamped(self, episodes: Sequence[TimestampedEpisode]) -> list[AgentAnswer]:
        return self.reader.read([self.recall(episode) for episode in episodes])

    def take_audit(self) -> StoreAudit:
        audit, self.audit = self.audit, StoreAudit()
        return audit


def ingest_time_memory(chat: Completer, decoding: Decoding = DEFAULT_DECODING) -> SQLiteMemory:
    """Stamps each message with its ingestion time, answers through ``chat``."""
    return SQLiteMemory(ModelReader(chat, decoding), Stamping.INGEST_TIME)


def valid_time_memory(chat: Completer, decoding: Decoding = DEFAULT_DECODING) -> SQLiteMemory:
    """Stamps each message with its turn's timestamp, answers through ``chat``."""
    return SQLiteMemory(ModelReader(chat, decoding), Stamping.VALID_TIME)
