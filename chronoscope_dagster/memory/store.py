"""One episode's memory in SQLite: its sessions, its messages each with the instant it is
stored at, the store's "now", and FTS5 retrieval over the messages' text.

Only a message's text is indexed, never its stamp, so what is recalled for a question does not
depend on the time stored: two stores holding the same messages at different instants recall
the same ones in the same order (bm25, ties by insertion order). A session keeps its header
(the harness's marker turn, dated in the control arm and not in the probe arm) and a recalled
message comes back with it, as a retrieved chunk keeps its conversation's title. Instants are
stored as ISO 8601 text in UTC.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (session_index INTEGER PRIMARY KEY, header TEXT NOT NULL);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_index INTEGER NOT NULL REFERENCES sessions (session_index),
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    stamp TEXT NOT NULL
);
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    content, content = 'messages', content_rowid = 'id', tokenize = 'porter unicode61'
);
"""
_TERM = re.compile(r"\w+")
PREFIX = 4
"""A query word longer than this also matches any word beginning with its first ``PREFIX``
letters (a crude stem: "dental" finds "dentist", which Porter's stemmer does not)."""


@dataclass(frozen=True)
class StoredMessage:
    id: int
    session_index: int
    session_header: str
    role: str
    content: str
    stamp: datetime


def match_expression(query: str) -> str:
    """Every distinct word of ``query`` as a quoted FTS5 term, and its prefix where it is
    longer than ``PREFIX``, joined by OR ("" if none)."""
    terms: list[str] = []
    for word in dict.fromkeys(_TERM.findall(query.casefold())):
        terms.append(f'"{word}"')
        if len(word) > PREFIX:
            terms.append(f'"{word[:PREFIX]}"*')
    return " OR ".join(terms)


class MessageStore:
    """A SQLite database (in memory unless ``path`` names a file), closed on leaving a
    ``with`` block."""

    def __init__(self, path: str = ":memory:") -> None:
        self._connection = sqlite3.connect(path)
        self._connection.executescript(SCHEMA)

    def __enter__(self) -> MessageStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def add_session(self, session_index: int, header: str) -> None:
        self._connection.execute(
            "INSERT INTO sessions (session_index, header) VALUES (?, ?)", (session_index, header)
        )

    def add_message(self, session_index: int, role: str, content: str, stamp: datetime) -> int:
        cursor = self._connection.execute(
            "INSERT INTO messages (session_index, role, content, stamp) VALUES (?, ?, ?, ?)",
            (session_index, role, content, stamp.isoformat()),
        )
        message_id = int(cursor.lastrowid or 0)
        self._connection.execute(
            "INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", (message_id, content)
        )
        return message_id

    def set_now(self, now: datetime) -> None:
        self._connection.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('now', ?)", (now.isoformat(),)
        )

    @property
    def now(self) -> datetime:
        row = self._connection.execute("SELECT value FROM meta WHERE key = 'now'").fetchone()
        if row is None:
            raise LookupError("the store holds no 'now'")
        return datetime.fromisoformat(row[0])

    def sessions(self) -> list[tuple[int, str]]:
        return self._connection.execute(
            "SELECT session_index, header FROM sessions ORDER BY session_index"
        ).fetchall()

    def messages(self) -> list[StoredMessage]:
        """Every stored message, in the order it was stored."""
        rows = self._connection.execute(
            """SELECT m.id, m.session_index, s.header, m.role, m.content, m.stamp
               FROM messages m JOIN sessions s USING (session_index) ORDER BY m.id"""
        ).fetchall()
        return [_message(row) for row in rows]

    def recall(self, query: str, k: int) -> list[StoredMessage]:
        """The ``k`` messages whose text best matches ``query`` (FTS5 bm25; ties by the order
        stored), best first; a message sharing no word with the query is never recalled."""
        expression = match_expression(query)
        if not expression or k <= 0:
            return []
        rows = self._connection.execute(
            """SELECT m.id, m.session_index, s.header, m.role, m.content, m.stamp
               FROM messages_fts f
               JOIN messages m ON m.id = f.rowid
               JOIN sessions s USING (session_index)
               WHERE messages_fts MATCH ?
               ORDER BY bm25(messages_fts), m.id
               LIMIT ?""",
            (expression, k),
        ).fetchall()
        return [_message(row) for row in rows]


def _message(row: tuple[int, int, str, str, str, str]) -> StoredMessage:
    message_id, session_index, header, role, content, stamp = row
    return StoredMessage(
        message_id, session_index, header, role, content, datetime.fromisoformat(stamp)
    )
