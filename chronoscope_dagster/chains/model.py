"""Chains and turns: what a generated benchmark item is made of.

A chain's id is a hash of its content (family, and per turn the subject,
property, time scope and gold), not of the snapshot it came from, so the same
chain generated from two snapshots has one id and is kept once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import orjson


@dataclass(frozen=True)
class Turn:
    """One question of a chain, with everything needed to score it.

    ``answer_kind`` is ``entity`` (any of ``gold_qids`` is correct), ``yes_no``
    or ``count`` (the answer is ``answer``: "yes"/"no" or a number, and
    ``gold_qids`` is empty). A span question covers the years ``scope_year`` to
    ``scope_end_year``; a yes/no question about one value names it in ``asked_qid``
    (``asked_label``).
    ``rival_labels``: labels and aliases of the other values the subject's property had at
    any time of the snapshot (an answer naming one beside the gold hedges).
    ``scope_dependent``: an implicit turn whose gold at its scope is not today's value (or,
    with no value today, shares nothing with the latest year's): only a kept scope answers it.
    """

    question: str
    pid: str
    subject_qid: str
    subject_label: str
    gold_qids: tuple[str, ...]
    gold_labels: tuple[str, ...]
    gold_aliases: tuple[str, ...]
    answer: str
    canonical_qid: str | None
    scope_year: int | None
    scope_anchor: str | None
    is_explicit: bool
    present_qids: tuple[str, ...] = ()
    present_labels: tuple[str, ...] = ()
    answer_kind: str = "entity"
    scope_end_year: int | None = None
    asked_qid: str | None = None
    asked_label: str | None = None
    rival_labels: tuple[str, ...] = ()
    scope_dependent: bool = False

    @property
    def drift_eligible(self) -> bool:
        """A present-day value exists and is not a correct answer for this turn's scope."""
        return (
            self.answer_kind == "entity"
            and bool(self.present_qids)
            and not set(self.present_qids) & set(self.gold_qids)
        )

    def content_key(self) -> tuple:
        return (
            self.subject_qid, self.pid, self.scope_anchor, self.scope_end_year, self.gold_qids,
            self.answer_kind, self.asked_qid, self.answer if self.answer_kind != "entity" else None,
        )  # fmt: skip


@dataclass(frozen=True)
class Chain:
    family: str
    snapshot_year: int
    anchor: str
    turns: tuple[Turn, ...]
    chain_id: str = field(init=False)

    def __post_init__(self) -> None:
        key = orjson.dumps([self.family, [list(turn.content_key()) for turn in self.turns]])
        object.__setattr__(self, "chain_id", hashlib.sha256(key).hexdigest()[:20])

    @property
    def length(self) -> int:
        return len(self.turns)

    @property
    def scope_shifts(self) -> int:
        """How many turns change the time scope of the turn before them."""
        return sum(
            1
            for before, after in zip(self.turns, self.turns[1:], strict=False)
            if before.scope_anchor != after.scope_anchor
        )

    @property
    def implicit_share(self) -> float:
        return sum(not turn.is_explicit for turn in self.turns) / len(self.turns)

    @property
    def span_years(self) -> int:
        """Largest distance in years between a turn's scope and the snapshot year."""
        years = [turn.scope_year for turn in self.turns if turn.scope_year is not None]
        return max((abs(self.snapshot_year - year) for year in years), default=0)
