"""Chat backends served over HTTP: any OpenAI-style server, the OpenAI API and the Gemini API.

Retries are ours, not the SDKs' (theirs are switched off so ``usage.retries`` is the truth):
exponential backoff with full jitter on 408, 429, 5xx, timeouts and connection errors, a
server's ``Retry-After`` / ``retry-after-ms`` (or Gemini's ``RetryInfo``) taking precedence.
API keys are read from the environment only and are redacted from every message.
``latency_s`` times the successful attempt alone, not the failed attempts and waits before it.
An answer whose text is missing, empty or blank is an ``empty_content`` error, never an empty
prediction: it is not cached, and a rerun asks again.
"""

from __future__ import annotations

import email.utils
import importlib
import logging
import math
import os
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import pydantic
from pydantic import Field

from chronoscope_dagster.llm.base import (
    BackendError,
    BackendOptions,
    ChatRequest,
    Completion,
    Decoding,
    Usage,
)

if TYPE_CHECKING:
    from chronoscope_dagster.llm.registry import ModelSpec

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
DUMMY_KEY = "EMPTY"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
MESSAGE_LIMIT = 300
LONGEST_WAIT_S = 3600.0
"""The bound of every timeout and backoff option: an hour already means a stuck run."""


class _Failure(Exception):
    """One failed attempt: ``kind`` is the stable token that prefixes ``Completion.error``."""

    def __init__(
        self, kind: str, message: str, *, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


class _RemoteOptions(BackendOptions):
    concurrency: int = Field(default=8, ge=1, le=256, description="Requests in flight at once.")
    max_retries: int = Field(
        default=6,
        ge=0,
        le=30,
        description="Retries of one request after a 408, 429 or 5xx answer, a timeout or a "
        "connection error; then the request comes back as an error completion.",
    )
    timeout_s: float = Field(
        default=60.0, gt=0, le=LONGEST_WAIT_S, description="Timeout of one attempt, seconds."
    )
    backoff_initial_s: float = Field(
        default=1.0,
        ge=0,
        le=LONGEST_WAIT_S,
        description="Bound of the first backoff wait, seconds; it doubles with every retry and "
        "the wait is drawn uniformly below it (full jitter).",
    )
    backoff_max_s: float = Field(
        default=60.0,
        ge=0,
        le=LONGEST_WAIT_S,
        description="Longest wait between two attempts, seconds; caps Retry-After too.",
    )


class _OpenAIStyleOptions(_RemoteOptions):
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens",
        description="The request field that carries max_new_tokens.",
    )


def _check_url(url: str) -> str:
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("must be an http:// or https:// URL")
    return url


HttpURL = Annotated[str, pydantic.AfterValidator(_check_url)]


