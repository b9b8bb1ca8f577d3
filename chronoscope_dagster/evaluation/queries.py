"""What the evaluation stage computes over a home's files: the turns a model answers and its
predictions scored beside their turns (SQL over sources the caller names), and the metrics,
comparisons and knowledge computed from those scored turns. ``scored_turns`` (where an argument)
gives the rows of ``scored_turns_sql`` of a model's predictions in a setting."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.comparison import (
    COMPARISONS_SCHEMA,
    compare_models,
    comparison_pairs,
)
from chronoscope_dagster.evaluation.knowledge import KNOWLEDGE_SCHEMA, knowledge_metrics
from chronoscope_dagster.evaluation.metrics import compute_metrics
from chronoscope_dagster.evaluation.own_present import (
    score_against_presents,
    without_own_present,
)
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.llm.blind import VIEW_COLUMNS
from chronoscope_dagster.sql import sql_string

MODEL_KNOWLEDGE_SCHEMA = pa.schema(
    [pa.field(name, pa.string(), nullable=False) for name in ("model", "setting")]
    + list(KNOWLEDGE_SCHEMA)
)
"""Known alone / lost in conversation / drifted to today per model and setting."""


def sample_turns_sql(turns: str, sample: str, setting: Setting) -> str:
    """The turns of the evaluation sample a model answers under ``setting``, from the SQL
    ``turns`` (the benchmark's) and ``sample`` (the evaluation sample's chains)."""
    only_self = "AND s.in_self_conditioned" if setting is Setting.SELF_CONDITIONED else ""
    return f"""
        SELECT t.chain_id, t.turn_index, t.question, t.answer, t.present_labels,
               t.is_explicit, t.explicit_question,
               {", ".join(f"t.{c}" for c in VIEW_COLUMNS if c not in ("turn_index", "is_explicit"))}
        FROM {turns} t
        JOIN {sample} s USING (chain_id)
        WHERE true {only_self}
        ORDER BY t.chain_id, t.turn_index"""


def scored_turns_sql(
    predictions: str,
    turns: str,
    first_scored_turn: int,
    variant: str | None = None,
    own_present: str | None = None,
) -> str:
    """Scored predictions of the SQL ``predictions`` (of one ``variant`` if it has several)
    beside their turns of ``turns``, in the columns matching and metrics read; with
    ``own_present`` (the SQL of the turns against the model's own present,
    ``own_present.OWN_PRESENT_SCHEMA``), its columns too."""
    first = int(first_scored_turn)
    of_variant = "" if variant is None else f"AND p.variant = {sql_string(variant)}"
    own_columns = own_join = ""
    if own_present is not None:
        own_columns = """,
               o.own_present_labels, o.own_drift_eligible, o.own_scope_dependent,
               o.changed_since_cutoff, o.after_cutoff,
               len(o.own_present_labels) > 0 AS own_present_available"""
        own_join = f"LEFT JOIN {own_present} o USING (chain_id, turn_index)"
    return f"""
        SELECT p.chain_id, t.family, t.chain_length, p.turn_index,
               p.turn_index - {first} + 1 AS followup_pos,
               p.turn_index = t.chain_length - 1 AS is_final,
               p.prediction, p.candidates, t.answer, t.gold_labels, t.gold_aliases,
               t.present_labels, t.drift_eligible, t.answer_kind, t.rival_labels, t.is_explicit,
               t.scope_dependent,
               len(t.present_labels) > 0 AS present_available,
               p.error IS NOT NULL AS error{own_columns}
        FROM {predictions} p
        JOIN {turns} t USING (chain_id, turn_index)
        {own_join}
        WHERE p.scored {of_variant}
        ORDER BY p.chain_id, p.turn_index"""


def metrics_of(
    scored_turns: pa.Table,
    model: str,
    setting: Setting,
    *,
    match_mode: str,
    bootstrap: int,
    seed: int,
    variant: str | None = None,
) -> tuple[pa.Table, int, int]:
    """The long metrics table of one (model, setting) (of one ``variant``) from its scored turns
    (the rows of ``scored_turns_sql``) matched in ``match_mode``, with its partition keys as
    columns; the number of scored turns behind it, and how many of them hedged at top-1."""
    scored = score_against_presents(scored_turns, match_mode)
    table = compute_metrics(scored, bootstrap=bootstrap, seed=seed, mode=match_mode)
    keys = {"model": model, "setting": setting, **({} if variant is None else {"variant": variant})}
    hedged = pc.sum(scored["hedged_at1"]).as_py() or 0
    return _with_keys(table, keys), scored.num_rows, hedged


def knowledge_of(
    model: str,
    setting: Setting,
    *,
    modes: Mapping[tuple[str, str], str],
    scored_turns: Callable[[str, Setting], pa.Table],
    bootstrap: int,
    seed: int,
) -> pa.Table | None:
    """The knowledge metrics of ``model`` in ``setting`` against its explicit-scope run, in
    the match mode of its metrics (``modes``: by (model, setting) with metrics); None unless
    both have metrics in the same mode."""
    found = {s: modes[(model, s)] for s in (setting, Setting.EXPLICIT_SCOPE) if (model, s) in modes}
    if len(found) < 2 or len(set(found.values())) > 1:
        return None
    mode = found[setting]
    table = knowledge_metrics(
        score_against_presents(scored_turns(model, setting), mode),
        score_against_presents(scored_turns(model, Setting.EXPLICIT_SCOPE), mode),
        bootstrap=bootstrap,
        seed=seed,
    )
    return _with_keys(table, {"model": model, "setting": setting}).cast(MODEL_KNOWLEDGE_SCHEMA)


def model_knowledge(
    models: list[str],
    *,
    modes: Mapping[tuple[str, str], str],
    scored_turns: Callable[[str, Setting], pa.Table],
    bootstrap: int,
    seed: int,
) -> pa.Table:
    """The knowledge metrics of every model in every paper setting it has them for."""
    tables = [
        found
        for model in models
        for setting in PAPER_SETTINGS
        if (
            found := knowledge_of(
                model,
                setting,
                modes=modes,
                scored_turns=scored_turns,
                bootstrap=bootstrap,
                seed=seed,
            )
        )
        is not None
    ]
    return pa.concat_tables([MODEL_KNOWLEDGE_SCHEMA.empty_table(), *tables])


def model_comparisons(
    order: list[str],
    *,
    modes: Mapping[tuple[str, str], str],
    scored_turns: Callable[[str, Setting], pa.Table],
    bootstrap: int,
    seed: int,
    twins: Mapping[str, str] | None = None,
) -> tuple[pa.Table, list[str]]:
    """Every model of ``order`` against its first, and every mitigated model against its
    plain twin (``twins``, see ``comparison_pairs``), against the dump's present, in each
    setting both have metrics of
    (``modes``: the match mode of the metrics of each (model, setting)), and the pairs left
    uncompared because their metrics used different match modes."""
    pairs = comparison_pairs(order, twins or {})
    tables, uncompared = [], []
    for setting in Setting:
        scored: dict[str, pa.Table] = {}
        for model, baseline in pairs:
            mode, other_mode = modes.get((baseline, setting)), modes.get((model, setting))
            if mode is None or other_mode is None:
                continue
            if other_mode != mode:
                uncompared.append(
                    f"{model} vs {baseline} ({setting}): match modes {other_mode}, {mode}"
                )
                continue
            for name in (model, baseline):
                if name not in scored:
                    turns = without_own_present(scored_turns(name, setting))
                    scored[name] = score_turns(turns, mode)
            table = compare_models(
                scored[model], scored[baseline], bootstrap=bootstrap, seed=seed, mode=mode
            )
            keys = {"setting": setting, "model": model, "baseline": baseline}
            tables.append(_with_keys(table, keys).cast(COMPARISONS_SCHEMA))
    return pa.concat_tables([COMPARISONS_SCHEMA.empty_table(), *tables]), uncompared


def _with_keys(table: pa.Table, keys: Mapping[str, str]) -> pa.Table:
    """``table`` with a constant string column per key, first and in order."""
    for position, (name, value) in enumerate(keys.items()):
        column = pa.array([str(value)] * table.num_rows, pa.string())
        table = table.add_column(position, name, column)
    return table
