"""Running a model over chains under one context setting.

Gold-context and questions-only prompts do not depend on earlier outputs, so every scored
turn goes in one stream of batches. Self-conditioned runs are turn-synchronous: turn 1 of
every chain in one batch, then turn 2 of every chain with its own history, and so on; a chain
whose earlier turn failed stops there, and its later turns are recorded as skipped. Under
explicit scope every scored turn is its explicit question alone; a turn without one is
recorded with the error ``NO_EXPLICIT_QUESTION`` and never sent.

The entry's prompting strategy (``strategies``) is applied to every request, in every
setting, by ``answer``: ``plain`` sends the request as built (the paper's prompt);
``restate_scope`` swaps in its system prompt, reads the answer from the reply's last
``Answer:`` line (a reply without one: its last non-empty line, counted as
``answer_line_missing``) and keeps the reply as ``raw_output``; ``rewrite_then_answer`` makes
two calls per turn, both through the same cache: the rewrite of the current question
(``rewritten_question``) given the conversation, then the rewritten question alone under the
paper's prompt. A failed rewrite is the turn's error (``rewrite_failed: ...``, or
``rewrite_empty``), never a silent fallback to the plain question; the turn's tokens and
latency are the sums of both calls. A self-conditioned history shows what the model said:
its raw replies under restate scope (the period it states is the state it tracks), its
answers to the rewritten questions under rewrite-then-answer. The reference systems get
the original request's gold, present-day value and ``states_scope`` on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from chronoscope_dagster.evaluation.prompts import SYSTEM_PROMPT, Setting, conversation
from chronoscope_dagster.evaluation.strategies import (
    RESTATE_SCOPE_PROMPT,
    REWRITE_MIN_TOKENS,
    REWRITE_PROMPT,
    REWRITE_REQUEST,
    Prompting,
    clean_rewrite,
    parse_answer,
)
from chronoscope_dagster.llm.base import ChatRequest, Completion, Decoding
from chronoscope_dagster.llm.blind import VIEW_COLUMNS, Shape, View, shape_of
from chronoscope_dagster.llm.cache import CachedChat

SKIPPED_AFTER_ERROR = "skipped: an earlier turn of the chain failed"
REWRITE_FAILED = "rewrite_failed"
"""Error kind of a turn whose rewrite call failed (``rewrite_failed: <its error>``)."""
REWRITE_EMPTY = "rewrite_empty: the rewrite call answered no question"
NO_EXPLICIT_QUESTION = "no_explicit_question: the turn has no explicit question"
TURN_COLUMNS = ("chain_id", "turn_index", "question", "answer", "present_labels")
"""What ``chains_from_turns`` needs; ``is_explicit`` and ``explicit_question`` are read too
when present (explicit scope needs the second), and the columns of a turn's shape
(``llm.blind.VIEW_COLUMNS``) that the ``blind`` reference system reads."""

PREDICTIONS_SCHEMA = pa.schema(
    [
        pa.field("model", pa.string(), nullable=False),
        pa.field("setting", pa.string(), nullable=False),
        pa.field("chain_id", pa.string(), nullable=False),
        pa.field("turn_index", pa.int16(), nullable=False),
        pa.field("scored", pa.bool_(), nullable=False),
        pa.field("prediction", pa.string()),
        pa.field("candidates", pa.list_(pa.string()), nullable=False),
        pa.field("error", pa.string()),
        pa.field("latency_s", pa.float64(), nullable=False),
        pa.field("prompt_tokens", pa.int32(), nullable=False),
        pa.field("completion_tokens", pa.int32(), nullable=False),
        pa.field("raw_output", pa.string()),
        pa.field("rewritten_question", pa.string()),
    ]
)
"""``raw_output`` is the reply the prediction was read from (restate scope; null otherwise),
``rewritten_question`` the question call 2 asked (rewrite then answer; null otherwise)."""


@dataclass(frozen=True)
class EvalChain:
    chain_id: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    present_day: tuple[str, ...]
    explicit: tuple[bool, ...] = ()
    """Whether each turn's own question states its scope (reference systems read it)."""
    explicit_questions: tuple[str | None, ...] = ()
    shapes: tuple[Shape, ...] = ()
    """What a reader sees of each turn without the facts (the ``blind`` system's view)."""
    subjects: frozenset[str] = frozenset()

    def request(self, turn: int, setting: Setting, earlier: Sequence[str]) -> ChatRequest:
        alone = setting is Setting.EXPLICIT_SCOPE
        questions = tuple(q or "" for q in self.explicit_questions) if alone else self.questions
        return ChatRequest(
            messages=conversation(questions, earlier, turn, setting),
            gold=self.answers[turn],
            present_day=self.present_day[turn],
            states_scope=alone or (bool(self.explicit) and self.explicit[turn]),
            view=self._view(turn, setting, earlier) if self.shapes else None,
            subjects=self.subjects,
        )

    def _view(self, turn: int, setting: Setting, earlier: Sequence[str]) -> View:
        """The shapes and answers the setting shows: the whole history in gold context and
        self-conditioned, the current turn alone otherwise (stating its scope under explicit
        scope)."""
        if setting in (Setting.GOLD_CONTEXT, Setting.SELF_CONDITIONED):
            return View(self.shapes[: turn + 1], tuple(earlier[:turn]))
        current = self.shapes[turn]
        if setting is Setting.EXPLICIT_SCOPE:
            current = replace(current, explicit=True)
        return View((current,), ())

    def can_ask(self, turn: int, setting: Setting) -> bool:
        return setting is not Setting.EXPLICIT_SCOPE or (
            turn < len(self.explicit_questions) and self.explicit_questions[turn] is not None
        )


