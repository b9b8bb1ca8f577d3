"""Opening a registry model for one piece of work: its backend behind the response cache,
both closed when the work ends, and the progress of the requests it answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.llm.registry import ModelSpec


@contextmanager
def open_chat(
    spec: ModelSpec, cache_path: str | Path | None, chunk_size: int = 64
) -> Iterator[CachedChat]:
    """``spec``'s backend behind the response cache at ``cache_path`` (none when None); the
    backend and the cache are closed on leaving, whatever happened."""
    backend = spec.build()
    try:
        cache = ResponseCache(cache_path) if cache_path else None
        try:
            yield CachedChat(backend, cache, chunk_size=chunk_size)
        finally:
            if cache is not None:
                cache.close()
    finally:
        backend.close()


class InfoLog(Protocol):
    def info(self, message: str) -> None: ...


class RequestProgress:
    """Logs the progress of model requests every ``every_s`` seconds and at the end;
    ``total=None`` when their number is not known in advance (retries), without an estimate
    of the time left."""

    def __init__(self, log: InfoLog, label: str, total: int | None, every_s: float = 15.0):
        self.log, self.label, self.total, self.every_s = log, label, total, every_s
        self.done = 0
        self.started = self.last = time.perf_counter()

    def __call__(self, count: int) -> None:
        if self.total == 0:
            return
        self.done += count
        now = time.perf_counter()
        finished = self.total is not None and self.done >= self.total
        if now - self.last < self.every_s and not finished:
            return
        self.last = now
        rate = self.done / max(now - self.started, 1e-9)
        if self.total is None:
            self.log.info(f"{self.label}: {self.done:,} requests ({rate:.1f}/s)")
            return
        left = (self.total - self.done) / rate if rate else float("inf")
        self.log.info(
            f"{self.label}: {self.done:,}/{self.total:,} requests "
            f"({rate:.1f}/s, about {left:.0f} s left)"
        )
