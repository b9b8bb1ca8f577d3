"""Rewriting with a model (the paper's App. B prompt): one batch of first attempts, then a
batch per retry of the turns the filter rejected, and which chains keep every turn."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chronoscope_dagster.llm.base import ChatRequest, Decoding
from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.paraphrase.filter import (
    REASONS,
    ParaphraseTurn,
    clean_reply,
    turn_problems,
)

PARAPHRASE_PROMPT = (
    "Rewrite the following question so that it has a different surface form while preserving "
    "the same meaning, entities, and time references.\n"
    "Original question: {question}\n"
    "Constraints:\n"
    "- Preserve all entities.\n"
    "- Preserve temporal references and years.\n"
    "- Do not change the factual answer."
)
"""App. B's template verbatim, ``[QUESTION]`` written ``{question}``; one user message."""

RETRY_TEMPERATURE = 0.7
PARAPHRASE_MAX_NEW_TOKENS = 48


@dataclass(frozen=True)
class ParaphraseResult:
    """The outcome for one turn: ``paraphrase`` is set only when accepted; ``reasons`` are the
    last attempt's rejection reasons; ``error`` is a backend failure (never accepted)."""

    chain_id: str
    turn_index: int
    original: str
    paraphrase: str | None
    attempts: int
    reasons: tuple[str, ...] = ()
    error: str | None = None
    last_reply: str | None = None

    @property
    def accepted(self) -> bool:
        return self.paraphrase is not None

    @property
    def status(self) -> str:
        if self.paraphrase is not None:
            return "accepted"
        return "error" if self.error is not None else "rejected"


@dataclass(frozen=True)
class ParaphraseCounts:
    """``accepted + rejected + errors == turns``; ``rejected_by_reason`` counts each rejected
    turn once per reason of its final attempt; ``attempts`` is the number of requests."""

    turns: int = 0
    accepted: int = 0
    accepted_after_retry: int = 0
    rejected: int = 0
    errors: int = 0
    attempts: int = 0
    batches: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, int]:
        return {
            "turns": self.turns,
            "accepted": self.accepted,
            "accepted_after_retry": self.accepted_after_retry,
            "rejected": self.rejected,
            "errors": self.errors,
            "attempts": self.attempts,
            "batches": self.batches,
            **{f"rejected_{reason}": n for reason, n in self.rejected_by_reason.items()},
        }


def paraphrase_request(question: str) -> ChatRequest:
    return ChatRequest(messages=(("user", PARAPHRASE_PROMPT.format(question=question)),))


def paraphrase_decoding(
    base: Decoding, max_new_tokens: int = PARAPHRASE_MAX_NEW_TOKENS
) -> Decoding:
    """A registry model's decoding made fit for rewriting: one candidate, and room for a whole
    question (evaluation budgets of ~24 tokens would cut paraphrases short)."""
    return replace(base, k=1, max_new_tokens=max(base.max_new_tokens, max_new_tokens))


def attempt_decoding(
    decoding: Decoding, attempt: int, retry_temperature: float = RETRY_TEMPERATURE
) -> Decoding:
    """Attempt 0 decodes as configured; retry n uses seed + n and, if the configured decoding
    is greedy, ``retry_temperature``, since greedy decoding would repeat the rejected reply."""
    if attempt == 0:
        return replace(decoding, k=1)
    temperature = decoding.temperature if decoding.temperature > 0 else retry_temperature
    return replace(decoding, k=1, seed=decoding.seed + attempt, temperature=temperature)


def paraphrase_turns(
    turns: Sequence[ParaphraseTurn | tuple[Any, ...]],
    chat: CachedChat,
    decoding: Decoding,
    *,
    retries: int = 2,
    retry_temperature: float = RETRY_TEMPERATURE,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[ParaphraseResult], ParaphraseCounts]:
    """Paraphrase every turn: one batch of first attempts, then one batch per retry of the
    turns still rejected (see ``attempt_decoding``). A backend error ends that turn's attempts
    (errors are not cached, so a rerun asks again). Results are in (chain_id, turn_index)
    order; through the cache a rerun costs no call."""
    items = sorted((ParaphraseTurn(*t) for t in turns), key=lambda t: (t.chain_id, t.turn_index))
    keys = [(t.chain_id, t.turn_index) for t in items]
    if len(set(keys)) != len(keys):
        duplicate = next(k for k, n in Counter(keys).items() if n > 1)
        raise ValueError(f"turn {duplicate[1]} of chain {duplicate[0]} is given twice")
    outcome: dict[tuple[str, int], ParaphraseResult] = {}
    pending = items
    batches = 0
    for attempt in range(retries + 1):
        if not pending:
            break
        completions = chat.complete(
            [paraphrase_request(t.question) for t in pending],
            attempt_decoding(decoding, attempt, retry_temperature),
            progress,
        )
        batches += 1
        rejected = []
        for turn, completion in zip(pending, completions, strict=True):
            base = ParaphraseResult(
                turn.chain_id, turn.turn_index, turn.question, None, attempt + 1
            )
            key = (turn.chain_id, turn.turn_index)
            if completion.text is None:
                outcome[key] = replace(base, error=completion.error or "no candidates")
                continue
            reply = clean_reply(completion.text)
            problems = turn_problems(turn, reply)
            if problems:
                outcome[key] = replace(base, reasons=tuple(problems), last_reply=reply)
                rejected.append(turn)
            else:
                outcome[key] = replace(base, paraphrase=reply, last_reply=reply)
        pending = rejected
    results = [outcome[key] for key in keys]
    return results, count_results(results, batches)


def count_results(results: Sequence[ParaphraseResult], batches: int) -> ParaphraseCounts:
    """The counts of ``results``; reasons in ``REASONS`` order, then any other (a paraphraser's
    own, such as the template variants') by name."""
    by_reason = Counter(reason for r in results if r.status == "rejected" for reason in r.reasons)
    order = [*REASONS, *sorted(set(by_reason) - set(REASONS))]
    return ParaphraseCounts(
        turns=len(results),
        accepted=sum(r.accepted for r in results),
        accepted_after_retry=sum(r.accepted and r.attempts > 1 for r in results),
        rejected=sum(r.status == "rejected" for r in results),
        errors=sum(r.status == "error" for r in results),
        attempts=sum(r.attempts for r in results),
        batches=batches,
        rejected_by_reason={reason: by_reason[reason] for reason in order if by_reason[reason]},
    )


def kept_chains(results: Sequence[ParaphraseResult]) -> list[str]:
    """Chains every turn of which was accepted, sorted; callers pass every turn of a chain."""
    accepted: dict[str, bool] = {}
    for result in results:
        accepted[result.chain_id] = accepted.get(result.chain_id, True) and result.accepted
    return sorted(chain_id for chain_id, ok in accepted.items() if ok)
