"""What a model sees at each turn under each context setting."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from chronoscope_dagster.llm.base import Message

SYSTEM_PROMPT = (
    "You are a helpful assistant that answers factual questions.\n"
    "Important:\n"
    "- Use the conversation context.\n"
    "- If a prior turn establishes a time period, keep that same time scope unless it is "
    "explicitly changed.\n"
    "- Answer with only the entity or value, no extra explanation.\n"
)
"""The paper's system prompt (App. A.2.1), five lines each ending in a newline."""


class Setting(StrEnum):
    GOLD_CONTEXT = "gold_context"
    """Earlier turns are answered with their gold."""
    SELF_CONDITIONED = "self_conditioned"
    """Earlier turns are answered with the model's own answers."""
    QUESTIONS_ONLY = "questions_only"
    """Only the current question (the paper's definition, not the reference's)."""


SETTINGS = tuple(s.value for s in Setting)


def conversation(
    questions: Sequence[str], earlier_answers: Sequence[str], turn: int, setting: Setting
) -> tuple[Message, ...]:
    """Messages for ``turn``: the system prompt, the earlier turns with ``earlier_answers``
    (gold or the model's own, by setting; none for questions-only), then the question."""
    messages: list[Message] = [("system", SYSTEM_PROMPT)]
    if setting is not Setting.QUESTIONS_ONLY:
        for question, answer in zip(questions[:turn], earlier_answers[:turn], strict=True):
            messages += [("user", question), ("assistant", answer)]
    messages.append(("user", questions[turn]))
    return tuple(messages)
