"""The prompting strategies (issue 16 part 3): restate_scope and rewrite_then_answer, parsed,
cached and counted, end to end through ``predict``, ``CachedChat`` and
``OpenAICompatibleBackend`` against a real HTTP server on 127.0.0.1 that answers scripted
text and records every request it receives."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chronoscope_dagster.evaluation.comparison import comparison_pairs
from chronoscope_dagster.evaluation.inference import (
    PREDICTIONS_SCHEMA,
    SKIPPED_AFTER_ERROR,
    EvalChain,
    predict,
    predictions_table,
)
from chronoscope_dagster.evaluation.prompts import SYSTEM_PROMPT, Setting
from chronoscope_dagster.evaluation.strategies import (
    PROMPTINGS,
    RESTATE_SCOPE_PROMPT,
    REWRITE_PROMPT,
    REWRITE_REQUEST,
    Prompting,
    clean_rewrite,
    parse_answer,
)
from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.llm.registry import (
    PROMPTINGS as REGISTRY_PROMPTINGS,
)
from chronoscope_dagster.llm.registry import (
    RegistryError,
    load_registry,
    parse_entries,
    parse_entry,
    plain_twins,
)

# --- restate_scope parsing ---------------------------------------------------------------------


def test_the_answer_is_after_the_last_marker_in_any_case() -> None:
    assert parse_answer("Time period: 2005\nAnswer: Paris") == ("Paris", True)
    assert parse_answer("Answer: Lyon\nTime period: 2005\nANSWER:   Paris  \n") == ("Paris", True)
    assert parse_answer("the period is 1990s. answer: Bonn") == ("Bonn", True)
    assert parse_answer("Time period: 2005\n**Answer:** Paris") == ("Paris", True)
    assert parse_answer("Time period: 2005\nAnswer:\n\n  Paris\nmore") == ("Paris", True)
    assert parse_answer("Answer:") == ("", True)


def test_a_reply_without_the_marker_falls_back_to_its_last_line() -> None:
    assert parse_answer("Time period: 2005\n  Paris \n\n") == ("Paris", False)
    assert parse_answer("Paris") == ("Paris", False)
    assert parse_answer("   \n") == ("", False)


def test_the_rewrite_is_its_first_non_empty_line() -> None:
    assert clean_rewrite("\n\n  Who led X in 2005?  \nI hope this helps") == "Who led X in 2005?"
    assert clean_rewrite(" \n\t\n") == ""


def test_the_restate_prompt_keeps_the_papers_rules() -> None:
    assert RESTATE_SCOPE_PROMPT.startswith(SYSTEM_PROMPT)
    assert RESTATE_SCOPE_PROMPT.endswith("Answer: <only the entity or value>\n")


# --- the registry ------------------------------------------------------------------------------


def test_prompting_is_carried_on_the_spec_and_defaults_to_plain() -> None:
    assert REGISTRY_PROMPTINGS == PROMPTINGS == ("plain", "restate_scope", "rewrite_then_answer")
    plain = parse_entry({"name": "a", "backend": "oracle"})
    assert plain.prompting == "plain"
    restate = parse_entry({"name": "b", "backend": "oracle", "prompting": "restate_scope"})
    assert restate.prompting == Prompting.RESTATE_SCOPE
    assert all(spec.prompting == "plain" for spec in load_registry())


@pytest.mark.parametrize("value", ["restate", "", 3, None, ["plain"]])
def test_a_bad_prompting_names_the_entry_and_the_field(value: object) -> None:
    entries = [
        {"name": "fine", "backend": "oracle"},
        {"name": "mitigated", "backend": "oracle", "prompting": value},
    ]
    with pytest.raises(RegistryError) as caught:
        parse_entries(entries, source="models.yaml")
    message = str(caught.value)
    assert message.startswith("models.yaml: model #2 ('mitigated'): field `prompting`: ")
    assert "'plain', 'restate_scope' or 'rewrite_then_answer'" in message


def test_plain_twins_share_backend_model_and_options() -> None:
    local = {"backend": "local", "model": "smollm2-135m-instruct", "options": {"threads": 1}}
    specs = parse_entries(
        [
            {"name": "oracle", "backend": "oracle"},
            {"name": "local-2t", **local, "options": {"threads": 2}},
            {"name": "local", **local},
            {"name": "local-long", **local, "max_new_tokens": 64},
            {"name": "local-restate", **local, "prompting": "restate_scope", "max_new_tokens": 48},
            {"name": "local-rewrite", **local, "prompting": "rewrite_then_answer"},
            {"name": "alone", **local, "options": {"threads": 3}, "prompting": "restate_scope"},
        ]
    )
    assert plain_twins(specs) == {"local-restate": "local", "local-rewrite": "local"}


def test_twin_pairs_come_after_the_baseline_pairs_and_never_twice() -> None:
    twins = {"local-restate": "local", "local-rewrite": "local", "gone": "missing"}
    order = ["oracle", "local", "local-restate", "local-rewrite", "gone"]
    assert comparison_pairs(order, twins) == [
        ("local", "oracle"),
        ("local-restate", "oracle"),
        ("local-rewrite", "oracle"),
        ("gone", "oracle"),
        ("local-restate", "local"),
        ("local-rewrite", "local"),
    ]
    # The twin is the baseline: its pair is there once.
    assert comparison_pairs(["local", "local-restate", "oracle"], twins) == [
        ("local-restate", "local"),
        ("oracle", "local"),
    ]
    assert comparison_pairs([], twins) == []


# --- a scripted OpenAI-style server on 127.0.0.1 -------------------------------------------------

Reply = Callable[[list[dict[str, str]], int], tuple[int, list[str]]]
"""(messages, n) -> (HTTP status, the n replies, or the error message)."""


class ScriptedServer:
    """Answers /v1/chat/completions with the scripted ``reply`` and records every body."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.bodies.append(body)
                status, texts = server.reply(body["messages"], body.get("n", 1))
                if status != 200:
                    payload: dict[str, Any] = {"error": {"code": status, "message": texts[0]}}
                else:
                    payload = {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": index,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                            for index, text in enumerate(texts)
                        ],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 5 * len(texts)},
                    }
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def systems(self) -> list[str]:
        return [body["messages"][0]["content"] for body in self.bodies]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


