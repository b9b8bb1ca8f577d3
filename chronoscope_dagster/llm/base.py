"""The one call every chat backend serves: a batch of conversations in, one or k answers out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

import pydantic

Message = tuple[str, str]
"""(role, content); roles are ``system``, ``user`` and ``assistant``."""


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters; part of every cache key. Greedy by default."""

    max_new_tokens: int = 24
    temperature: float = 0.0
    top_p: float = 1.0
    k: int = 1
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ChatRequest:
    """One conversation to answer. ``gold``, ``present_day``, ``states_scope`` (the current
    question itself states its time scope), ``view`` and ``subjects`` are what the reference
    systems answer from; real backends never see them, and they are not part of the cache
    key."""

    messages: tuple[Message, ...]
    gold: str = ""
    present_day: str = ""
    states_scope: bool = False
    view: Any = None
    """What the ``blind`` reference system sees of the conversation (``llm.blind.View``)."""
    subjects: frozenset[str] = frozenset()
    """The chain's subjects: the ``blind`` system answers with the model trained on the
    other half of the subjects."""

    def as_openai(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class Completion:
    """The answer to one request: ``candidates[0]`` is the top-1 answer. A request that failed
    after every retry has ``error`` set and no candidates; it is never an empty answer."""

    candidates: tuple[str, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None
    cached: bool = False

    @property
    def text(self) -> str | None:
        return self.candidates[0] if self.candidates else None


class BackendError(RuntimeError):
    """A backend cannot run at all (missing package, key or weights); raised, not counted."""


class BackendOptions(pydantic.BaseModel):
    """Backend-specific options of a registry entry; unknown fields are errors."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class ChatBackend(Protocol):
    """What the runner needs of a backend.

    ``complete`` answers every request, in order; per-request failures come back as
    completions with ``error`` set. ``identity`` names everything besides the decoding
    parameters and the messages that changes the answers (backend, model, dtype, server),
    so it keys the response cache. ``cacheable`` is false for systems that cost nothing.
    """

    cacheable: ClassVar[bool]

    def identity(self) -> Mapping[str, Any]: ...

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]: ...

    def close(self) -> None: ...


@dataclass
class Usage:
    """Running totals a backend or the cache reports as metadata."""

    calls: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    by_error: dict[str, int] = field(default_factory=dict)

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        if completion.error:
            self.errors += 1
            kind = completion.error.split(":", 1)[0]
            self.by_error[kind] = self.by_error.get(kind, 0) + 1
