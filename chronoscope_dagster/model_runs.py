"""What the model-partitioned assets of evaluation and paraphrase share: their run
configuration, and the metadata of a model answering turns and of the metrics scored."""

from __future__ import annotations

from typing import Literal

import dagster as dg
import pyarrow as pa
from pydantic import Field

from chronoscope_dagster.evaluation.answering import AnsweredSets
from chronoscope_dagster.evaluation.report import HEADLINE
from chronoscope_dagster.llm.registry import ModelSpec
from chronoscope_dagster.markdown import markdown_table


class PredictionConfig(dg.Config):
    first_scored_turn: int = Field(
        default=1,
        ge=0,
        description="Turns before this index are context, not scored (1: the reference's "
        "--scope_turns_only, the paper's setting; 0: score the first turn too).",
    )
    chunk_size: int = Field(
        default=64, ge=1, description="Requests per backend call; each is cached when answered."
    )


class MetricsConfig(dg.Config):
    match_mode: Literal["relaxed", "exact", "reference"] = Field(
        default="relaxed",
        description="relaxed: gold set and aliases on whole-token boundaries; exact: normalised "
        "equality; reference: the authors' matcher, quirks included, for published numbers.",
    )
    bootstrap: int = Field(default=1000, ge=0, description="Bootstrap resamples of chains.")
    seed: int = Field(default=0, description="Seed of the bootstrap.")


def answered_metadata(answered: AnsweredSets, spec: ModelSpec) -> dict[str, object]:
    """The materialization metadata of a model's answers."""
    every = answered.every
    errors = answered.errors_by_kind()
    return {
        "dagster/row_count": len(every),
        "chains": answered.chains,
        "scored_turns": sum(p.scored for p in every),
        "errors": sum(errors.values()),
        "errors_by_kind": dg.MetadataValue.json(dict(sorted(errors.items()))),
        "cache_hits": answered.cache_hits,
        "cache_misses": answered.cache_misses,
        "backend_calls": answered.backend_calls,
        "retries": answered.retries,
        "prompt_tokens": sum(p.completion.prompt_tokens for p in every),
        "completion_tokens": sum(p.completion.completion_tokens for p in every),
        "seconds": round(answered.seconds, 1),
        "backend": dg.MetadataValue.json(answered.identity),
        "decoding": dg.MetadataValue.json(spec.decoding.as_dict()),
        "prompting": spec.prompting,
        "rewrite_calls": sum(
            p.rewritten_question is not None
            or (p.completion.error or "").startswith(("rewrite_failed", "rewrite_empty"))
            for p in every
        ),
        "answer_line_missing": sum(p.answer_line_missing for p in every),
        "sample": dg.MetadataValue.md(
            markdown_table(
                ["chain", "turn", "prediction"],
                [
                    (p.chain_id[:12], p.turn_index, p.completion.text or p.completion.error)
                    for p in every[:5]
                ],
            )
        ),
    }


def headline_metadata(table: pa.Table) -> dict[str, object]:
    """The overall headline metrics of a metrics table as numbers and a Markdown table."""
    overall = {
        row["metric"]: row
        for row in table.to_pylist()
        if row["stratum"] == "overall" and row["metric"] in HEADLINE
    }
    shown = [m for m in HEADLINE if m in overall and overall[m]["value"] is not None]
    return {
        **{HEADLINE[m]: float(overall[m]["value"]) for m in shown},
        "headline": dg.MetadataValue.md(
            markdown_table(
                ["metric", "value", "95% CI", "denominator"],
                [
                    (
                        HEADLINE[m],
                        f"{overall[m]['value']:.3f}",
                        f"[{overall[m]['ci_low']:.3f}, {overall[m]['ci_high']:.3f}]",
                        overall[m]["denominator"],
                    )
                    for m in shown
                ],
            )
        ),
    }