COACH = "Who was the head coach of FC Example in 2005?"
CAPTAIN = "And who was its captain?"
OWNER = "Who owned the club then?"
MAYOR = "Who was the mayor of Exampleton in 1990?"
DEPUTY = "And the deputy mayor?"
CHAINS = [
    EvalChain(
        "a",
        (COACH, CAPTAIN, OWNER),
        ("Coach A", "Captain A", "Owner A"),
        ("Coach Now", "Captain Now", "Owner Now"),
    ),
    EvalChain("b", (MAYOR, DEPUTY), ("Mayor B", "Deputy B"), ("Mayor Now", "Deputy Now")),
]

RESTATED = {
    COACH: "Time period: 2005\nAnswer: Coach A",
    CAPTAIN: "Time period: 2005\nanswer:  Captain A ",
    OWNER: "The club's owner in 2005.\nOwner X",
    MAYOR: "Time period: 1990\nANSWER: Mayor B",
    DEPUTY: "Time period: 1990\nAnswer: Deputy B",
}
"""restate_scope replies by the current question; OWNER's has no Answer: line."""
REWRITTEN = {
    COACH: COACH,
    CAPTAIN: "Who was the captain of FC Example in 2005?",
    OWNER: "Who owned FC Example in 2005?",
    MAYOR: MAYOR,
    DEPUTY: "Who was the deputy mayor of Exampleton in 1990?",
}
ANSWERS = {
    COACH: "Coach A",
    "Who was the captain of FC Example in 2005?": "Captain A",
    "Who owned FC Example in 2005?": "Owner A",
    MAYOR: "Mayor B",
    "Who was the deputy mayor of Exampleton in 1990?": "Deputy B",
}
"""Call-2 answers by the rewritten question."""
REQUEST_OF = {REWRITE_REQUEST.format(question=q): q for q in REWRITTEN}


