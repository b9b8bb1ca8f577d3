"""The three context settings, turn-synchronous self-conditioning, and the response cache."""

from __future__ import annotations

import multiprocessing
from dataclasses import replace

import pytest

from chronoscope_dagster.evaluation.inference import (
    SKIPPED_AFTER_ERROR,
    EvalChain,
    predict,
    predictions_table,
)
from chronoscope_dagster.evaluation.prompts import SYSTEM_PROMPT, Setting, conversation
from chronoscope_dagster.llm.base import ChatRequest, Completion, Decoding
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache, cache_key
from chronoscope_dagster.llm.registry import parse_entry

CHAINS = [
    EvalChain(
        "c1",
        ("In 2010, who was the UK PM?", "And in 2019?", "And in 2023?"),
        ("Gordon Brown", "Theresa May", "Rishi Sunak"),
        ("Keir Starmer", "Keir Starmer", "Keir Starmer"),
    ),
    EvalChain(
        "c2",
        ("In 2005, who led Germany?", "And in 2021?"),
        ("Gerhard Schröder", "Angela Merkel"),
        ("Friedrich Merz", ""),
    ),
    EvalChain(
        "c3",
        ("In 1999, who was US president?", "And in 2002?", "And in 2010?", "And in 2018?"),
        ("Bill Clinton", "George W. Bush", "Barack Obama", "Donald Trump"),
        ("", "", "", ""),
    ),
]


def reference(name: str):
    return parse_entry({"name": name, "backend": name}).build()


class Recording:
    """A real backend behind a spy that records each batch and can inject faults."""

    cacheable = True

    def __init__(self, inner, *, fail_question: str = "", crash_after: int | None = None):
        self.inner = inner
        self.batches: list[list[ChatRequest]] = []
        self.fail_question = fail_question
        self.crash_after = crash_after

    def identity(self):
        return {**self.inner.identity(), "spy": True}

    def complete(self, requests, decoding):
        if self.crash_after is not None and self.calls + len(requests) > self.crash_after:
            raise KeyboardInterrupt("killed")
        self.batches.append(list(requests))
        return [
            Completion(error="http_500: injected") if r.messages[-1][1] == self.fail_question else c
            for r, c in zip(requests, self.inner.complete(requests, decoding), strict=True)
        ]

    @property
    def calls(self) -> int:
        return sum(len(b) for b in self.batches)

    def close(self):
        pass


def test_the_system_prompt_is_the_papers():
    assert SYSTEM_PROMPT.count("\n") == 5 and SYSTEM_PROMPT.endswith("\n")
    assert SYSTEM_PROMPT.startswith("You are a helpful assistant that answers factual questions.\n")
    assert "- Answer with only the entity or value, no extra explanation.\n" in SYSTEM_PROMPT


def test_each_setting_shows_what_the_paper_says():
    questions, golds = CHAINS[0].questions, CHAINS[0].answers
    gold = conversation(questions, golds, 2, Setting.GOLD_CONTEXT)
    assert gold == (
        ("system", SYSTEM_PROMPT),
        ("user", questions[0]),
        ("assistant", "Gordon Brown"),
        ("user", questions[1]),
        ("assistant", "Theresa May"),
        ("user", questions[2]),
    )
    own = conversation(questions, ["David Cameron", "Boris Johnson"], 2, Setting.SELF_CONDITIONED)
    assert [m[1] for m in own if m[0] == "assistant"] == ["David Cameron", "Boris Johnson"]
    assert conversation(questions, golds, 2, Setting.QUESTIONS_ONLY) == (
        ("system", SYSTEM_PROMPT),
        ("user", questions[2]),
    )


