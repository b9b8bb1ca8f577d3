"""The remote backends against a fault-injecting server on 127.0.0.1 that speaks both the OpenAI
chat-completions API and the Gemini REST API (google-genai honours ``http_options.base_url``
and posts to ``{base_url}/v1beta/models/{model}:generateContent``)."""

from __future__ import annotations

import json
import logging
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chronoscope_dagster.llm.base import BackendError, ChatRequest, Decoding
from chronoscope_dagster.llm.registry import backend_class, parse_entry
from chronoscope_dagster.llm.remote import (
    GeminiBackend,
    OpenAIBackend,
    OpenAICompatibleBackend,
    retry_after_s,
)

KEY = "sk-test-" + secrets.token_hex(12)
GEMINI_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")


@dataclass
class Fault:
    """What the server does with the next request for one prompt; 200 with ``delay`` is slow."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "injected fault"
    delay: float = 0.0
    body: dict[str, Any] | None = None


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: str
    at: float


class FakeServer:
    def __init__(self) -> None:
        self.faults: dict[str, list[Fault]] = {}
        self.latency: dict[str, float] = {}
        self.hits: list[Hit] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                server.handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 64
        self.httpd.server_bind()
        self.httpd.server_activate()
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}"

    def script(self, prompt: str, *faults: Fault) -> None:
        self.faults.setdefault(prompt, []).extend(faults)

    def hits_for(self, prompt: str) -> list[Hit]:
        return [hit for hit in self.hits if hit.prompt == prompt]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        if handler.path == "/v1/chat/completions":
            gemini = False
            prompt = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        elif GEMINI_PATH.match(handler.path):
            gemini = True
            prompt = body["contents"][-1]["parts"][0]["text"]
        else:
            self.send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        with self.lock:
            self.hits.append(
                Hit(handler.path, dict(handler.headers), body, prompt, time.monotonic())
            )
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queue = self.faults.get(prompt)
            fault = queue.pop(0) if queue else Fault(delay=self.latency.get(prompt, 0.0))
        try:
            time.sleep(fault.delay)
        finally:
            with self.lock:
                self.in_flight -= 1
        if fault.body is not None:
            payload = fault.body
        elif fault.status != 200:
            payload = {"error": {"code": fault.status, "message": fault.message}}
        elif gemini:
            payload = gemini_answer(body, prompt)
        else:
            payload = openai_answer(body, prompt)
        self.send(handler, fault.status, payload, fault.headers)

    @staticmethod
    def send(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:
            pass


def openai_answer(body: dict[str, Any], prompt: str) -> dict[str, Any]:
    n = body.get("n", 1)
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": f"  answer to {prompt} #{index}\n"},
                "finish_reason": "stop",
            }
            for index in reversed(range(n))
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3 * n, "total_tokens": 10 + 3 * n},
    }


def gemini_answer(body: dict[str, Any], prompt: str) -> dict[str, Any]:
    n = body.get("generationConfig", {}).get("candidateCount", 1)
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "let me think", "thought": True},
                        {"text": f"  answer to {prompt}"},
                        {"text": f" #{index}\n"},
                    ],
                },
                "finishReason": "STOP",
                "index": index,
            }
            for index in reversed(range(n))
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 3 * n,
            "thoughtsTokenCount": 2,
            "totalTokenCount": 12 + 3 * n,
        },
        "modelVersion": "gemini-test",
    }


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "TEST_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEST_KEY", KEY)


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def build(backend: str, options: dict[str, Any], *, sleep: Any = None, **decoding: Any) -> Any:
    spec = parse_entry(
        {"name": "t", "backend": backend, "model": "test-model", "options": options, **decoding}
    )
    return backend_class(backend)(spec, sleep=Sleeps() if sleep is None else sleep, rng=lambda: 0.5)


def compatible(server: FakeServer, sleep: Any = None, **options: Any) -> OpenAICompatibleBackend:
    defaults = {"base_url": f"{server.url}/v1", "api_key_env": "TEST_KEY"}
    return build("openai_compatible", defaults | options, sleep=sleep)


def gemini(server: FakeServer, sleep: Any = None, **options: Any) -> GeminiBackend:
    defaults = {"base_url": server.url, "api_key_env": "TEST_KEY"}
    return build("gemini", defaults | options, sleep=sleep)


def ask(*prompts: str, system: str | None = None) -> list[ChatRequest]:
    head = (("system", system),) if system else ()
    return [ChatRequest(messages=(*head, ("user", prompt))) for prompt in prompts]


GREEDY = Decoding(max_new_tokens=7, temperature=0.0, top_p=1.0, k=1, seed=5)


# --- OpenAI-style servers ---------------------------------------------------------------------


def test_answers_come_back_in_order_within_the_concurrency_limit(server: FakeServer) -> None:
    prompts = [f"q{index:02d}" for index in range(16)]
    for index, prompt in enumerate(prompts):
        server.latency[prompt] = 0.004 * (16 - index)
    backend = compatible(server, concurrency=3)
    completions = backend.complete(ask(*prompts, system="Be brief."), GREEDY)
    backend.close()

    assert [c.text for c in completions] == [f"answer to {p} #0" for p in prompts]
    assert all(c.error is None and c.latency_s > 0 for c in completions)
    assert 2 <= server.max_in_flight <= 3
    assert (backend.usage.calls, backend.usage.errors, backend.usage.retries) == (16, 0, 0)
    assert backend.usage.prompt_tokens == 160
    assert backend.usage.completion_tokens == 48
    hit = server.hits[0]
    assert hit.headers["Authorization"] == f"Bearer {KEY}"
    assert hit.body["model"] == "test-model"
    assert hit.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert {k: hit.body.get(k) for k in ("temperature", "top_p", "max_tokens", "seed", "n")} == {
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": 7,
        "seed": 5,
        "n": None,
    }


def test_k_candidates_are_the_choices_in_index_order(server: FakeServer) -> None:
    backend = compatible(server, extra_body={"top_k": 20})
    decoding = Decoding(max_new_tokens=5, temperature=0.7, top_p=0.9, k=3, seed=1)
    (completion,) = backend.complete(ask("Who?"), decoding)

    assert completion.candidates == ("answer to Who? #0", "answer to Who? #1", "answer to Who? #2")
    assert (completion.prompt_tokens, completion.completion_tokens) == (10, 9)
    body = server.hits[0].body
    assert (body["n"], body["temperature"], body["top_p"], body["top_k"]) == (3, 0.7, 0.9, 20)


def test_429_and_5xx_are_retried_with_full_jitter_backoff(server: FakeServer) -> None:
    server.script("q", Fault(429, {"Retry-After": "0"}), Fault(503), Fault(500), Fault(502))
    sleeps = Sleeps()
    backend = compatible(server, sleep=sleeps, backoff_initial_s=0.01, backoff_max_s=0.03)
    (completion,) = backend.complete(ask("q"), GREEDY)

    assert completion.text == "answer to q #0"
    assert completion.error is None
    assert len(server.hits_for("q")) == 5
    assert sleeps == [0.0, 0.5 * 0.02, 0.5 * 0.03, 0.5 * 0.03]
    assert backend.usage.retries == 4
    assert (backend.usage.calls, backend.usage.errors) == (1, 0)


def test_retry_after_is_honoured_in_real_time(server: FakeServer) -> None:
    server.script("q", Fault(429, {"Retry-After": "1"}))
    backend = build(
        "openai_compatible",
        {"base_url": f"{server.url}/v1", "backoff_initial_s": 0.0},
        sleep=time.sleep,
    )
    started = time.monotonic()
    (completion,) = backend.complete(ask("q"), GREEDY)

    assert completion.text == "answer to q #0"
    assert time.monotonic() - started >= 1.0
    first, second = server.hits_for("q")
    assert second.at - first.at >= 1.0
    assert backend.usage.retries == 1


def test_retry_after_ms_and_the_cap_apply(server: FakeServer) -> None:
    server.script("a", Fault(429, {"retry-after-ms": "250", "Retry-After": "9"}))
    server.script("b", Fault(503, {"Retry-After": "120"}))
    sleeps = Sleeps()
    backend = compatible(server, sleep=sleeps, concurrency=1, backoff_max_s=5)
    completions = backend.complete(ask("a", "b"), GREEDY)

    assert [c.error for c in completions] == [None, None]
    assert sleeps == [0.25, 5.0]


def test_retry_after_forms() -> None:
    soon = datetime.now(UTC) + timedelta(seconds=30)
    assert retry_after_s({"Retry-After": "3"}) == 3.0
    assert retry_after_s({"retry-after": "1.5"}) == 1.5
    assert retry_after_s({"retry-after-ms": "20"}) == 0.02
    assert 28.0 <= (retry_after_s({"Retry-After": format_datetime(soon, usegmt=True)}) or 0) <= 30
    assert retry_after_s({"Retry-After": "Mon, 01 Jan 2001 00:00:00 GMT"}) == 0.0
    assert retry_after_s({"Retry-After": "soon"}) is None
    assert retry_after_s({"Retry-After": "-4"}) == 0.0
    assert retry_after_s({}) is None
    assert retry_after_s(None) is None


def test_null_content_is_an_empty_content_error_and_is_not_cached(
    server: FakeServer, tmp_path
) -> None:
    from chronoscope_dagster.llm.cache import CachedChat, ResponseCache

    null = openai_answer({"model": "test-model"}, "q")
    null["choices"][0]["message"]["content"] = None
    server.script("q", Fault(body=null))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    chat = CachedChat(compatible(server), cache)
    (first,) = chat.complete(ask("q"), GREEDY)
    assert first.error is not None and first.error.startswith("empty_content:")
    assert first.candidates == ()
    (second,) = chat.complete(ask("q"), GREEDY)
    assert second.error is None and second.text == "answer to q #0"
    assert len(server.hits_for("q")) == 2
    chat.backend.close()


def test_exhausted_retries_become_an_error_completion(server: FakeServer) -> None:
    server.script("bad", *[Fault(503, message="overloaded")] * 5)
    backend = compatible(server, max_retries=2)
    completions = backend.complete(ask("ok", "bad"), GREEDY)

    assert completions[0].text == "answer to ok #0"
    assert completions[1].error == "http_503: overloaded"
    assert completions[1].candidates == ()
    assert completions[1].text is None
    assert len(server.hits_for("bad")) == 3
    usage = backend.usage
    assert (usage.calls, usage.errors, usage.retries, usage.by_error) == (2, 1, 2, {"http_503": 1})


@pytest.mark.parametrize("status", [400, 404, 422])
def test_client_errors_are_not_retried(server: FakeServer, status: int) -> None:
    server.script("q", Fault(status, message="max_tokens is too large"))
    backend = compatible(server)
    (completion,) = backend.complete(ask("q"), GREEDY)

    assert completion.error == f"http_{status}: max_tokens is too large"
    assert completion.candidates == ()
    assert len(server.hits_for("q")) == 1
    assert backend.usage.retries == 0


def test_timeouts_are_retried_then_reported(server: FakeServer) -> None:
    server.script("slow", Fault(delay=1.0), Fault(delay=1.0))
    server.script("late", Fault(delay=1.0))
    backend = compatible(server, timeout_s=0.2, max_retries=1)
    slow, late = backend.complete(ask("slow", "late"), GREEDY)

    assert slow.error is not None and slow.error.startswith("timeout: ")
    assert slow.candidates == ()
    assert late.text == "answer to late #0"
    assert backend.usage.retries == 2
    assert backend.usage.by_error == {"timeout": 1}


def test_connection_errors_are_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    backend = build(
        "openai_compatible",
        {"base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 3},
        sleep=sleeps,
    )
    (completion,) = backend.complete(ask("q"), GREEDY)

    assert completion.error is not None and completion.error.startswith("connection: ")
    assert len(sleeps) == 3
    assert backend.usage.retries == 3


@pytest.mark.parametrize("status", [401, 403])
def test_authentication_failure_raises(server: FakeServer, status: int) -> None:
    for prompt in ("a", "b", "c"):
        server.script(prompt, Fault(status, message=f"Incorrect API key provided: {KEY}"))
    backend = compatible(server, concurrency=2)

    with pytest.raises(BackendError) as raised:
        backend.complete(ask("a", "b", "c"), GREEDY)
    message = str(raised.value)
    assert f"authentication failed (HTTP {status})" in message
    assert "TEST_KEY" in message
    assert KEY not in message
    assert backend.usage.retries == 0
    with pytest.raises(BackendError):
        backend.complete(ask("d"), GREEDY)
    assert not server.hits_for("d")


def test_the_key_never_leaks(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server.script("echo", Fault(400, message=f"bad key {KEY} in request"))
    server.script("flaky", Fault(503, message=f"overloaded; your key is {KEY}"), Fault(503))
    backend = compatible(server, max_retries=1)
    completions = backend.complete(ask("echo", "flaky"), GREEDY)

    assert server.hits[0].headers["Authorization"] == f"Bearer {KEY}"
    assert [c.error for c in completions] == [
        "http_400: bad key [redacted] in request",
        "http_503: injected fault",
    ]
    assert "overloaded; your key is [redacted]" in caplog.text
    assert KEY not in caplog.text
    assert KEY not in json.dumps(backend.identity())
    assert KEY not in repr(backend.options)


def test_openai_compatible_key_is_optional(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMPTY_KEY", "")
    for options in ({}, {"api_key_env": "EMPTY_KEY"}, {"api_key_env": "UNSET_KEY"}):
        backend = build("openai_compatible", {"base_url": f"{server.url}/v1", **options})
        backend.complete(ask("q"), GREEDY)
        backend.close()
    assert [hit.headers["Authorization"] for hit in server.hits] == ["Bearer EMPTY"] * 3


def test_identity_names_backend_model_and_server(server: FakeServer) -> None:
    plain = compatible(server)
    assert plain.identity() == {
        "backend": "openai_compatible",
        "model": "test-model",
        "base_url": f"{server.url}/v1",
    }
    tuned = compatible(server, extra_body={"top_k": 5})
    assert tuned.identity()["extra_body"] == {"top_k": 5}
    hidden = build("openai_compatible", {"base_url": "http://user:pw@host:8000/v1/?token=x"})
    assert hidden.identity()["base_url"] == "http://host:8000/v1"


def test_openai_backend_needs_its_key_and_sends_max_completion_tokens(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        build("openai", {})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert build("openai", {}).identity() == {"backend": "openai", "model": "test-model"}

    backend = build("openai", {"base_url": f"{server.url}/v1"})
    (completion,) = backend.complete(ask("q"), GREEDY)
    assert completion.text == "answer to q #0"
    body = server.hits[0].body
    assert body["max_completion_tokens"] == 7
    assert "max_tokens" not in body
    assert server.hits[0].headers["Authorization"] == f"Bearer {KEY}"
    assert backend.identity()["base_url"] == f"{server.url}/v1"


def test_options_defaults_and_descriptions() -> None:
    for cls in (OpenAICompatibleBackend, OpenAIBackend, GeminiBackend):
        assert cls.cacheable is True
        fields = cls.Options.model_fields
        assert all(info.description for info in fields.values()), cls
        assert {name: fields[name].default for name in ("concurrency", "max_retries")} == {
            "concurrency": 8,
            "max_retries": 6,
        }
        assert (fields["timeout_s"].default, fields["backoff_max_s"].default) == (60.0, 60.0)
        assert fields["backoff_initial_s"].default == 1.0
    assert OpenAIBackend.Options().base_url == "https://api.openai.com/v1"
    assert OpenAIBackend.Options().api_key_env == "OPENAI_API_KEY"
    assert OpenAICompatibleBackend.Options.model_fields["base_url"].is_required()


def test_no_requests_and_close_twice(server: FakeServer) -> None:
    backend = compatible(server)
    assert backend.complete([], GREEDY) == []
    backend.close()
    backend.close()
    with pytest.raises(BackendError, match="closed"):
        backend.complete(ask("q"), GREEDY)


# --- Gemini -------------------------------------------------------------------------------------


def test_gemini_answers_in_order_within_the_limit(server: FakeServer) -> None:
    prompts = [f"g{index:02d}" for index in range(12)]
    for index, prompt in enumerate(prompts):
        server.latency[prompt] = 0.004 * (12 - index)
    backend = gemini(server, concurrency=3, thinking_budget=0)
    requests = [
        ChatRequest(
            messages=(
                ("system", "Be brief."),
                ("user", "Earlier question"),
                ("assistant", "Earlier answer"),
                ("user", prompt),
            )
        )
        for prompt in prompts
    ]
    completions = backend.complete(requests, GREEDY)

    assert [c.text for c in completions] == [f"answer to {p} #0" for p in prompts]
    assert 2 <= server.max_in_flight <= 3
    assert backend.usage.prompt_tokens == 120
    assert backend.usage.completion_tokens == 12 * 5
    hit = server.hits[0]
    assert hit.path == "/v1beta/models/test-model:generateContent"
    assert hit.headers["x-goog-api-key"] == KEY
    assert hit.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert [content["role"] for content in hit.body["contents"]] == ["user", "model", "user"]
    config = hit.body["generationConfig"]
    assert list(config.pop("thinkingConfig").values()) == [0]
    assert config == {"temperature": 0.0, "topP": 1.0, "maxOutputTokens": 7, "seed": 5}
    assert backend.identity() == {
        "backend": "gemini",
        "model": "test-model",
        "base_url": server.url,
        "thinking_budget": 0,
    }


def test_gemini_k_candidates(server: FakeServer) -> None:
    backend = gemini(server)
    (completion,) = backend.complete(ask("Who?"), Decoding(temperature=1.0, k=2))

    assert completion.candidates == ("answer to Who? #0", "answer to Who? #1")
    assert server.hits[0].body["generationConfig"]["candidateCount"] == 2


def test_gemini_retries_honour_retry_after_and_retry_info(server: FakeServer) -> None:
    retry_info = {
        "error": {
            "code": 429,
            "message": "quota",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"},
            ],
        }
    }
    server.script(
        "q",
        Fault(429, {"Retry-After": "3"}),
        Fault(429, body=retry_info),
        Fault(500),
        Fault(delay=1.0),
    )
    sleeps = Sleeps()
    backend = gemini(server, sleep=sleeps, timeout_s=0.2, backoff_initial_s=0.1)
    (completion,) = backend.complete(ask("q"), GREEDY)

    assert completion.text == "answer to q #0"
    assert sleeps == [3.0, 2.0, 0.5 * 0.4, 0.5 * 0.8]
    assert len(server.hits_for("q")) == 5
    assert backend.usage.retries == 4


def test_gemini_errors(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    server.script("bad", Fault(400, message=f"invalid argument near {KEY}"))
    server.script("down", *[Fault(503)] * 3)
    server.script("blocked", Fault(body={"promptFeedback": {"blockReason": "SAFETY"}}))
    backend = gemini(server, max_retries=2)
    bad, down, blocked = backend.complete(ask("bad", "down", "blocked"), GREEDY)

    assert bad.error == "http_400: invalid argument near [redacted]"
    assert down.error == "http_503: injected fault"
    assert blocked.error == "blocked: SAFETY"
    assert bad.candidates == down.candidates == blocked.candidates == ()
    assert backend.usage.by_error == {"http_400": 1, "http_503": 1, "blocked": 1}
    assert backend.usage.retries == 2
    assert KEY not in caplog.text


def test_gemini_authentication_failures_raise(server: FakeServer) -> None:
    invalid_key = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        }
    }
    server.script("a", Fault(400, body=invalid_key))
    server.script("b", Fault(403, message="permission denied"))
    for prompt in ("a", "b"):
        with pytest.raises(BackendError, match="authentication failed") as raised:
            gemini(server).complete(ask(prompt), GREEDY)
        assert KEY not in str(raised.value)
        assert "TEST_KEY" in str(raised.value)


def test_gemini_key_lookup(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendError, match=r"GEMINI_API_KEY or .*GOOGLE_API_KEY"):
        build("gemini", {"base_url": server.url})
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    build("gemini", {"base_url": server.url}).complete(ask("q"), GREEDY)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    build("gemini", {"base_url": server.url}).complete(ask("q"), GREEDY)
    assert [hit.headers["x-goog-api-key"] for hit in server.hits] == ["google-key", "gemini-key"]
    assert build("gemini", {}).identity() == {"backend": "gemini", "model": "test-model"}