def scripted(failing_rewrite: str | None = None, empty_rewrite: str | None = None) -> Reply:
    def reply(messages: list[dict[str, str]], n: int) -> tuple[int, list[str]]:
        system, last = messages[0]["content"], messages[-1]["content"]
        if system == RESTATE_SCOPE_PROMPT:
            return 200, [RESTATED[last] + ("" if i == 0 else f" #{i}") for i in range(n)]
        if system == REWRITE_PROMPT:
            question = REQUEST_OF[last]
            if question == failing_rewrite:
                return 400, ["the rewrite was refused"]
            if question == empty_rewrite:
                return 200, ["\n  \n"]
            return 200, [f"\n  {REWRITTEN[question]}  \nThis names the subject."]
        if system == SYSTEM_PROMPT:
            return 200, [ANSWERS.get(last, f"plain answer to {last}")]
        return 400, [f"unscripted system prompt {system[:40]!r}"]

    return reply


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    fake = ScriptedServer(scripted())
    yield fake
    fake.close()


def chat_for(server: ScriptedServer, cache: ResponseCache) -> CachedChat:
    spec = parse_entry(
        {
            "name": "served",
            "backend": "openai_compatible",
            "model": "test-model",
            "options": {"base_url": server.url, "max_retries": 0, "concurrency": 2},
        }
    )
    return CachedChat(spec.build(), cache)


DECODING = Decoding(max_new_tokens=24)


def run(
    server: ScriptedServer,
    cache: ResponseCache,
    setting: Setting,
    prompting: str,
    decoding: Decoding = DECODING,
) -> tuple[list[dict[str, Any]], CachedChat]:
    chat = chat_for(server, cache)
    try:
        predictions = predict(CHAINS, setting, chat, decoding, prompting=prompting)
    finally:
        chat.backend.close()
    table = predictions_table("served", setting, predictions)
    assert table.schema == PREDICTIONS_SCHEMA
    assert table.schema.names[-2:] == ["raw_output", "rewritten_question"]
    rows = table.to_pylist()
    for row, prediction in zip(rows, predictions, strict=True):
        row["answer_line_missing"] = prediction.answer_line_missing
    return rows, chat


def user_turns(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in body["messages"][1:]]


def test_plain_is_the_papers_prompt_with_null_new_columns(server: ScriptedServer, tmp_path):
    rows, _ = run(server, ResponseCache(tmp_path / "c.sqlite"), Setting.GOLD_CONTEXT, "plain")
    assert set(server.systems()) == {SYSTEM_PROMPT}
    assert len(server.bodies) == 3
    assert [(r["raw_output"], r["rewritten_question"]) for r in rows] == [(None, None)] * 3
    by_question = {user_turns(b)[-1][1]: user_turns(b) for b in server.bodies}
    assert by_question[OWNER] == [
        ("user", COACH),
        ("assistant", "Coach A"),
        ("user", CAPTAIN),
        ("assistant", "Captain A"),
        ("user", OWNER),
    ]


