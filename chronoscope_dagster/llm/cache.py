"""A response cache on disk, shared by every process: SQLite in WAL mode.

The key is a hash of the backend's identity, the decoding parameters and the messages, so a
killed run resumes without repeating a call and a rerun costs none. Failed requests are
never cached: a rerun tries them again. Nor are answers with no text (no candidates, or an empty
or blank one): a remote backend reports those as errors, and a blank answer stored by an older
version is a miss, asked again. A local model's blank answer is not cached either: it is
recomputed, at the cost of one generation.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from chronoscope_dagster.llm.base import ChatBackend, ChatRequest, Completion, Decoding, Usage

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    completion BLOB NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(identity: Mapping[str, Any], decoding: Decoding, request: ChatRequest) -> str:
    payload = orjson.dumps(
        {"identity": identity, "decoding": decoding.as_dict(), "messages": request.messages},
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.sha256(payload).hexdigest()


class ResponseCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(
            self.path, timeout=120, isolation_level=None, check_same_thread=False
        )
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        self._connection.execute(SCHEMA)

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        found: dict[str, Completion] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._connection.execute(
                    f"SELECT key, completion FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob in rows:
                    record = orjson.loads(blob)
                    if _answered(record["candidates"]):
                        found[key] = _completion(record)
        return found

    def put_many(
        self, identity: Mapping[str, Any], items: Sequence[tuple[str, Completion]]
    ) -> None:
        label = orjson.dumps(identity, option=orjson.OPT_SORT_KEYS).decode()
        now = time.time()
        rows = [
            (key, label, orjson.dumps(_record(completion)), now)
            for key, completion in items
            if completion.error is None and _answered(completion.candidates)
        ]
        if not rows:
            return
        with self._lock:
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                self._connection.executemany(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", rows
                )
                self._connection.execute("COMMIT")
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute("SELECT count(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _answered(candidates: Sequence[str]) -> bool:
    return bool(candidates) and all(text.strip() for text in candidates)


def _record(completion: Completion) -> dict[str, Any]:
    return {
        "candidates": list(completion.candidates),
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "latency_s": completion.latency_s,
    }


def _completion(record: dict[str, Any]) -> Completion:
    return Completion(
        candidates=tuple(record["candidates"]),
        prompt_tokens=record["prompt_tokens"],
        completion_tokens=record["completion_tokens"],
        latency_s=record["latency_s"],
        cached=True,
    )


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    duplicates: int = 0


class CachedChat:
    """A backend behind the cache. Misses go to the backend in chunks, and each chunk is
    stored as soon as it is answered, so a kill loses at most one chunk of work."""

    def __init__(
        self, backend: ChatBackend, cache: ResponseCache | None, chunk_size: int = 64
    ) -> None:
        self.backend = backend
        self.cache = cache if backend.cacheable else None
        self.chunk_size = chunk_size
        self.stats = CacheStats()
        self.usage = Usage()

    def complete(
        self,
        requests: Sequence[ChatRequest],
        decoding: Decoding,
        progress: Callable[[int], None] | None = None,
    ) -> list[Completion]:
        if self.cache is None:
            results = self._call(list(requests), decoding)
            self.stats.misses += len(requests)
            if progress:
                progress(len(requests))
            return results
        identity = self.backend.identity()
        keys = [cache_key(identity, decoding, request) for request in requests]
        known = self.cache.get_many(sorted(set(keys)))
        hits = sum(key in known for key in keys)
        self.stats.hits += hits
        if progress and hits:
            progress(hits)
        pending: dict[str, ChatRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key not in known:
                pending.setdefault(key, request)
        wanted = Counter(key for key in keys if key not in known)
        self.stats.misses += wanted.total()
        self.stats.duplicates += wanted.total() - len(pending)
        answered: dict[str, Completion] = {}
        todo = list(pending.items())
        for start in range(0, len(todo), self.chunk_size):
            chunk = todo[start : start + self.chunk_size]
            completions = self._call([request for _, request in chunk], decoding)
            items = [(key, c) for (key, _), c in zip(chunk, completions, strict=True)]
            self.cache.put_many(identity, items)
            answered.update(items)
            if progress:
                progress(sum(wanted[key] for key, _ in chunk))
        return [known.get(key) or answered[key] for key in keys]

    def _call(self, requests: list[ChatRequest], decoding: Decoding) -> list[Completion]:
        completions = self.backend.complete(requests, decoding)
        if len(completions) != len(requests):
            raise RuntimeError(f"backend answered {len(completions)} of {len(requests)} requests")
        for completion in completions:
            self.usage.add(completion)
        return completions
