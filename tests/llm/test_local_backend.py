"""The embedded CPU model through transformers: offline, deterministic, batch-invariant."""

from __future__ import annotations

import pytest

from chronoscope_dagster.evaluation.prompts import SYSTEM_PROMPT
from chronoscope_dagster.llm.base import BackendError, ChatRequest, Decoding
from chronoscope_dagster.llm.registry import parse_entry

QUESTIONS = [
    "In 2010, who was the Prime Minister of the United Kingdom?",
    "In 2015, who was the Chancellor of Germany?",
    "In 2014, who was the Secretary-General of the United Nations?",
    "Who is the President of France?",
]


def request(question: str, *history: str) -> ChatRequest:
    turns = [("system", SYSTEM_PROMPT)]
    for earlier, answer in zip(history[::2], history[1::2], strict=True):
        turns += [("user", earlier), ("assistant", answer)]
    return ChatRequest((*turns, ("user", question)))


@pytest.fixture(scope="module")
def local():
    backend = parse_entry(
        {
            "name": "local",
            "backend": "local",
            "model": "smollm2-135m-instruct",
            "options": {"threads": 1, "batch_size": 3},
        }
    ).build()
    yield backend
    backend.close()


def test_greedy_answers_are_deterministic_and_batch_invariant(local):
    requests = [request(q) for q in QUESTIONS] + [
        request("And in 2019?", QUESTIONS[0], "David Cameron")
    ]
    batched = local.complete(requests, Decoding())
    one_by_one = [local.complete([r], Decoding())[0] for r in requests]
    assert [c.candidates for c in batched] == [c.candidates for c in one_by_one]
    assert all(c.text and c.error is None for c in batched)
    assert "Cameron" in batched[0].text
    for completion in batched:
        assert 60 < completion.prompt_tokens < 200
        assert 0 < completion.completion_tokens <= 24
    assert batched[-1].prompt_tokens > batched[0].prompt_tokens


def test_answers_do_not_depend_on_the_thread_count(local):
    """The thread count is left out of the cache key (``identity``): it changes no answer."""
    import torch

    requests = [request(q) for q in QUESTIONS]
    one_thread = local.complete(requests, Decoding())
    two = parse_entry(
        {"name": "two", "backend": "local", "model": "smollm2-135m-instruct",
         "options": {"threads": 2, "batch_size": 3}}
    ).build()  # fmt: skip
    try:
        two_threads = two.complete(requests, Decoding())
        assert torch.get_num_threads() == 2
    finally:
        two.close()
        torch.set_num_threads(1)
    assert [c.candidates for c in two_threads] == [c.candidates for c in one_thread]
    assert two.identity() == local.identity()


def test_k_candidates_by_beam_search(local):
    [completion] = local.complete([request(QUESTIONS[0])], Decoding(k=3))
    assert len(completion.candidates) == 3
    assert len(set(completion.candidates)) == 3


def test_max_new_tokens_bounds_the_answer(local):
    [completion] = local.complete([request(QUESTIONS[1])], Decoding(max_new_tokens=3))
    assert completion.completion_tokens <= 3


def test_the_identity_keys_the_cache_without_paths(local):
    assert local.identity() == {
        "backend": "local",
        "model": "smollm2-135m-instruct",
        "dtype": "float32",
    }


def test_a_missing_model_is_a_clear_error(tmp_path):
    backend = parse_entry(
        {"name": "m", "backend": "local", "model": str(tmp_path / "nothing")}
    ).build()
    with pytest.raises(BackendError, match="weights are never downloaded"):
        backend.complete([request("q")], Decoding())
