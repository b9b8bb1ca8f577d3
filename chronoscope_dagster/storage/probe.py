"""Where the probe's files live in a home, and the corpus read back from there."""

from __future__ import annotations

from chronoscope_dagster.probe.corpus import Corpus, read_corpus
from chronoscope_dagster.warehouse import Warehouse

CORPUS_FILE = "corpus.json"
"""The corpus as the ``probe_corpus`` asset exported it (LongMemEval's JSON shape)."""
RUN_FILE = "run.json"
"""Beside each model's ``probe_runs`` rows: the whole run, for the report."""


def load_corpus(warehouse: Warehouse) -> Corpus:
    """The corpus of the home's ``probe_corpus``."""
    return read_corpus(warehouse.partition_dir("probe_corpus") / CORPUS_FILE)