def _public_url(url: str) -> str:
    """The URL without user info, query or fragment, which may carry credentials."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asks for in ``retry-after-ms`` or ``Retry-After`` (seconds or an
    HTTP date), or None."""
    if not headers:
        return None
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    if millis := lowered.get("retry-after-ms"):
        try:
            value = float(millis) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(value, 0.0)
    text = lowered.get("retry-after", "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max((when - datetime.now(UTC)).total_seconds(), 0.0)
    return max(value, 0.0) if math.isfinite(value) else None


def _httpx_errors(name: str) -> tuple[type[BaseException], ...]:
    """``name`` from httpx and httpx2, whichever are installed (google-genai may use either)."""
    classes = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        classes.append(getattr(module, name))
    return tuple(classes)


class _RemoteBackend:
    cacheable: ClassVar[bool] = True
    backend: ClassVar[str]
    Options: ClassVar[type[_RemoteOptions]]

    def __init__(
        self,
        spec: ModelSpec,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        """``sleep`` and ``rng`` (uniform in [0, 1)) are the backoff's clock and dice."""
        self.model = spec.model
        self.options = (
            spec.options
            if isinstance(spec.options, self.Options)
            else self.Options.model_validate(spec.options)
        )
        self.sleep = sleep
        self.rng = rng
        self.usage = Usage()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._fatal: BackendError | None = None
        self._closed = False
        key, self._key_source = self._api_key()
        self._secrets = () if key == DUMMY_KEY else (key,)
        self._client = self._make_client(key)

    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model}

    def complete(self, requests: Sequence[ChatRequest], decoding: Decoding) -> list[Completion]:
        if not requests:
            return []
        with self._lock:
            if self._closed:
                raise BackendError(f"the {self.backend} backend is closed")
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.options.concurrency, thread_name_prefix=self.backend
                )
            pool = self._pool
        futures = [pool.submit(self._complete_one, request, decoding) for request in requests]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()

    def _api_key(self) -> tuple[str, str]:
        """(key, where it comes from); the source, never the key, goes into messages."""
        raise NotImplementedError

    def _make_client(self, key: str) -> Any:
        raise NotImplementedError

    def _attempt(self, request: ChatRequest, decoding: Decoding) -> Completion:
        """One HTTP call; raises _Failure, or BackendError when no request can succeed."""
        raise NotImplementedError

    def _where(self) -> str:
        return self.backend

    def _complete_one(self, request: ChatRequest, decoding: Decoding) -> Completion:
        retries = 0
        while True:
            if self._fatal is not None:
                raise self._fatal
            started = time.monotonic()
            try:
                completion = replace(
                    self._attempt(request, decoding), latency_s=time.monotonic() - started
                )
            except _Failure as failure:
                if failure.retryable and retries < self.options.max_retries:
                    delay = self._backoff(retries, failure.retry_after)
                    retries += 1
                    with self._lock:
                        self.usage.retries += 1
                    log.debug(
                        "%s: %s; retry %d of %d in %.2f s",
                        self._where(),
                        self._clean(str(failure)),
                        retries,
                        self.options.max_retries,
                        delay,
                    )
                    self.sleep(delay)
                    continue
                completion = Completion(error=self._clean(f"{failure.kind}: {failure.message}"))
            except BackendError as error:
                self._fatal = error
                raise
            except Exception as error:
                completion = Completion(
                    error=self._clean(f"unexpected: {type(error).__name__}: {error}")
                )
            if completion.error:
                log.warning("%s: request failed: %s", self._where(), completion.error)
            with self._lock:
                self.usage.add(completion)
            return completion

    def _backoff(self, retries: int, retry_after: float | None) -> float:
        options = self.options
        if retry_after is not None:
            return min(retry_after, options.backoff_max_s)
        bound = min(options.backoff_max_s, options.backoff_initial_s * 2.0**retries)
        return self.rng() * bound

    def _clean(self, text: str) -> str:
        """One short line with every secret redacted."""
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        text = " ".join(text.split())
        return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."

    def _status_failure(
        self, status: int, message: str, retry_after: float | None = None
    ) -> Exception:
        if status in (401, 403):
            return BackendError(
                self._clean(
                    f"{self._where()}: authentication failed (HTTP {status}): {message}; "
                    f"check {self._key_source}"
                )
            )
        retryable = status in (408, 429) or status >= 500
        return _Failure(
            f"http_{status}",
            message or f"HTTP {status}",
            retryable=retryable,
            retry_after=retry_after if retryable else None,
        )


def _env_key(names: Sequence[str]) -> tuple[str | None, str]:
    for name in names:
        if value := os.environ.get(name, "").strip():
            return value, f"the environment variable {name}"
    return None, " or ".join(f"the environment variable {name}" for name in names)


class _OpenAIStyleBackend(_RemoteBackend):
    Options: ClassVar[type[_OpenAIStyleOptions]]
    options: _OpenAIStyleOptions

    def _make_client(self, key: str) -> Any:
        try:
            import openai
        except ImportError as error:
            raise BackendError(f"the {self.backend} backend needs the openai package") from error
        return openai.OpenAI(
            api_key=key,
            base_url=self._base_url(),
            timeout=self.options.timeout_s,
            max_retries=0,
        )

    def _base_url(self) -> str:
        raise NotImplementedError

    def _where(self) -> str:
        return f"{self.backend} at {_public_url(self._base_url())}"

    def _extra_body(self) -> dict[str, Any] | None:
        return None

    def _attempt(self, request: ChatRequest, decoding: Decoding) -> Completion:
        import openai

        params: dict[str, Any] = {
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            self.options.max_tokens_field: decoding.max_new_tokens,
            "seed": decoding.seed,
        }
        if decoding.k > 1:
            params["n"] = decoding.k
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=request.as_openai(),
                extra_body=self._extra_body(),
                **params,
            )
        except openai.APITimeoutError:
            raise _Failure(
                "timeout", f"no answer within {self.options.timeout_s:g} s", retryable=True
            ) from None
        except openai.APIConnectionError as error:
            raise _Failure("connection", str(error.__cause__ or error), retryable=True) from None
        except openai.APIStatusError as error:
            raise self._status_failure(
                error.status_code, _openai_message(error), retry_after_s(error.response.headers)
            ) from None
        except openai.APIResponseValidationError as error:
            raise _Failure("bad_response", error.message, retryable=False) from None
        choices = sorted(response.choices or [], key=lambda choice: choice.index)
        if not choices:
            raise _Failure("no_choices", "the response has no choices", retryable=False)
        texts = [(choice.message.content or "").strip() for choice in choices]
        if blank := [choice for choice, text in zip(choices, texts, strict=True) if not text]:
            raise _Failure(
                "empty_content",
                f"choice {blank[0].index} has "
                f"{'no' if blank[0].message.content is None else 'blank'} content "
                f"(finish_reason {blank[0].finish_reason or '-'})",
                retryable=False,
            )
        usage = response.usage
        return Completion(
            candidates=tuple(texts),
            prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
            completion_tokens=(usage.completion_tokens or 0) if usage else 0,
        )


