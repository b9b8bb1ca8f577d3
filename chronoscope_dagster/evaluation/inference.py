"""Running a model over chains under one context setting.

Gold-context and questions-only prompts do not depend on earlier outputs, so every scored
turn goes in one stream of batches. Self-conditioned runs are turn-synchronous: turn 1 of
every chain in one batch, then turn 2 of every chain with its own history, and so on; a chain
whose earlier turn failed stops there, and its later turns are recorded as skipped. Under
explicit scope every scored turn is its explicit question alone; a turn without one is
recorded with the error ``NO_EXPLICIT_QUESTION`` and never sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from chronoscope_dagster.evaluation.prompts import Setting, conversation
from chronoscope_dagster.llm.base import ChatRequest, Completion, Decoding
from chronoscope_dagster.llm.cache import CachedChat

SKIPPED_AFTER_ERROR = "skipped: an earlier turn of the chain failed"
NO_EXPLICIT_QUESTION = "no_explicit_question: the turn has no explicit question"
TURN_COLUMNS = ("chain_id", "turn_index", "question", "answer", "present_labels")
"""What ``chains_from_turns`` needs; ``is_explicit`` and ``explicit_question`` are read too
when present (explicit scope needs the second)."""

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
    ]
)


@dataclass(frozen=True)
class EvalChain:
    chain_id: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    present_day: tuple[str, ...]
    explicit: tuple[bool, ...] = ()
    """Whether each turn's own question states its scope (reference systems read it)."""
    explicit_questions: tuple[str | None, ...] = ()

    def request(self, turn: int, setting: Setting, earlier: Sequence[str]) -> ChatRequest:
        alone = setting is Setting.EXPLICIT_SCOPE
        questions = tuple(q or "" for q in self.explicit_questions) if alone else self.questions
        return ChatRequest(
            messages=conversation(questions, earlier, turn, setting),
            gold=self.answers[turn],
            present_day=self.present_day[turn],
            states_scope=alone or (bool(self.explicit) and self.explicit[turn]),
        )

    def can_ask(self, turn: int, setting: Setting) -> bool:
        return setting is not Setting.EXPLICIT_SCOPE or (
            turn < len(self.explicit_questions) and self.explicit_questions[turn] is not None
        )


@dataclass(frozen=True)
class Prediction:
    chain_id: str
    turn_index: int
    scored: bool
    completion: Completion


def chains_from_turns(turns: pa.Table) -> list[EvalChain]:
    """Chains from rows of the ``turns`` table (any order), in chain-id order."""
    optional = [c for c in ("is_explicit", "explicit_question") if c in turns.column_names]
    by_chain: dict[str, list[tuple]] = {}
    for row in turns.select([*TURN_COLUMNS, *optional]).to_pylist():
        present = row["present_labels"][0] if row["present_labels"] else ""
        by_chain.setdefault(row["chain_id"], []).append(
            (
                row["turn_index"],
                row["question"],
                row["answer"],
                present,
                bool(row.get("is_explicit")),
                row.get("explicit_question"),
            )
        )
    chains = []
    for chain_id in sorted(by_chain):
        rows = sorted(by_chain[chain_id])
        if [r[0] for r in rows] != list(range(len(rows))):
            raise ValueError(f"chain {chain_id} has turns {[r[0] for r in rows]}, not 0..n-1")
        chains.append(
            EvalChain(
                chain_id,
                tuple(r[1] for r in rows),
                tuple(r[2] for r in rows),
                tuple(r[3] for r in rows),
                tuple(r[4] for r in rows) if "is_explicit" in optional else (),
                tuple(r[5] for r in rows) if "explicit_question" in optional else (),
            )
        )
    return chains


def scored_turns(length: int, first_scored_turn: int) -> range:
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
) -> list[Prediction]:
    """Predictions for every scored turn (and, self-conditioned, every turn before one)."""
    if setting is Setting.SELF_CONDITIONED:
        if turn_synchronous:
            return _self_conditioned(chains, chat, decoding, first_scored_turn, progress)
        return [
            p
            for chain in chains
            for p in _self_conditioned([chain], chat, decoding, first_scored_turn, progress)
        ]
    items = [
        (chain, turn)
        for chain in chains
        for turn in scored_turns(len(chain.questions), first_scored_turn)
    ]
    asked = [(chain, turn) for chain, turn in items if chain.can_ask(turn, setting)]
    requests = [chain.request(turn, setting, chain.answers) for chain, turn in asked]
    completions = iter(chat.complete(requests, decoding, progress))
    return [
        Prediction(
            chain.chain_id,
            turn,
            True,
            next(completions)
            if chain.can_ask(turn, setting)
            else Completion(error=NO_EXPLICIT_QUESTION),
        )
        for chain, turn in items
    ]


def _self_conditioned(
    chains: Sequence[EvalChain],
    chat: CachedChat,
    decoding: Decoding,
    first_scored_turn: int,
    progress: Callable[[int], None] | None,
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
        for chain, completion in zip(live, chat.complete(requests, top1, progress), strict=True):
            predictions.append(
                Prediction(chain.chain_id, turn, turn >= first_scored_turn, completion)
            )
            if completion.text is None:
                failed.add(chain.chain_id)
            else:
                own[chain.chain_id].append(completion.text)
    predictions.sort(key=lambda p: (p.chain_id, p.turn_index))
    return predictions


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
        },
        schema=PREDICTIONS_SCHEMA,
    )