def test_restate_scope_gold_context(server: ScriptedServer, tmp_path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    rows, chat = run(server, cache, Setting.GOLD_CONTEXT, "restate_scope")

    assert server.systems() == [RESTATE_SCOPE_PROMPT] * 3
    by_question = {user_turns(b)[-1][1]: user_turns(b) for b in server.bodies}
    assert by_question[OWNER] == [
        ("user", COACH),
        ("assistant", "Coach A"),
        ("user", CAPTAIN),
        ("assistant", "Captain A"),
        ("user", OWNER),
    ]
    got = [
        (
            r["chain_id"],
            r["turn_index"],
            r["prediction"],
            r["candidates"],
            r["raw_output"],
            r["rewritten_question"],
            r["answer_line_missing"],
            r["error"],
        )
        for r in rows
    ]
    assert got == [
        ("a", 1, "Captain A", ["Captain A"], RESTATED[CAPTAIN].strip(), None, False, None),
        ("a", 2, "Owner X", ["Owner X"], RESTATED[OWNER], None, True, None),
        ("b", 1, "Deputy B", ["Deputy B"], RESTATED[DEPUTY], None, False, None),
    ]
    assert chat.usage.calls == 3

    rerun, again = run(server, cache, Setting.GOLD_CONTEXT, "restate_scope")
    assert len(server.bodies) == 3
    assert (again.stats.hits, again.stats.misses, again.usage.calls) == (3, 0, 0)
    assert rerun == rows


def test_restate_scope_parses_every_candidate(server: ScriptedServer, tmp_path) -> None:
    decoding = Decoding(max_new_tokens=48, temperature=0.7, k=2)
    rows, _ = run(
        server,
        ResponseCache(tmp_path / "c.sqlite"),
        Setting.GOLD_CONTEXT,
        "restate_scope",
        decoding,
    )
    assert [body["n"] for body in server.bodies] == [2, 2, 2]
    assert [(r["prediction"], r["candidates"], r["answer_line_missing"]) for r in rows] == [
        ("Captain A", ["Captain A", "Captain A  #1"], False),
        ("Owner X", ["Owner X", "Owner X #1"], True),
        ("Deputy B", ["Deputy B", "Deputy B #1"], False),
    ]
    assert rows[0]["raw_output"] == RESTATED[CAPTAIN].strip()


def test_restate_scope_self_conditioned_history_is_the_raw_output(
    server: ScriptedServer, tmp_path
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    rows, _ = run(server, cache, Setting.SELF_CONDITIONED, "restate_scope")

    assert len(server.bodies) == 5
    by_question = {user_turns(b)[-1][1]: user_turns(b) for b in server.bodies}
    assert by_question[OWNER] == [
        ("user", COACH),
        ("assistant", "Time period: 2005\nAnswer: Coach A"),
        ("user", CAPTAIN),
        ("assistant", "Time period: 2005\nanswer:  Captain A"),
        ("user", OWNER),
    ]
    assert [(r["turn_index"], r["scored"], r["prediction"]) for r in rows] == [
        (0, False, "Coach A"),
        (1, True, "Captain A"),
        (2, True, "Owner X"),
        (0, False, "Mayor B"),
        (1, True, "Deputy B"),
    ]
    assert sum(r["answer_line_missing"] for r in rows) == 1

    rerun, again = run(server, cache, Setting.SELF_CONDITIONED, "restate_scope")
    assert len(server.bodies) == 5 and again.usage.calls == 0 and rerun == rows


def rewrite_calls(server: ScriptedServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if b["messages"][0]["content"] == REWRITE_PROMPT]


def answer_calls(server: ScriptedServer) -> list[dict[str, Any]]:
    return [b for b in server.bodies if b["messages"][0]["content"] == SYSTEM_PROMPT]


def test_rewrite_then_answer_gold_context(server: ScriptedServer, tmp_path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    decoding = Decoding(max_new_tokens=24, temperature=0.7, top_p=0.9, k=2, seed=3)
    rows, chat = run(server, cache, Setting.GOLD_CONTEXT, "rewrite_then_answer", decoding)

    firsts, seconds = rewrite_calls(server), answer_calls(server)
    assert (len(firsts), len(seconds), len(server.bodies)) == (3, 3, 6)
    assert chat.usage.calls == 6
    by_question = {REQUEST_OF[user_turns(b)[-1][1]]: user_turns(b) for b in firsts}
    assert by_question[OWNER] == [
        ("user", COACH),
        ("assistant", "Coach A"),
        ("user", CAPTAIN),
        ("assistant", "Captain A"),
        ("user", REWRITE_REQUEST.format(question=OWNER)),
    ]
    assert by_question[DEPUTY] == [
        ("user", MAYOR),
        ("assistant", "Mayor B"),
        ("user", REWRITE_REQUEST.format(question=DEPUTY)),
    ]
    # Call 1: greedy, one candidate, at least 64 new tokens; call 2: the entry's decoding.
    assert {(b["temperature"], b["top_p"], b["max_tokens"], b.get("n")) for b in firsts} == {
        (0.0, 1.0, 64, None)
    }
    assert {(b["temperature"], b["top_p"], b["max_tokens"], b.get("n")) for b in seconds} == {
        (0.7, 0.9, 24, 2)
    }
    # Call 2 holds only the rewritten question.
    assert sorted(user_turns(b) for b in seconds) == sorted(
        [[("user", REWRITTEN[q])] for q in (CAPTAIN, OWNER, DEPUTY)]
    )
    got = [
        (r["chain_id"], r["turn_index"], r["prediction"], r["rewritten_question"], r["raw_output"])
        for r in rows
    ]
    assert got == [
        ("a", 1, "Captain A", REWRITTEN[CAPTAIN], None),
        ("a", 2, "Owner A", REWRITTEN[OWNER], None),
        ("b", 1, "Deputy B", REWRITTEN[DEPUTY], None),
    ]
    # Tokens are both calls' (11 prompt tokens each; 5 per choice).
    assert [(r["prompt_tokens"], r["completion_tokens"]) for r in rows] == [(22, 5 + 5)] * 3
    assert all(r["latency_s"] > 0 for r in rows)

    rerun, again = run(server, cache, Setting.GOLD_CONTEXT, "rewrite_then_answer", decoding)
    assert len(server.bodies) == 6
    assert (again.stats.hits, again.stats.misses, again.usage.calls) == (6, 0, 0)
    assert rerun == rows


def test_rewrite_then_answer_self_conditioned_history_is_the_call2_answers(
    server: ScriptedServer, tmp_path
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    rows, _ = run(server, cache, Setting.SELF_CONDITIONED, "rewrite_then_answer")

    assert (len(rewrite_calls(server)), len(answer_calls(server))) == (5, 5)
    by_question = {REQUEST_OF[user_turns(b)[-1][1]]: user_turns(b) for b in rewrite_calls(server)}
    assert by_question[COACH] == [("user", REWRITE_REQUEST.format(question=COACH))]
    assert by_question[OWNER] == [
        ("user", COACH),
        ("assistant", "Coach A"),
        ("user", CAPTAIN),
        ("assistant", "Captain A"),
        ("user", REWRITE_REQUEST.format(question=OWNER)),
    ]
    assert [(r["chain_id"], r["turn_index"], r["prediction"]) for r in rows] == [
        ("a", 0, "Coach A"),
        ("a", 1, "Captain A"),
        ("a", 2, "Owner A"),
        ("b", 0, "Mayor B"),
        ("b", 1, "Deputy B"),
    ]
    rerun, again = run(server, cache, Setting.SELF_CONDITIONED, "rewrite_then_answer")
    assert len(server.bodies) == 10 and again.usage.calls == 0 and rerun == rows


BLANK_REWRITE = "rewrite_failed: empty_content: choice 0 has blank content (finish_reason stop)"
"""A blank reply of a server is an error, like a null one (``llm.remote``), never cached."""


def test_a_failed_rewrite_is_the_turns_error(tmp_path) -> None:
    failing = ScriptedServer(scripted(failing_rewrite=CAPTAIN, empty_rewrite=DEPUTY))
    try:
        cache = ResponseCache(tmp_path / "c.sqlite")
        rows, _ = run(failing, cache, Setting.GOLD_CONTEXT, "rewrite_then_answer")
        assert [
            (r["turn_index"], r["prediction"], r["error"], r["rewritten_question"]) for r in rows
        ] == [
            (1, None, "rewrite_failed: http_400: the rewrite was refused", None),
            (2, "Owner A", None, REWRITTEN[OWNER]),
            (1, None, BLANK_REWRITE, None),
        ]
        # Only the good rewrite was answered.
        assert [user_turns(b) for b in answer_calls(failing)] == [[("user", REWRITTEN[OWNER])]]

        failing.bodies.clear()
        rows, _ = run(failing, cache, Setting.SELF_CONDITIONED, "rewrite_then_answer")
        assert [(r["chain_id"], r["turn_index"], r["error"]) for r in rows] == [
            ("a", 0, None),
            ("a", 1, "rewrite_failed: http_400: the rewrite was refused"),
            ("a", 2, SKIPPED_AFTER_ERROR),
            ("b", 0, None),
            ("b", 1, BLANK_REWRITE),
        ]
        # A failure is not cached: the failing and the blank rewrites were asked again; the
        # first turns were new.
        asked = [REQUEST_OF[user_turns(b)[-1][1]] for b in rewrite_calls(failing)]
        assert sorted(asked) == sorted([COACH, MAYOR, CAPTAIN, DEPUTY])
        assert sorted(user_turns(b) for b in answer_calls(failing)) == [
            [("user", COACH)],
            [("user", MAYOR)],
        ]
    finally:
        failing.close()