@dataclass(frozen=True)
class Answer:
    """One turn answered under a prompting strategy."""

    completion: Completion
    raw_output: str | None = None
    rewritten_question: str | None = None
    answer_line_missing: bool = False

    @property
    def shown(self) -> str | None:
        """What a self-conditioned history shows of the turn: the raw reply if there is one
        (restate scope), else the answer; None if the turn failed."""
        if self.completion.text is None:
            return None
        return self.raw_output if self.raw_output is not None else self.completion.text


@dataclass(frozen=True)
class Prediction:
    chain_id: str
    turn_index: int
    scored: bool
    completion: Completion
    raw_output: str | None = None
    rewritten_question: str | None = None
    answer_line_missing: bool = False

    @classmethod
    def of(cls, chain_id: str, turn: int, scored: bool, answer: Answer) -> Prediction:
        return cls(
            chain_id,
            turn,
            scored,
            answer.completion,
            answer.raw_output,
            answer.rewritten_question,
            answer.answer_line_missing,
        )


def chains_from_turns(turns: pa.Table) -> list[EvalChain]:
    """Chains from rows of the ``turns`` table (any order), in chain-id order."""
    optional = [c for c in ("is_explicit", "explicit_question") if c in turns.column_names]
    shaped = all(column in turns.column_names for column in VIEW_COLUMNS)
    extra = [c for c in VIEW_COLUMNS if shaped and c not in (*TURN_COLUMNS, *optional)]
    by_chain: dict[str, list[dict]] = {}
    for row in turns.select([*TURN_COLUMNS, *optional, *extra]).to_pylist():
        by_chain.setdefault(row["chain_id"], []).append(row)
    chains = []
    for chain_id in sorted(by_chain):
        rows = sorted(by_chain[chain_id], key=lambda row: row["turn_index"])
        if [r["turn_index"] for r in rows] != list(range(len(rows))):
            indexes = [r["turn_index"] for r in rows]
            raise ValueError(f"chain {chain_id} has turns {indexes}, not 0..n-1")
        chains.append(
            EvalChain(
                chain_id,
                tuple(r["question"] for r in rows),
                tuple(r["answer"] for r in rows),
                tuple(r["present_labels"][0] if r["present_labels"] else "" for r in rows),
                tuple(bool(r["is_explicit"]) for r in rows) if "is_explicit" in optional else (),
                tuple(r["explicit_question"] for r in rows)
                if "explicit_question" in optional
                else (),
                tuple(shape_of(r) for r in rows) if shaped else (),
                frozenset(r["subject_qid"] for r in rows) if shaped else frozenset(),
            )
        )
    return chains


