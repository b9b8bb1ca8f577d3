"""Probe runs: the same questions through four arms, one row per (arm, item).

======== ===================== ======================================= =======================
arm      mode                  agent                                   sessions
======== ===================== ======================================= =======================
control  TimestampsAndText     the system under test                   all
probe    TimestampsOnly        the system under test                   all
oracle   TimestampsOnly        the oracle reader (no model)            gold only
floor    TimestampsOnly        the system under test, restamped with   all
                               ingestion time (BlindFloor)
======== ===================== ======================================= =======================

Control minus probe is the share of the system's score that came from dates printed in the
prompt; the oracle is the ceiling the timestamps allow; the floor is what the same system
earns without them. Before any agent is called, a grounded arm whose agent does not implement
the typed channel is refused by name, and every date is parsed (an unreadable one fails the
run naming question, field and value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, cast

from chronoscope_dagster.probe.agents import BlindFloor, OracleReader
from chronoscope_dagster.probe.corpus import Corpus, CorpusError
from chronoscope_dagster.probe.grounding import (
    AgentAnswer,
    DeliveredRecord,
    GroundingMode,
    TextHistoryAgent,
    TimestampedHistoryAgent,
    agent_name,
    delivered_record,
    gold_sessions_only,
    text_episode,
    timestamped_episode,
)
from chronoscope_dagster.probe.judge import LLMJudge, check_answer, gold_of
from chronoscope_dagster.probe.longmemeval import Item, check_dates


class Arm(StrEnum):
    CONTROL = "control"
    PROBE = "probe"
    ORACLE = "oracle"
    FLOOR = "floor"


ARMS: tuple[Arm, ...] = tuple(Arm)
ARM_MODES = {
    Arm.CONTROL: GroundingMode.TIMESTAMPS_AND_TEXT,
    Arm.PROBE: GroundingMode.TIMESTAMPS_ONLY,
    Arm.ORACLE: GroundingMode.TIMESTAMPS_ONLY,
    Arm.FLOOR: GroundingMode.TIMESTAMPS_ONLY,
}


class GroundingRefused(TypeError):
    """A grounded run was given an agent without the typed channel."""


def require_channel(agent: object, mode: GroundingMode) -> None:
    """Refuse, before any call, an agent that cannot receive what ``mode`` delivers."""
    if mode.grounded and not isinstance(agent, TimestampedHistoryAgent):
        raise GroundingRefused(
            f"mode {mode.value} delivers session dates as typed timestamps, but agent "
            f"{agent_name(agent)!r} does not implement TimestampedHistoryAgent "
            "(answer_timestamped). There is no text fallback: it would read the dates this "
            "mode exists to withhold."
        )
    if not mode.grounded and not isinstance(agent, TextHistoryAgent):
        raise GroundingRefused(
            f"mode None delivers the history as text, but agent {agent_name(agent)!r} does not "
            "implement TextHistoryAgent (answer_text)"
        )


@dataclass(frozen=True)
class ArmRun:
    arm: str
    agent: str
    mode: str
    items: tuple[Item, ...]
    answers: tuple[AgentAnswer, ...]
    delivered: DeliveredRecord


def run_arm(
    agent: object,
    items: Sequence[Item],
    mode: GroundingMode,
    *,
    arm: str = "",
    gold_only: bool = False,
) -> ArmRun:
    """Deliver ``items`` to ``agent`` under ``mode`` and collect one answer per item."""
    require_channel(agent, mode)
    if mode.grounded:
        check_dates(items)
    delivered_items = tuple(gold_sessions_only(i) for i in items) if gold_only else tuple(items)
    if mode.grounded:
        episodes = [timestamped_episode(item, mode) for item in delivered_items]
        answers = cast(TimestampedHistoryAgent, agent).answer_timestamped(episodes)
        record = delivered_record(mode, delivered_items, episodes)
    else:
        texts = [text_episode(item) for item in delivered_items]
        answers = cast(TextHistoryAgent, agent).answer_text(texts)
        record = delivered_record(mode, delivered_items)
    if len(answers) != len(delivered_items):
        raise RuntimeError(
            f"agent {agent_name(agent)!r} answered {len(answers)} "
            f"of {len(delivered_items)} questions"
        )
    return ArmRun(
        arm or mode.value, agent_name(agent), mode.value, tuple(items), tuple(answers), record
    )


IN_CONTEXT = "in_context"
"""The system of the four arms: the agent under test itself, reading the history in context."""
ROW_FIELDS = (
    "model",
    "system",
    "arm",
    "agent",
    "mode",
    "item_id",
    "question_type",
    "answer",
    "error",
    "check_correct",
    "check_kind",
    "check_detail",
    "judge_correct",
    "judge_reply",
)


@dataclass(frozen=True)
class ProbeRow:
    model: str
    arm: str
    agent: str
    mode: str
    item_id: str
    question_type: str
    answer: str
    error: str | None
    check_correct: bool
    check_kind: str
    check_detail: str
    judge_correct: bool | None = None
    judge_reply: str | None = None
    system: str = IN_CONTEXT
    """What answered through ``model``: ``in_context``, or a memory system's name."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProbeRun:
    model: str
    corpus_id: str
    question_ids: tuple[str, ...]
    rows: tuple[ProbeRow, ...]
    delivered: dict[str, DeliveredRecord]
    judge: str | None = None
    system: str = IN_CONTEXT

    def as_dict(self) -> dict[str, Any]:
        """Plain values (rows as dicts), e.g. to store beside the rows' Parquet file."""
        return asdict(self)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> ProbeRun:
        return cls(
            model=record["model"],
            corpus_id=record["corpus_id"],
            question_ids=tuple(record["question_ids"]),
            rows=tuple(ProbeRow(**row) for row in record["rows"]),
            delivered={arm: DeliveredRecord(**d) for arm, d in record["delivered"].items()},
            judge=record.get("judge"),
            system=record.get("system", IN_CONTEXT),
        )


