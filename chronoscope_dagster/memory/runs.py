"""A memory system through the probe's control and probe arms, and what its stores held.

The oracle arm does not depend on the system and the floor restamps what the system is given
with ingestion time, which is what ``ingest_time_memory`` does itself, so a memory runs the
two arms whose difference the probe reads. ``rule_reader_runs`` runs both built-in memories
with the rule reader (no model): what each store makes possible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from chronoscope_dagster.memory.readers import RuleReader
from chronoscope_dagster.memory.systems import SQLiteMemory, Stamping, StoreAudit
from chronoscope_dagster.probe.corpus import Corpus
from chronoscope_dagster.probe.runs import Arm, ProbeRun, run_probe

MEMORY_ARMS = (Arm.CONTROL, Arm.PROBE)
RULE_READER = "rule-reader"


@dataclass(frozen=True)
class MemoryRun:
    """``run``'s model is the reader (a registry model, or ``rule-reader``) and its system
    the memory's name; ``stored`` is per arm what its stores held (empty for a plug-in,
    whose store is its own)."""

    run: ProbeRun
    stored: dict[str, StoreAudit] = field(default_factory=dict)

    @property
    def system(self) -> str:
        return self.run.system

    @property
    def reader(self) -> str:
        return self.run.model

    def as_dict(self) -> dict[str, Any]:
        return {"run": self.run.as_dict(), "stored": {a: asdict(s) for a, s in self.stored.items()}}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> MemoryRun:
        stored = {
            arm: StoreAudit(
                **{
                    **audit,
                    "message_examples": tuple(audit["message_examples"]),
                    "header_examples": tuple(audit["header_examples"]),
                }
            )
            for arm, audit in record["stored"].items()
        }
        return cls(ProbeRun.from_dict(record["run"]), stored)


def run_memory(corpus: Corpus, system: object, *, name: str, reader: str) -> MemoryRun:
    """``system`` (named ``name``, answering through ``reader``) over the control and probe
    arms of every item of ``corpus``."""
    runs = []
    stored: dict[str, StoreAudit] = {}
    for arm in MEMORY_ARMS:
        runs.append(run_probe(corpus, system, model=reader, arms=(arm,), system=name))
        if isinstance(system, SQLiteMemory):
            stored[arm.value] = system.take_audit()
    first = runs[0]
    return MemoryRun(
        ProbeRun(
            model=reader,
            corpus_id=first.corpus_id,
            question_ids=first.question_ids,
            rows=tuple(row for run in runs for row in run.rows),
            delivered={arm: record for run in runs for arm, record in run.delivered.items()},
            system=name,
        ),
        stored,
    )


def rule_reader_runs(corpus: Corpus) -> list[MemoryRun]:
    """Both built-in memories with the rule reader, ingestion time first."""
    reader = RuleReader(corpus.items, corpus.specs)
    runs = []
    for stamping in Stamping:
        memory = SQLiteMemory(reader, stamping)
        runs.append(run_memory(corpus, memory, name=memory.name, reader=RULE_READER))
    return runs


def store_problems(runs: Sequence[MemoryRun]) -> list[str]:
    """Every stored message holding a date, and every dated session header under the probe
    arm (which delivers none), per memory run."""
    problems = []
    for memory_run in runs:
        where = f"{memory_run.system} ({memory_run.reader})"
        for arm, audit in memory_run.stored.items():
            if audit.date_like_messages:
                problems.append(
                    f"{where}, {arm} arm: {audit.date_like_messages} stored message(s) hold a "
                    f"date: {'; '.join(audit.message_examples[:5])}"
                )
            if arm == Arm.PROBE and audit.date_like_headers:
                problems.append(
                    f"{where}, probe arm: {audit.date_like_headers} stored session header(s) "
                    f"hold a date: {'; '.join(audit.header_examples[:5])}"
                )
    return problems