@pytest.mark.parametrize("setting", [Setting.GOLD_CONTEXT, Setting.QUESTIONS_ONLY])
def test_the_oracle_answers_every_scored_turn_with_its_gold(setting):
    chat = CachedChat(reference("oracle"), None)
    predictions = predict(CHAINS, setting, chat, Decoding())
    got = {(p.chain_id, p.turn_index): p.completion.text for p in predictions}
    expected = {(c.chain_id, t): c.answers[t] for c in CHAINS for t in range(1, len(c.questions))}
    assert got == expected
    assert all(p.scored for p in predictions)
    everything = predict(CHAINS, setting, chat, Decoding(), first_scored_turn=0)
    assert len(everything) == sum(len(c.questions) for c in CHAINS)


def test_copy_previous_answers_the_last_assistant_message_of_hand_made_conversations():
    system = reference("copy_previous")
    ask = [
        ChatRequest(messages=(("system", SYSTEM_PROMPT), ("user", "In 2010, who was the UK PM?"))),
        ChatRequest(
            messages=(
                ("system", SYSTEM_PROMPT),
                ("user", "In 2010, who was the UK PM?"),
                ("assistant", "Gordon Brown"),
                ("user", "And in 2019?"),
                ("assistant", "Theresa May"),
                ("user", "And in 2023?"),
            ),
            gold="Rishi Sunak",
            present_day="Keir Starmer",
        ),
        # the last assistant message, even when the user spoke twice since
        ChatRequest(
            messages=(("assistant", "Paris"), ("user", "Where?"), ("user", "And then?")),
            gold="Lyon",
        ),
    ]
    completions = system.complete(ask, Decoding(k=3))
    assert [c.candidates for c in completions] == [
        ("",) * 3,
        ("Theresa May",) * 3,
        ("Paris",) * 3,
    ]
    assert system.cacheable is False and system.identity() == {"backend": "copy_previous"}


def test_copy_previous_copies_the_gold_in_gold_context_and_nothing_otherwise():
    chat = CachedChat(reference("copy_previous"), None)
    gold = predict(CHAINS, Setting.GOLD_CONTEXT, chat, Decoding())
    assert {(p.chain_id, p.turn_index): p.completion.text for p in gold} == {
        (c.chain_id, t): c.answers[t - 1] for c in CHAINS for t in range(1, len(c.questions))
    }
    alone = predict(CHAINS, Setting.QUESTIONS_ONLY, chat, Decoding())
    assert alone and {p.completion.text for p in alone} == {""}
    own = predict(CHAINS, Setting.SELF_CONDITIONED, chat, Decoding())
    assert len(own) == sum(len(c.questions) for c in CHAINS)
    assert {p.completion.text for p in own} == {""}, "its own first answer is empty"


def test_self_conditioned_is_turn_synchronous_and_uses_the_models_own_answers():
    spy = Recording(reference("present_day"))
    predictions = predict(CHAINS, Setting.SELF_CONDITIONED, CachedChat(spy, None), Decoding())
    assert [len(batch) for batch in spy.batches] == [3, 3, 2, 1]
    assert [r.messages[-1][1] for r in spy.batches[0]] == [c.questions[0] for c in CHAINS]
    uk_turn_3 = next(r for r in spy.batches[2] if r.messages[-1][1] == "And in 2023?")
    assert [m[1] for m in uk_turn_3.messages if m[0] == "assistant"] == ["Keir Starmer"] * 2
    us_turn_2 = next(r for r in spy.batches[1] if r.messages[-1][1] == "And in 2002?")
    assert [m[1] for m in us_turn_2.messages if m[0] == "assistant"] == ["I don't know"]
    assert [(p.chain_id, p.turn_index, p.scored) for p in predictions][:3] == [
        ("c1", 0, False),
        ("c1", 1, True),
        ("c1", 2, True),
    ]
    chain_by_chain = Recording(reference("present_day"))
    sequential = predict(
        CHAINS,
        Setting.SELF_CONDITIONED,
        CachedChat(chain_by_chain, None),
        Decoding(),
        turn_synchronous=False,
    )
    assert [len(b) for b in chain_by_chain.batches] == [1] * 9
    assert sequential == predictions


