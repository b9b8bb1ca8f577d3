"""Prompting strategies a registry entry can ask for (``prompting``), mitigations of losing the
time scope of a conversation that a user can evaluate as one more model partition.

- ``plain``: the paper's system prompt and the conversation of the setting; the prediction is
  the model's output (what every entry without ``prompting`` gets, byte-identical to before).
- ``restate_scope``: the paper's rules plus a reply format, a first line stating the time
  period the current question refers to, then a last line ``Answer: <answer>``. The
  prediction is the text after the last ``Answer:`` marker (``parse_answer``); the raw output
  is kept beside it.
- ``rewrite_then_answer``: two calls per turn. The first (``REWRITE_PROMPT``, the conversation
  as the setting shows it, the current question wrapped in ``REWRITE_REQUEST``; greedy, k=1,
  at least ``REWRITE_MIN_TOKENS`` new tokens) rewrites the current question as one standalone
  question that names its subject and states its time period; its first non-empty line is
  the rewrite. The second asks the rewritten question alone under the paper's system prompt,
  with the entry's decoding.

The strategy is applied by ``inference.predict`` in every setting, explicit scope included.
"""

from __future__ import annotations

import re
from enum import StrEnum

from chronoscope_dagster.evaluation.prompts import SYSTEM_PROMPT


class Prompting(StrEnum):
    PLAIN = "plain"
    RESTATE_SCOPE = "restate_scope"
    REWRITE_THEN_ANSWER = "rewrite_then_answer"


PROMPTINGS = tuple(p.value for p in Prompting)

RESTATE_SCOPE_PROMPT = SYSTEM_PROMPT + (
    "- Reply in two lines: first the time period the current question refers to, then the "
    "answer.\n"
    "Format:\n"
    "Time period: <the time period the current question refers to>\n"
    "Answer: <only the entity or value>\n"
)
"""The paper's system prompt (its rules unchanged) with the restate-scope reply format."""

REWRITE_PROMPT = (
    "You rewrite the last question of a conversation as one standalone question.\n"
    "Important:\n"
    "- Use the conversation context.\n"
    "- Name the subject of the question instead of referring to it.\n"
    "- State the time period the question refers to: if a prior turn establishes a time "
    "period, keep that same time scope unless it is explicitly changed.\n"
    "- Reply with the rewritten question only, on one line; do not answer it.\n"
)
"""The system prompt of the rewrite call of ``rewrite_then_answer``."""

REWRITE_REQUEST = (
    "Rewrite this question as one standalone question that names its subject and states its "
    "time period (the question only): {question}"
)
"""The last user message of the rewrite call; ``{question}`` is the current question."""

REWRITE_MIN_TOKENS = 64
"""The rewrite call's ``max_new_tokens`` is at least this (the entry's if larger)."""

ANSWER_MARKER = re.compile(r"answer\s*\**\s*:", re.IGNORECASE)
"""``Answer:`` in any case, also as Markdown bold (``**Answer:**``, ``**Answer**:``)."""


def parse_answer(text: str) -> tuple[str, bool]:
    """The answer of a restate-scope reply and whether it had an ``Answer:`` line: the first
    non-empty line after the last marker, trimmed (of spaces and Markdown ``*``), or, with no
    marker, the last non-empty line of the reply (``False``)."""
    markers = list(ANSWER_MARKER.finditer(text))
    if markers:
        rest = text[markers[-1].end() :]
        lines = [line.strip().strip("*").strip() for line in rest.splitlines()]
        return next((line for line in lines if line), ""), True
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else ""), False


def clean_rewrite(text: str) -> str:
    """The rewritten question: the first non-empty line of the reply, stripped ("" if none)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