def scored_turn_indexes(length: int, first_scored_turn: int) -> range:
    return range(min(first_scored_turn, length), length)


def predict(
    chains: Sequence[EvalChain],
    setting: Setting,
    chat: CachedChat,
    decoding: Decoding,
    *,
    first_scored_turn: int = 1,
    turn_synchronous: bool = True,
    progress: Callable[[int], None] | None = None,
    prompting: Prompting | str = Prompting.PLAIN,
) -> list[Prediction]:
    """Predictions for every scored turn (and, self-conditioned, every turn before one), each
    turn answered under ``prompting``."""
    prompting = Prompting(prompting)
    if setting is Setting.SELF_CONDITIONED:
        if turn_synchronous:
            return _self_conditioned(chains, chat, decoding, first_scored_turn, progress, prompting)
        return [
            p
            for chain in chains
            for p in _self_conditioned(
                [chain], chat, decoding, first_scored_turn, progress, prompting
            )
        ]
    items = [
        (chain, turn)
        for chain in chains
        for turn in scored_turn_indexes(len(chain.questions), first_scored_turn)
    ]
    asked = [(chain, turn) for chain, turn in items if chain.can_ask(turn, setting)]
    requests = [chain.request(turn, setting, chain.answers) for chain, turn in asked]
    answers = iter(answer(requests, chat, decoding, prompting, progress))
    return [
        Prediction.of(
            chain.chain_id,
            turn,
            True,
            next(answers)
            if chain.can_ask(turn, setting)
            else Answer(Completion(error=NO_EXPLICIT_QUESTION)),
        )
        for chain, turn in items
    ]


def _self_conditioned(
    chains: Sequence[EvalChain],
    chat: CachedChat,
    decoding: Decoding,
    first_scored_turn: int,
    progress: Callable[[int], None] | None,
    prompting: Prompting = Prompting.PLAIN,
) -> list[Prediction]:
    own: dict[str, list[str]] = {chain.chain_id: [] for chain in chains}
    failed: set[str] = set()
    predictions: list[Prediction] = []
    top1 = Decoding(**{**decoding.as_dict(), "k": 1})
    for turn in range(max((len(c.questions) for c in chains), default=0)):
        active = [c for c in chains if turn < len(c.questions)]
        for chain in (c for c in active if c.chain_id in failed):
            predictions.append(
                Prediction(
                    chain.chain_id,
                    turn,
                    turn >= first_scored_turn,
                    Completion(error=SKIPPED_AFTER_ERROR),
                )
            )
        live = [c for c in active if c.chain_id not in failed]
        requests = [c.request(turn, Setting.SELF_CONDITIONED, own[c.chain_id]) for c in live]
        answers = answer(requests, chat, top1, prompting, progress)
        for chain, answered in zip(live, answers, strict=True):
            predictions.append(
                Prediction.of(chain.chain_id, turn, turn >= first_scored_turn, answered)
            )
            if answered.shown is None:
                failed.add(chain.chain_id)
            else:
                own[chain.chain_id].append(answered.shown)
    predictions.sort(key=lambda p: (p.chain_id, p.turn_index))
    return predictions


def answer(
    requests: Sequence[ChatRequest],
    chat: CachedChat,
    decoding: Decoding,
    prompting: Prompting | str = Prompting.PLAIN,
    progress: Callable[[int], None] | None = None,
) -> list[Answer]:
    """Every request (as ``EvalChain.request`` builds it, the paper's system prompt first)
    answered under ``prompting``, in order. ``progress`` counts backend requests, two per
    turn under rewrite then answer."""
    prompting = Prompting(prompting)
    if prompting is Prompting.PLAIN:
        return [Answer(c) for c in chat.complete(requests, decoding, progress)]
    if prompting is Prompting.RESTATE_SCOPE:
        sent = [_with_system(request, RESTATE_SCOPE_PROMPT) for request in requests]
        return [_restated(c) for c in chat.complete(sent, decoding, progress)]
    return _rewrite_then_answer(requests, chat, decoding, progress)


