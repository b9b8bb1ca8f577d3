"""Where the probe's files live in a home, and the corpus and runs read back from there."""

from __future__ import annotations

import json

from chronoscope_dagster.memory.runs import MemoryRun
from chronoscope_dagster.probe.corpus import Corpus, read_corpus
from chronoscope_dagster.probe.runs import ProbeRun
from chronoscope_dagster.warehouse import Warehouse

CORPUS_FILE = "corpus.json"
"""The corpus as the ``probe_corpus`` asset exported it (LongMemEval's JSON shape)."""
RUN_FILE = "run.json"
"""Beside each model's ``probe_runs`` rows: the whole run, for the report."""
MEMORY_RUNS_FILE = "memories.json"
"""Beside them: the memory systems' runs through that model, with what their stores held."""


def load_corpus(warehouse: Warehouse) -> Corpus:
    """The corpus of the home's ``probe_corpus``."""
    return read_corpus(warehouse.partition_dir("probe_corpus") / CORPUS_FILE)


def load_run(warehouse: Warehouse, model: str) -> ProbeRun:
    path = warehouse.partition_dir("probe_runs", model=model) / RUN_FILE
    return ProbeRun.from_dict(json.loads(path.read_text()))


def load_memory_runs(warehouse: Warehouse, model: str) -> list[MemoryRun]:
    """The memory runs of a ``probe_runs`` partition (none where the file is absent)."""
    path = warehouse.partition_dir("probe_runs", model=model) / MEMORY_RUNS_FILE
    if not path.exists():
        return []
    return [MemoryRun.from_dict(record) for record in json.loads(path.read_text())]
