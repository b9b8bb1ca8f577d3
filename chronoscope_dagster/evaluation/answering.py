"""A registry model answering named sets of turns under one setting, through the response
cache, with what a run reports of it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from chronoscope_dagster.evaluation.inference import (
    EvalChain,
    Prediction,
    chains_from_turns,
    predict,
)
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.strategies import Prompting
from chronoscope_dagster.llm.blind import SHAPE_COLUMNS
from chronoscope_dagster.llm.registry import ModelSpec
from chronoscope_dagster.llm.session import InfoLog, RequestProgress, open_chat


@dataclass(frozen=True)
class AnsweredSets:
    """The predictions per set of turns, and what answering them took."""

    predictions: dict[str, list[Prediction]]
    chains: int
    seconds: float
    identity: dict[str, object]
    cache_hits: int
    cache_misses: int
    backend_calls: int
    retries: int

    @property
    def every(self) -> list[Prediction]:
        return [p for predictions in self.predictions.values() for p in predictions]

    def errors_by_kind(self) -> Counter[str]:
        return Counter(
            p.completion.error.split(":", 1)[0] for p in self.every if p.completion.error
        )


def request_count(
    chains: list[EvalChain], setting: Setting, first_scored_turn: int, prompting: str = "plain"
) -> int:
    """Backend requests at most (two per turn under rewrite then answer)."""
    calls = 2 if prompting == Prompting.REWRITE_THEN_ANSWER else 1
    if setting is Setting.SELF_CONDITIONED:
        return calls * sum(len(c.questions) for c in chains)
    return calls * sum(max(0, len(c.questions) - first_scored_turn) for c in chains)


def answer_turn_sets(
    spec: ModelSpec,
    setting: Setting,
    turn_sets: Mapping[str, pa.Table],
    *,
    turns: Path,
    cache: Path,
    first_scored_turn: int,
    chunk_size: int,
    log: InfoLog,
) -> AnsweredSets:
    """Run ``spec`` under ``setting`` on each named set of turns (tables with the columns of
    ``queries.sample_turns_sql``) through the response cache at ``cache``. A backend that
    learns from the benchmark (``fit``: the ``blind`` reference system) is given the
    benchmark's turns (the Parquet file ``turns``) first."""
    chain_sets = {name: chains_from_turns(table) for name, table in turn_sets.items()}
    chains = sum(len(c) for c in chain_sets.values())
    total = sum(
        request_count(c, setting, first_scored_turn, spec.prompting) for c in chain_sets.values()
    )
    label = f"{spec.name} / {setting}"
    log.info(f"{label}: {chains:,} chains, {total:,} requests")
    progress = RequestProgress(log, label, total)
    started = time.perf_counter()
    with open_chat(spec, cache, chunk_size) as chat:
        fit = getattr(chat.backend, "fit", None)
        if fit is not None:
            fit(pq.read_table(turns, columns=list(SHAPE_COLUMNS)))
        predictions = {
            name: predict(
                chain_set,
                setting,
                chat,
                spec.decoding,
                first_scored_turn=first_scored_turn,
                progress=progress,
                prompting=spec.prompting,
            )
            for name, chain_set in chain_sets.items()
        }
    backend = chat.backend
    return AnsweredSets(
        predictions=predictions,
        chains=chains,
        seconds=time.perf_counter() - started,
        identity=dict(backend.identity()),
        cache_hits=chat.stats.hits,
        cache_misses=chat.stats.misses,
        backend_calls=chat.usage.calls,
        retries=getattr(getattr(backend, "usage", None), "retries", 0),
    )