def _with_system(request: ChatRequest, system: str) -> ChatRequest:
    if not request.messages or request.messages[0] != ("system", SYSTEM_PROMPT):
        raise ValueError("a request to re-prompt must start with the paper's system prompt")
    return replace(request, messages=(("system", system), *request.messages[1:]))


def _restated(completion: Completion) -> Answer:
    if completion.text is None:
        return Answer(completion)
    parsed = [parse_answer(candidate) for candidate in completion.candidates]
    return Answer(
        replace(completion, candidates=tuple(text for text, _ in parsed)),
        raw_output=completion.text,
        answer_line_missing=not parsed[0][1],
    )


def rewrite_decoding(decoding: Decoding) -> Decoding:
    """The rewrite call's decoding: greedy, one candidate, at least ``REWRITE_MIN_TOKENS``."""
    return replace(
        decoding,
        temperature=0.0,
        top_p=1.0,
        k=1,
        max_new_tokens=max(decoding.max_new_tokens, REWRITE_MIN_TOKENS),
    )


def rewrite_request(request: ChatRequest) -> ChatRequest:
    """Call 1 of rewrite then answer: the conversation of ``request`` under the rewrite
    prompt, its last (user) message wrapped in ``REWRITE_REQUEST``."""
    request = _with_system(request, REWRITE_PROMPT)
    *head, (role, question) = request.messages
    if role != "user":
        raise ValueError(f"the last message of a request must be the user's, not {role!r}")
    return replace(request, messages=(*head, ("user", REWRITE_REQUEST.format(question=question))))


def _rewrite_then_answer(
    requests: Sequence[ChatRequest],
    chat: CachedChat,
    decoding: Decoding,
    progress: Callable[[int], None] | None,
) -> list[Answer]:
    rewrites = chat.complete(
        [rewrite_request(request) for request in requests], rewrite_decoding(decoding), progress
    )
    questions = [None if c.text is None else clean_rewrite(c.text) for c in rewrites]
    pending = [
        (
            index,
            replace(request, messages=(("system", SYSTEM_PROMPT), ("user", question))),
        )
        for index, (request, question) in enumerate(zip(requests, questions, strict=True))
        if question
    ]
    answers = chat.complete([r for _, r in pending], decoding, progress)
    second = dict(zip((index for index, _ in pending), answers, strict=True))
    results = []
    for index, (first, question) in enumerate(zip(rewrites, questions, strict=True)):
        if first.error is not None:
            error = f"{REWRITE_FAILED}: {first.error}"
        elif not question:
            error = REWRITE_EMPTY
        else:
            error = None
        if error is not None:
            results.append(Answer(_summed(first, Completion(error=error))))
            continue
        results.append(Answer(_summed(first, second[index]), rewritten_question=question))
    return results


def _summed(first: Completion, second: Completion) -> Completion:
    """``second`` with the tokens and latency of both calls."""
    return replace(
        second,
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        completion_tokens=first.completion_tokens + second.completion_tokens,
        latency_s=first.latency_s + second.latency_s,
        cached=first.cached and second.cached,
    )


def predictions_table(model: str, setting: Setting, predictions: Sequence[Prediction]) -> pa.Table:
    ordered = sorted(predictions, key=lambda p: (p.chain_id, p.turn_index))
    return pa.Table.from_pydict(
        {
            "model": [model] * len(ordered),
            "setting": [setting.value] * len(ordered),
            "chain_id": [p.chain_id for p in ordered],
            "turn_index": [p.turn_index for p in ordered],
            "scored": [p.scored for p in ordered],
            "prediction": [p.completion.text for p in ordered],
            "candidates": [list(p.completion.candidates) for p in ordered],
            "error": [p.completion.error for p in ordered],
            "latency_s": [p.completion.latency_s for p in ordered],
            "prompt_tokens": [p.completion.prompt_tokens for p in ordered],
            "completion_tokens": [p.completion.completion_tokens for p in ordered],
            "raw_output": [p.raw_output for p in ordered],
            "rewritten_question": [p.rewritten_question for p in ordered],
        },
        schema=PREDICTIONS_SCHEMA,
    )
