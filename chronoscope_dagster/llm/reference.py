"""Reference systems that prove the metrics end to end: one always right, one always
answering what is true today, one copying the previous answer (the shortcut a chain must not
reward), one right only when the question states its scope (what scope loss measures). They
cost nothing, so they are never cached."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from chronoscope_dagster.llm.base import BackendOptions, ChatRequest, Completion, Decoding

NO_PRESENT_VALUE = "I don't know"


class OracleSystem:
    """Answers each turn's gold (its canonical value)."""

    cacheable: ClassVar[bool] = False
    needs_model: ClassVar[bool] = False

    class Options(BackendOptions):
        pass

    def __init__(self, spec: Any) -> None:
        self.name = spec.backend

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name}

    def answer(self, request: ChatRequest) -> str:
        return request.gold

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]:
        return [Completion(candidates=(self.answer(r),) * decoding.k) for r in requests]

    def close(self) -> None:
        pass


class PresentDaySystem(OracleSystem):
    """Answers the present-day value whatever the time scope; abstains where there is none."""

    def answer(self, request: ChatRequest) -> str:
        return request.present_day or NO_PRESENT_VALUE


class CopyPreviousSystem(OracleSystem):
    """Answers the last assistant message of its context: the previous turn's gold in the
    gold-context setting, its own previous answer self-conditioned; empty where there is none
    (the first turn, and every questions-only turn). It measures how far copying gets."""

    def answer(self, request: ChatRequest) -> str:
        return next(
            (content for role, content in reversed(request.messages) if role == "assistant"), ""
        )


class ScopeBlindSystem(OracleSystem):
    """Answers the gold when the current question itself states its time scope (an explicit
    turn, every explicit-scope request) and the present-day value otherwise, abstaining where
    there is none: it knows every fact alone and loses every scope left to the conversation."""

    def answer(self, request: ChatRequest) -> str:
        if request.states_scope:
            return request.gold
        return request.present_day or NO_PRESENT_VALUE
