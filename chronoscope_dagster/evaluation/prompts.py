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
    EXPLICIT_SCOPE = "explicit_scope"
    """Each scored turn alone, as its explicit question (subject and scope stated): what the
    model knows without the conversation, the control scope loss is measured against."""


SETTINGS = tuple(s.value for s in Setting)
PAPER_SETTINGS = (Setting.GOLD_CONTEXT, Setting.SELF_CONDITIONED, Setting.QUESTIONS_ONLY)
"""The paper's three settings, those its tables show and scope loss is measured in."""


def conversation(
    questions: Sequence[str], earlier_answers: Sequence[str], turn: int, setting: Setting
) -> tuple[Message, ...]:
    """Messages for ``turn``: the system prompt, the earlier turns with ``earlier_answers``
    (gold or the model's own, by setting; none for questions-only), then the question. Under
    explicit scope, ``questions`` are the explicit questions and none before is shown."""
    messages: list[Message] = [("system", SYSTEM_PROMPT)]
    if setting in (Setting.GOLD_CONTEXT, Setting.SELF_CONDITIONED):
        for question, answer in zip(questions[:turn], earlier_answers[:turn], strict=True):
            messages += [("user", question), ("assistant", answer)]
    messages.append(("user", questions[turn]))
    return tuple(messages)
