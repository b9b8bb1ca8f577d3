"""The vLLM backend on the embedded model, converted to a folder (run in .venv-vllm:
``.venv-vllm/bin/pytest -q -m vllm tests/test_vllm_backend.py``; skipped without vLLM)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronoscope_dagster.llm import registry
from chronoscope_dagster.llm.base import BackendError, ChatRequest, Decoding
from chronoscope_dagster.llm.convert import convert_gguf
from chronoscope_dagster.llm.embedded import EMBEDDED_MODEL, embedded_gguf

NO_VLLM = "vLLM is not installed (the `vllm` extra; scripts/setup_vllm.sh builds .venv-vllm)"
SYSTEM = "You are a concise assistant for temporal questions. Answer with a short name only."
QUESTIONS = (
    "In 2010, who was the Prime Minister of the United Kingdom?",
    "In 2015, who was the Chancellor of Germany?",
    "In 2014, who was the Secretary-General of the United Nations?",
    "In 1985, who was the General Secretary of the Soviet Union?",
)
GREEDY = Decoding(max_new_tokens=16)
OPTIONS = {
    "dtype": "float32",
    "gpu_memory_utilization": 0.2,
    "max_model_len": 2048,
    "enforce_eager": True,
    "cpu_threads": 1,
}


def ask(question: str) -> ChatRequest:
    return ChatRequest(messages=(("system", SYSTEM), ("user", question)))


def entry(model: str, **options: Any) -> dict[str, Any]:
    return {"name": "smollm2-vllm", "backend": "vllm", "model": model, "options": options}


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("vllm", reason=NO_VLLM)
    return convert_gguf(embedded_gguf(), tmp_path_factory.mktemp("models") / EMBEDDED_MODEL)


@pytest.fixture(scope="module")
def backend(converted: Path) -> Iterator[Any]:
    built = registry.parse_entry(entry(str(converted), **OPTIONS)).build()
    yield built
    built.close()


@pytest.fixture(scope="module")
def answers(backend: Any) -> list:
    return backend.complete([ask(q) for q in QUESTIONS], GREEDY)


@pytest.mark.vllm
def test_greedy_answers_are_counted_non_empty_strings(answers: list) -> None:
    assert len(answers) == len(QUESTIONS)
    for completion in answers:
        assert completion.error is None
        assert len(completion.candidates) == 1
        assert isinstance(completion.text, str)
        assert completion.text
        assert completion.text == completion.text.strip()
        assert completion.prompt_tokens > 20
        assert 0 < completion.completion_tokens <= GREEDY.max_new_tokens
        assert completion.latency_s > 0


@pytest.mark.vllm
def test_greedy_is_deterministic_and_batch_invariant(backend: Any, answers: list) -> None:
    again = backend.complete([ask(q) for q in QUESTIONS], GREEDY)
    assert [c.candidates for c in again] == [c.candidates for c in answers]
    one_by_one = [backend.complete([ask(q)], GREEDY)[0] for q in QUESTIONS]
    assert [c.candidates for c in one_by_one] == [c.candidates for c in answers]
    assert [c.prompt_tokens for c in one_by_one] == [c.prompt_tokens for c in answers]


@pytest.mark.vllm
def test_batch_size_splits_the_engine_calls(
    backend: Any, answers: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "options", backend.options.model_copy(update={"batch_size": 3}))
    chunked = backend.complete([ask(q) for q in QUESTIONS], GREEDY)
    assert [c.candidates for c in chunked] == [c.candidates for c in answers]


@pytest.mark.vllm
def test_greedy_k_uses_beam_search_on_the_same_prompt(backend: Any, answers: list) -> None:
    beams = backend.complete([ask(q) for q in QUESTIONS[:2]], Decoding(max_new_tokens=8, k=3))
    for completion, greedy in zip(beams, answers, strict=False):
        assert completion.error is None
        assert len(completion.candidates) == 3
        assert all(isinstance(text, str) and text for text in completion.candidates)
        assert completion.prompt_tokens == greedy.prompt_tokens
        assert completion.completion_tokens > 0


@pytest.mark.vllm
def test_sampling_k_is_reproducible_from_the_seed(backend: Any) -> None:
    decoding = Decoding(max_new_tokens=8, temperature=0.9, top_p=0.95, k=2, seed=7)
    first = backend.complete([ask(QUESTIONS[0])], decoding)[0]
    second = backend.complete([ask(QUESTIONS[0])], decoding)[0]
    assert len(first.candidates) == 2
    assert first.candidates == second.candidates


@pytest.mark.vllm
def test_a_prompt_too_long_fails_alone(backend: Any, answers: list) -> None:
    too_long = ask("When? " * 3000)
    results = backend.complete([too_long, ask(QUESTIONS[0])], GREEDY)
    assert results[0].error
    assert not results[0].candidates
    assert results[1].error is None
    assert results[1].candidates == answers[0].candidates


@pytest.mark.vllm
def test_a_model_without_chat_template_gets_the_plain_layout(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokenizer = backend._engine().get_tokenizer()
    monkeypatch.setattr(tokenizer, "chat_template", None)
    request = ChatRequest(messages=(("system", SYSTEM), ("user", QUESTIONS[1])))
    plain = f"{SYSTEM}\nUser: {QUESTIONS[1]}\nAssistant:"
    (completion,) = backend.complete([request], GREEDY)
    assert completion.error is None
    assert completion.text
    assert completion.prompt_tokens == len(tokenizer.encode(plain, add_special_tokens=False))


@pytest.mark.vllm
def test_identity_and_the_embedded_name(backend: Any, converted: Path) -> None:
    identity = backend.identity()
    assert identity["backend"] == "vllm"
    assert identity["model"] == str(converted)
    assert (identity["dtype"], identity["max_model_len"]) == ("float32", 2048)
    assert identity["vllm"]
    named = registry.parse_entry(entry(EMBEDDED_MODEL, convert_dir=str(converted.parent)))
    assert named.build().model_path() == converted


def test_missing_vllm_is_a_backend_error(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed")
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    built = registry.parse_entry(entry(EMBEDDED_MODEL)).build()
    with pytest.raises(BackendError, match=r"pip install -e '\.\[vllm\]'"):
        built.complete([ask(QUESTIONS[0])], GREEDY)