def _arm_agent(arm: Arm, agent: object, corpus: Corpus) -> object:
    if arm is Arm.ORACLE:
        return OracleReader(corpus.items, corpus.specs)
    if arm is Arm.FLOOR:
        return BlindFloor(cast(TimestampedHistoryAgent, agent))
    return agent


def run_probe(
    corpus: Corpus,
    agent: object,
    *,
    model: str | None = None,
    judge: LLMJudge | None = None,
    arms: Sequence[Arm | str] = ARMS,
    system: str = IN_CONTEXT,
) -> ProbeRun:
    """Every arm over every item of ``corpus`` (use ``corpus.select(ids)`` for a subset),
    judged by the checker and, when given, the LLM judge; ``system`` names what answered
    through ``model``."""
    if not corpus.items:
        raise CorpusError(f"corpus {corpus.id} holds no items: nothing to probe")
    chosen = [Arm(arm) for arm in arms]
    for arm in chosen:
        if arm is not Arm.ORACLE:
            require_channel(agent, ARM_MODES[arm])
    check_dates(corpus.items)
    name = model or agent_name(agent)
    runs = [
        run_arm(
            _arm_agent(arm, agent, corpus),
            corpus.items,
            ARM_MODES[arm],
            arm=arm.value,
            gold_only=arm is Arm.ORACLE,
        )
        for arm in chosen
    ]
    golds = {
        item.question_id: gold_of(item, corpus.specs.get(item.question_id)) for item in corpus.items
    }
    cases = []
    for run in runs:
        for item, answer in zip(run.items, run.answers, strict=True):
            check = check_answer("" if answer.error else answer.text, golds[item.question_id])
            cases.append((run, item, answer, check))
    verdicts = (
        judge.judge([(item, answer.text, answer.error, check) for _, item, answer, check in cases])
        if judge
        else [None] * len(cases)
    )
    rows = tuple(
        ProbeRow(
            model=name,
            arm=run.arm,
            agent=run.agent,
            mode=run.mode,
            item_id=item.question_id,
            question_type=item.question_type,
            answer=answer.text,
            error=answer.error,
            check_correct=check.correct,
            check_kind=check.kind,
            check_detail=check.detail,
            judge_correct=verdict.correct if verdict else None,
            judge_reply=verdict.reply if verdict else None,
            system=system,
        )
        for (run, item, answer, check), verdict in zip(cases, verdicts, strict=True)
    )
    return ProbeRun(
        model=name,
        corpus_id=corpus.id,
        question_ids=tuple(item.question_id for item in corpus.items),
        rows=rows,
        delivered={run.arm: run.delivered for run in runs},
        judge=judge.name if judge else None,
        system=system,
    )


def ordering_floor(corpus: Corpus) -> tuple[int, int]:
    """(correct, n) of the oracle reader given ingestion-time stamps: what a perfect reader
    earns from message order and the query time alone. No model is called."""
    run = run_arm(
        BlindFloor(OracleReader(corpus.items, corpus.specs)),
        corpus.items,
        GroundingMode.TIMESTAMPS_ONLY,
    )
    correct = 0
    for item, answer in zip(run.items, run.answers, strict=True):
        gold = gold_of(item, corpus.specs.get(item.question_id))
        correct += check_answer("" if answer.error else answer.text, gold).correct
    return correct, len(run.items)
