"""Shared pieces of the probe tests: a backend wrapper that records every call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from chronoscope_dagster.llm.base import ChatBackend, ChatRequest, Completion, Decoding
from chronoscope_dagster.llm.registry import parse_entry


class Recording:
    """Any backend, with every batch it was asked recorded (the probe's calls are counted
    here, never faked: the answers are the wrapped backend's)."""

    cacheable: ClassVar[bool] = False

    def __init__(self, inner: ChatBackend) -> None:
        self.inner = inner
        self.calls: list[list[ChatRequest]] = []

    @property
    def requests(self) -> list[ChatRequest]:
        return [request for call in self.calls for request in call]

    def identity(self) -> dict[str, Any]:
        return dict(self.inner.identity())

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]:
        self.calls.append(list(requests))
        return self.inner.complete(requests, decoding)

    def close(self) -> None:
        self.inner.close()


def recording(backend: str) -> Recording:
    """A recorded reference system of the registry (``oracle`` or ``present_day``)."""
    return Recording(parse_entry({"name": backend, "backend": backend}).build())