def test_a_failed_turn_is_an_error_row_and_stops_only_its_chain(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    spy = Recording(reference("oracle"), fail_question="And in 2019?")
    predictions = predict(CHAINS, Setting.SELF_CONDITIONED, CachedChat(spy, cache), Decoding())
    by_key = {(p.chain_id, p.turn_index): p.completion for p in predictions}
    assert by_key[("c1", 1)].error == "http_500: injected"
    assert by_key[("c1", 1)].text is None
    assert by_key[("c1", 2)].error == SKIPPED_AFTER_ERROR
    assert by_key[("c3", 3)].text == "Donald Trump"
    table = predictions_table("m", Setting.SELF_CONDITIONED, predictions)
    assert table.column("prediction").null_count == 2
    assert table.column("error").null_count == table.num_rows - 2
    retry = Recording(reference("oracle"))
    again = predict(CHAINS, Setting.SELF_CONDITIONED, CachedChat(retry, cache), Decoding())
    assert retry.calls == 2, "only the failed turn and the one it blocked are asked again"
    assert all(p.completion.error is None for p in again)


def test_a_rerun_costs_no_call_and_a_killed_run_resumes(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    crashing = Recording(reference("oracle"), crash_after=4)
    with pytest.raises(KeyboardInterrupt):
        predict(CHAINS, Setting.GOLD_CONTEXT, CachedChat(crashing, cache, chunk_size=2), Decoding())
    assert crashing.calls == 4 and len(cache) == 4
    resumed = Recording(reference("oracle"))
    chat = CachedChat(resumed, cache, chunk_size=2)
    first = predict(CHAINS, Setting.GOLD_CONTEXT, chat, Decoding())
    assert resumed.calls == 2 and (chat.stats.hits, chat.stats.misses) == (4, 2)
    rerun = Recording(reference("oracle"))
    chat = CachedChat(rerun, cache)
    second = predict(CHAINS, Setting.GOLD_CONTEXT, chat, Decoding())
    assert rerun.calls == 0 and chat.stats.hits == 6
    assert [p.completion.text for p in second] == [p.completion.text for p in first]
    assert all(p.completion.cached for p in second)


def test_identical_requests_are_asked_once(tmp_path):
    spy = Recording(reference("oracle"))
    chat = CachedChat(spy, ResponseCache(tmp_path / "c.sqlite"))
    request = ChatRequest((("user", "In 2010, who was the UK PM?"),), gold="Gordon Brown")
    assert [c.text for c in chat.complete([request] * 3, Decoding())] == ["Gordon Brown"] * 3
    assert spy.calls == 1 and chat.stats.duplicates == 2


def test_the_key_covers_backend_decoding_and_messages_but_not_the_gold():
    request = ChatRequest((("user", "q"),), gold="a")
    key = cache_key({"backend": "local", "model": "m"}, Decoding(), request)
    assert key == cache_key(
        {"model": "m", "backend": "local"}, Decoding(), replace(request, gold="b")
    )
    assert key != cache_key({"backend": "local", "model": "n"}, Decoding(), request)
    assert key != cache_key({"backend": "local", "model": "m"}, Decoding(max_new_tokens=8), request)
    assert key != cache_key(
        {"backend": "local", "model": "m"}, Decoding(), ChatRequest((("user", "q "),))
    )


def _writer(path: str, worker: int) -> None:
    cache = ResponseCache(path)
    for start in range(0, 200, 10):
        cache.put_many(
            {"backend": "w"},
            [(f"{worker}-{i}", Completion(candidates=(str(i),))) for i in range(start, start + 10)],
        )
    cache.close()


def test_processes_share_the_cache(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    cache = ResponseCache(path)
    assert len(cache) == 600
    assert cache.get_many(["2-199"])["2-199"].candidates == ("199",)
