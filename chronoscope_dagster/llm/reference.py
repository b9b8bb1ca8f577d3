"""Reference systems that prove the metrics end to end: one always right, one always
answering what is true today, one copying the previous answer (the shortcut a chain must not
reward), one right only when the question states its scope (what scope loss measures), and
``blind``, the best strategy learnt from the benchmark's structure without any fact
(``llm.blind``). They cost nothing, so they are never cached."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pyarrow as pa

from chronoscope_dagster.llm.base import (
    BackendError,
    BackendOptions,
    ChatRequest,
    Completion,
    Decoding,
)
from chronoscope_dagster.llm.blind import BlindModel, answering_half, blind_chains, fitted_halves

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


class BlindSystem(OracleSystem):
    """Answers from the conversation's structure alone (``llm.blind``): trained on the
    benchmark's chains (``fit``), split in two halves by subject, each chain answered by the
    model of the half that holds none of its subjects (a chain whose subjects fall in both
    halves by the half of its first subject, by QID)."""

    class Options(BackendOptions):
        threads: int = 1

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.seed = spec.decoding.seed
        self.threads = spec.options.threads
        self.models: dict[int, BlindModel] | None = None

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "seed": self.seed}

    def fit(self, turns: pa.Table) -> None:
        """Train on every chain of ``turns`` (the ``turns`` table)."""
        self.models = fitted_halves(blind_chains(turns), self.seed, self.threads)

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]:
        """A request without a view (the probe's) has no structure to read: its answer is
        empty."""
        answers = [""] * len(requests)
        by_half: dict[int, list[int]] = {0: [], 1: []}
        for index, request in enumerate(requests):
            if request.view is None:
                continue
            if self.models is None:
                raise BackendError("the blind system answers only after fit() on the benchmark")
            by_half[answering_half(request.subjects, self.seed)].append(index)
        for half, indexes in by_half.items():
            if not indexes:
                continue
            assert self.models is not None
            found = self.models[half].answer_all([requests[i].view for i in indexes])
            for index, answer in zip(indexes, found, strict=True):
                answers[index] = answer
        return [Completion(candidates=(answer,) * decoding.k) for answer in answers]