def _openai_message(error: Any) -> str:
    body = error.body
    if isinstance(body, Mapping) and body.get("message"):
        return str(body["message"])
    if isinstance(body, str) and body:
        return body
    try:
        return error.response.text or f"HTTP {error.status_code}"
    except Exception:
        return f"HTTP {error.status_code}"


class OpenAICompatibleBackend(_OpenAIStyleBackend):
    """Any server of the OpenAI chat-completions API, e.g. ``vllm serve``."""

    backend = "openai_compatible"

    class Options(_OpenAIStyleOptions):
        base_url: HttpURL = Field(
            description="The API root including the version, e.g. http://localhost:8000/v1."
        )
        api_key_env: str | None = Field(
            default=None,
            pattern=ENV_NAME,
            description="Environment variable holding the key; when unset or empty the dummy "
            f"key {DUMMY_KEY!r} is sent.",
        )
        extra_body: dict[str, Any] = Field(
            default_factory=dict,
            description="Extra request fields the server understands (e.g. vLLM's top_k or "
            "chat_template_kwargs); part of the identity.",
        )

    options: Options

    def identity(self) -> dict[str, Any]:
        identity = super().identity() | {"base_url": _public_url(self.options.base_url)}
        if self.options.extra_body:
            identity["extra_body"] = dict(self.options.extra_body)
        return identity

    def _api_key(self) -> tuple[str, str]:
        name = self.options.api_key_env
        if name is None:
            return DUMMY_KEY, "the server's key (options.api_key_env is not set, no key was sent)"
        key, source = _env_key([name])
        return key or DUMMY_KEY, source

    def _base_url(self) -> str:
        return self.options.base_url

    def _extra_body(self) -> dict[str, Any] | None:
        return dict(self.options.extra_body) or None


class OpenAIBackend(_OpenAIStyleBackend):
    """The OpenAI API."""

    backend = "openai"

    class Options(_OpenAIStyleOptions):
        base_url: HttpURL = Field(
            default=OPENAI_BASE_URL,
            description="The API root; change it only for a proxy of the same API.",
        )
        api_key_env: str = Field(
            default="OPENAI_API_KEY",
            pattern=ENV_NAME,
            description="Environment variable holding the API key (required).",
        )
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
            default="max_completion_tokens",
            description="The request field that carries max_new_tokens; reasoning models "
            "accept only max_completion_tokens.",
        )

    options: Options

    def identity(self) -> dict[str, Any]:
        identity = super().identity()
        if _public_url(self.options.base_url) != OPENAI_BASE_URL:
            identity["base_url"] = _public_url(self.options.base_url)
        return identity

    def _api_key(self) -> tuple[str, str]:
        key, source = _env_key([self.options.api_key_env])
        if key is None:
            raise BackendError(f"the openai backend needs an API key: set {source}")
        return key, source

    def _base_url(self) -> str:
        return self.options.base_url


