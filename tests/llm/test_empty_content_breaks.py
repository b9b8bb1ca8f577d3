"""An HTTP 200 whose answer is empty or blank is an error row like a null one: never cached,
asked again on a rerun (the loopback fault-injecting server of ``test_remote_backends``)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from chronoscope_dagster.llm.base import ChatRequest, Decoding
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache, cache_key
from chronoscope_dagster.llm.registry import backend_class, parse_entry
from tests.llm.test_remote_backends import FakeServer, Fault, gemini_answer, openai_answer

GREEDY = Decoding(max_new_tokens=7, temperature=0.0, top_p=1.0, k=1, seed=5)


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOSCOPE_TEST_GEMINI_KEY", "test-key")
    for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)


def _backend(server: FakeServer, kind: str) -> Any:
    options: dict[str, Any] = (
        {"base_url": f"{server.url}/v1", "max_retries": 0}
        if kind == "openai_compatible"
        else {
            "base_url": server.url,
            "api_key_env": "CHRONOSCOPE_TEST_GEMINI_KEY",
            "max_retries": 0,
        }
    )
    spec = parse_entry({"name": "t", "backend": kind, "model": "test-model", "options": options})
    return backend_class(kind)(spec, sleep=lambda _: None, rng=lambda: 0.5)


def _ask(prompt: str) -> list[ChatRequest]:
    return [ChatRequest(messages=(("user", prompt),))]


def _openai_with(content: str | None, n: int = 1) -> dict[str, Any]:
    body = openai_answer({"model": "test-model", "n": n}, "q")
    body["choices"][-1]["message"]["content"] = content
    return body


@pytest.mark.parametrize("content", ["", "   \n\t "], ids=["empty", "whitespace"])
def test_empty_string_content_is_an_error_row_not_cached_and_retried_on_rerun(
    server: FakeServer, tmp_path: Path, content: str
) -> None:
    server.script("q", Fault(body=_openai_with(content)))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    chat = CachedChat(_backend(server, "openai_compatible"), cache)
    (first,) = chat.complete(_ask("q"), GREEDY)
    assert first.error is not None and first.error.startswith("empty_content:"), first
    assert first.candidates == ()
    assert chat.usage.by_error == {"empty_content": 1}
    assert len(cache) == 0

    (second,) = chat.complete(_ask("q"), GREEDY)
    assert second.error is None and second.text == "answer to q #0"
    assert len(server.hits_for("q")) == 2
    assert len(cache) == 1
    chat.backend.close()
    cache.close()


def test_one_blank_choice_of_k_makes_the_request_an_error_row(server: FakeServer) -> None:
    body = _openai_with("", n=3)
    server.script("q", Fault(body=body))
    backend = _backend(server, "openai_compatible")
    (completion,) = backend.complete(_ask("q"), Decoding(k=3, temperature=0.7))
    assert completion.error is not None and completion.error.startswith("empty_content:")
    assert completion.candidates == ()
    backend.close()


@pytest.mark.parametrize("parts", [[{"text": ""}], [{"text": "thinking", "thought": True}], []])
def test_gemini_empty_text_is_an_error_row_not_cached(
    server: FakeServer, tmp_path: Path, parts: list[dict[str, Any]]
) -> None:
    body = gemini_answer({}, "q")
    body["candidates"][0]["content"]["parts"] = parts
    server.script("q", Fault(body=body))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    chat = CachedChat(_backend(server, "gemini"), cache)
    (first,) = chat.complete(_ask("q"), GREEDY)
    assert first.error is not None and first.error.startswith("empty_content:"), first
    assert len(cache) == 0
    (second,) = chat.complete(_ask("q"), GREEDY)
    assert second.error is None and second.text == "answer to q #0"
    chat.backend.close()
    cache.close()


def test_empty_answer_cached_before_the_fix_is_asked_again(
    server: FakeServer, tmp_path: Path
) -> None:
    """A cache written by a version that stored blank answers: they are misses now."""
    path = tmp_path / "responses.sqlite"
    backend = _backend(server, "openai_compatible")
    ResponseCache(path).close()
    key = cache_key(backend.identity(), GREEDY, _ask("q")[0])
    record = {"candidates": [""], "prompt_tokens": 1, "completion_tokens": 0, "latency_s": 0.1}
    with sqlite3.connect(path) as connection:
        connection.execute(
            "INSERT INTO responses VALUES (?, ?, ?, ?)",
            (key, "{}", orjson.dumps(record), time.time()),
        )
    cache = ResponseCache(path)
    chat = CachedChat(backend, cache)
    (answer,) = chat.complete(_ask("q"), GREEDY)
    assert answer.error is None and answer.text == "answer to q #0" and not answer.cached
    assert len(server.hits_for("q")) == 1
    assert chat.stats.hits == 0
    (again,) = chat.complete(_ask("q"), GREEDY)
    assert again.cached and again.text == "answer to q #0"
    backend.close()
    cache.close()
