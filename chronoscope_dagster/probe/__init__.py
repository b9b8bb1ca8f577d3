"""The time-grounded probe: does a memory system honour the timestamps it is given?

In LongMemEval-style evaluation the session dates reach the reader as text, so a system that
stores no time at all still answers temporal questions. The probe delivers the dates through a
typed channel, runs the same questions with the printed dates (control) and without them
(probe), and reads the difference. Its corpus is written so that no message holds a date:
every temporal phrase is relative and needs the session's own timestamp.

Data flow: ``build_corpus`` (authored + generated, validated) -> ``run_probe`` (four arms,
checker and optional LLM judge) -> ``build_report`` -> ``render_markdown``. Scores here are
not comparable with LongMemEval's. This package never imports Dagster.
"""

from chronoscope_dagster.probe.agents import (
    BlindFloor,
    ChatAgent,
    OracleReader,
    chat_agent_for_model,
)
from chronoscope_dagster.probe.corpus import (
    Corpus,
    CorpusError,
    build_corpus,
    export_corpus,
    load_authored,
    read_corpus,
)
from chronoscope_dagster.probe.generator import generate
from chronoscope_dagster.probe.grounding import (
    DeliveredRecord,
    GroundingMode,
    TimestampedEpisode,
    TimestampedHistory,
    TimestampedHistoryAgent,
    TimestampedTurn,
)
from chronoscope_dagster.probe.judge import (
    LLMJudge,
    check_answer,
    gold_of,
    judge_for_model,
    judge_templates_fingerprint,
)
from chronoscope_dagster.probe.longmemeval import (
    Item,
    Turn,
    UnparseableDate,
    dump_items,
    load_items,
)
from chronoscope_dagster.probe.report import ProbeReport, build_report, render_markdown, sign_test
from chronoscope_dagster.probe.runs import (
    ARMS,
    ROW_FIELDS,
    Arm,
    GroundingRefused,
    ProbeRow,
    ProbeRun,
    ordering_floor,
    run_arm,
    run_probe,
)
from chronoscope_dagster.probe.validate import Problem, validate_items

__all__ = [
    "ARMS",
    "ROW_FIELDS",
    "Arm",
    "BlindFloor",
    "ChatAgent",
    "Corpus",
    "CorpusError",
    "DeliveredRecord",
    "GroundingMode",
    "GroundingRefused",
    "Item",
    "LLMJudge",
    "OracleReader",
    "ProbeReport",
    "ProbeRow",
    "ProbeRun",
    "Problem",
    "TimestampedEpisode",
    "TimestampedHistory",
    "TimestampedHistoryAgent",
    "TimestampedTurn",
    "Turn",
    "UnparseableDate",
    "build_corpus",
    "build_report",
    "chat_agent_for_model",
    "check_answer",
    "dump_items",
    "export_corpus",
    "generate",
    "gold_of",
    "judge_for_model",
    "judge_templates_fingerprint",
    "load_authored",
    "load_items",
    "ordering_floor",
    "read_corpus",
    "render_markdown",
    "run_arm",
    "run_probe",
    "sign_test",
    "validate_items",
]