class GeminiBackend(_RemoteBackend):
    """The Gemini API through google-genai. ``completion_tokens`` counts thinking tokens too,
    as they are billed as output."""

    backend = "gemini"

    class Options(_RemoteOptions):
        base_url: HttpURL | None = Field(
            default=None,
            description="Override of the API root (google-genai's http_options.base_url); "
            "the SDK's default when unset.",
        )
        api_key_env: str | None = Field(
            default=None,
            pattern=ENV_NAME,
            description="Environment variable holding the API key; GEMINI_API_KEY, then "
            "GOOGLE_API_KEY, when unset.",
        )
        thinking_budget: int | None = Field(
            default=None,
            ge=-1,
            le=2**31 - 1,
            description="Thinking tokens allowed to thinking models (0 off, -1 dynamic); the "
            "model's default when unset. Part of the identity.",
        )

    options: Options

    def identity(self) -> dict[str, Any]:
        identity = super().identity()
        if self.options.base_url is not None:
            identity["base_url"] = _public_url(self.options.base_url)
        if self.options.thinking_budget is not None:
            identity["thinking_budget"] = self.options.thinking_budget
        return identity

    def _where(self) -> str:
        if self.options.base_url is None:
            return self.backend
        return f"{self.backend} at {_public_url(self.options.base_url)}"

    def _api_key(self) -> tuple[str, str]:
        names = (
            [self.options.api_key_env]
            if self.options.api_key_env
            else ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
        )
        key, source = _env_key(names)
        if key is None:
            raise BackendError(f"the gemini backend needs an API key: set {source}")
        return key, source

    def _make_client(self, key: str) -> Any:
        try:
            from google import genai
            from google.genai import types
        except ImportError as error:
            raise BackendError("the gemini backend needs the google-genai package") from error
        http_options = types.HttpOptions(
            base_url=self.options.base_url,
            timeout=max(1, round(self.options.timeout_s * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=key, vertexai=False, http_options=http_options)

    def _attempt(self, request: ChatRequest, decoding: Decoding) -> Completion:
        from google.genai import errors, types

        system, contents = _gemini_contents(request)
        budget = self.options.thinking_budget
        config = types.GenerateContentConfig(
            system_instruction=system,
            temperature=decoding.temperature,
            top_p=decoding.top_p,
            max_output_tokens=decoding.max_new_tokens,
            seed=decoding.seed,
            candidate_count=decoding.k if decoding.k > 1 else None,
            thinking_config=None
            if budget is None
            else types.ThinkingConfig(thinking_budget=budget),
        )
        try:
            response = self._client.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except errors.APIError as error:
            raise self._gemini_failure(error) from None
        except _httpx_errors("TimeoutException"):
            raise _Failure(
                "timeout", f"no answer within {self.options.timeout_s:g} s", retryable=True
            ) from None
        except _httpx_errors("TransportError") as error:
            raise _Failure(
                "connection", str(error) or type(error).__name__, retryable=True
            ) from None
        candidates = sorted(response.candidates or [], key=lambda candidate: candidate.index or 0)
        if not candidates:
            feedback = response.prompt_feedback
            reason = feedback.block_reason if feedback else None
            if reason:
                raise _Failure("blocked", str(getattr(reason, "value", reason)), retryable=False)
            raise _Failure("no_candidates", "the response has no candidates", retryable=False)
        texts = [_gemini_text(candidate) for candidate in candidates]
        if blank := [c for c, text in zip(candidates, texts, strict=True) if not text]:
            reason = blank[0].finish_reason
            raise _Failure(
                "empty_content",
                f"candidate {blank[0].index or 0} has no text "
                f"(finish_reason {getattr(reason, 'value', reason) or '-'})",
                retryable=False,
            )
        usage = response.usage_metadata
        return Completion(
            candidates=tuple(texts),
            prompt_tokens=(usage.prompt_token_count or 0) if usage else 0,
            completion_tokens=(
                (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
                if usage
                else 0
            ),
        )

    def _gemini_failure(self, error: Any) -> Exception:
        message = error.message or error.status or ""
        if error.code == 400 and "API_KEY_INVALID" in str(error.details):
            return self._status_failure(401, message)
        headers = getattr(error.response, "headers", None)
        retry_after = retry_after_s(headers)
        if retry_after is None:
            retry_after = _gemini_retry_delay(error.details)
        return self._status_failure(int(error.code or 0), message, retry_after)


def _gemini_contents(request: ChatRequest) -> tuple[str | None, list[Any]]:
    """(system instruction, contents): system messages join the instruction, the assistant
    speaks as ``model``."""
    from google.genai import types

    system: list[str] = []
    contents = []
    for role, content in request.messages:
        if role == "system":
            system.append(content)
        elif role in ("user", "assistant"):
            contents.append(
                types.Content(
                    role="user" if role == "user" else "model", parts=[types.Part(text=content)]
                )
            )
        else:
            raise ValueError(f"unknown message role {role!r}")
    return ("\n\n".join(system) or None), contents


def _gemini_text(candidate: Any) -> str:
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    return "".join(part.text for part in parts if part.text and not part.thought).strip()


def _gemini_retry_delay(details: Any) -> float | None:
    """The ``retryDelay`` of a ``google.rpc.RetryInfo`` in an error body, in seconds."""
    error = details.get("error", details) if isinstance(details, Mapping) else None
    items = error.get("details") if isinstance(error, Mapping) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and str(item.get("@type", "")).endswith("RetryInfo"):
            match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None
