"""Drift against the model's own present.

"Drift to the present day" is measured against the dump's present, the latest day anchor of
the latest snapshot (DESIGN decision 3). A model whose knowledge ends earlier cannot drift to
a value it never saw: its present is the truth at its knowledge cutoff (a registry entry's
``knowledge_cutoff``; which anchor of which snapshot, ``truth.anchors.model_present``). For
such a model every turn is also judged against its own present, beside the dump's:

* ``own_present_qids``, ``own_present_labels``: the values at the model's present anchor (or
  timeless) in the truth of the present's snapshot, by QID number, with their English labels
  in that snapshot (a value without one is left out of the labels); entity turns only, as the
  dump's present;
* ``own_drift_eligible``: an entity turn whose present value (named) is not in its gold set.
  A turn without a value at the model's present is not eligible, and is counted (the metric
  ``n_turns_without_own_present``);
* ``own_scope_dependent``: the dump's rule (``chains.facts.SnapshotFacts.scope_sensitive``)
  with the model's present: an implicit turn whose gold is not its present value, or, with no
  value at its present, whose gold shares nothing with the values of the latest whole year on
  or before the cutoff (the truth's year anchors, not the decided golds);
* ``changed_since_cutoff``: an entity turn whose values today (the dump's present) are not
  those at the model's present: what the model could not know;
* ``after_cutoff``: the turn's scope begins after the cutoff.

When the model's present is the dump's (a cutoff after the latest snapshot), these are the
turn's own columns and nothing changed since the cutoff, so every figure is the dump's.

``with_own_drift`` adds the drift flags against the model's present (``own_drift_at1``,
``own_drift_atk``) to scored turns: the turns scored again with the model's present values as
the present, a turn right by the dump's scoring never drifting. Correctness stays the dump's
scoring's: which present a model is held to does not change which answers are right.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from chronoscope_dagster.evaluation.matching import INPUT_COLUMNS
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.sql import sql_string
from chronoscope_dagster.truth.anchors import ModelPresent
from chronoscope_dagster.truth.table import present_day_sql

OWN_PRESENT_FILE = "own_present.parquet"
"""Beside a predictions partition of a model with a knowledge cutoff: its turns against the
model's present (``OWN_PRESENT_SCHEMA``)."""
_STRINGS = pa.list_(pa.string())
OWN_PRESENT_SCHEMA = pa.schema(
    [
        pa.field("chain_id", pa.string(), nullable=False),
        pa.field("turn_index", pa.int16(), nullable=False),
        pa.field("own_present_qids", _STRINGS, nullable=False),
        pa.field("own_present_labels", _STRINGS, nullable=False),
        pa.field("own_drift_eligible", pa.bool_(), nullable=False),
        pa.field("own_scope_dependent", pa.bool_(), nullable=False),
        pa.field("changed_since_cutoff", pa.bool_(), nullable=False),
        pa.field("after_cutoff", pa.bool_(), nullable=False),
    ]
)
OWN_COLUMN = "own_drift_eligible"
"""Scored turns that hold it are judged against the model's own present too."""


def own_present_sql(turns: str, truth: str, labels: str, present: ModelPresent) -> str:
    """Each turn of the SQL ``turns`` (columns of the ``turns`` table) against ``present``,
    in ``OWN_PRESENT_SCHEMA``'s columns and order; ``truth`` and ``labels`` are the SQL of the
    truth and labels of the present's snapshot."""
    cutoff = f"DATE {sql_string(present.knowledge_cutoff.isoformat())}"
    scope_start = (
        "coalesce(try_cast(t.scope_anchor AS DATE), make_date(CAST(t.scope_year AS BIGINT), 1, 1))"
    )
    after = f"coalesce({scope_start} > {cutoff}, false)"
    keys = "ORDER BY chain_id, turn_index"
    if present.is_dump_present:
        return f"""
        SELECT t.chain_id, t.turn_index, t.present_qids AS own_present_qids,
               t.present_labels AS own_present_labels, t.drift_eligible AS own_drift_eligible,
               t.scope_dependent AS own_scope_dependent, false AS changed_since_cutoff,
               {after} AS after_cutoff
        FROM {turns} t {keys}"""
    entity = "t.answer_kind = 'entity'"
    return f"""
    WITH pairs AS (
        SELECT DISTINCT subject_qid, pid FROM {turns} WHERE answer_kind = 'entity'
    ), pair_truth AS (
        SELECT * FROM {truth} SEMI JOIN pairs USING (subject_qid, pid)
    ), present AS ({present_day_sql("pair_truth", labels, present.anchor.key)}
    ), last_year AS (
        SELECT subject_qid, pid, arg_max(value_qids, anchor_date) AS value_qids
        FROM pair_truth
        WHERE anchor_scope = 'year' AND n_values > 0
          AND make_date(year(anchor_date), 12, 31) <= {cutoff}
        GROUP BY subject_qid, pid
    ), own AS (
        SELECT t.*,
               CASE WHEN {entity} THEN coalesce(p.value_qids, []) ELSE [] END AS own_qids,
               CASE WHEN {entity}
                    THEN coalesce(list_filter(p.value_labels, lambda label: label IS NOT NULL), [])
                    ELSE [] END AS own_labels,
               l.value_qids AS last_qids
        FROM {turns} t
        LEFT JOIN present p USING (subject_qid, pid)
        LEFT JOIN last_year l USING (subject_qid, pid)
    )
    SELECT t.chain_id, t.turn_index, t.own_qids AS own_present_qids,
           t.own_labels AS own_present_labels,
           {entity} AND len(t.own_labels) > 0 AND NOT list_has_any(t.own_qids, t.gold_qids)
               AS own_drift_eligible,
           {entity} AND NOT t.is_explicit AND t.scope_anchor IS NOT NULL
               AND len(t.gold_qids) > 0
               AND CASE WHEN len(t.own_qids) > 0
                        THEN NOT list_has_any(t.own_qids, t.gold_qids)
                        ELSE t.last_qids IS NOT NULL AND NOT list_has_any(t.gold_qids, t.last_qids)
                   END AS own_scope_dependent,
           {entity} AND list_sort(t.present_qids) <> list_sort(t.own_qids) AS changed_since_cutoff,
           {after} AS after_cutoff
    FROM own t {keys}"""


def without_own_present(turns: pa.Table) -> pa.Table:
    """``turns`` (scored turns) without the columns against a model's own present: what is
    compared across models is measured against the dump's present."""
    return turns.drop_columns(
        [name for name in turns.column_names if name.startswith(("own_", "changed_", "after_"))]
    )


def has_own_present(turns: pa.Table) -> bool:
    """Whether ``turns`` (scored turns) are judged against a model's own present too."""
    return OWN_COLUMN in turns.column_names


def with_own_drift(scored: pa.Table, mode: str) -> pa.Table:
    """``scored`` (``score_turns``' output, in ``mode``) with ``own_drift_at1`` and
    ``own_drift_atk`` appended where it has the own-present columns; unchanged otherwise."""
    if not has_own_present(scored):
        return scored
    view = scored.select(list(INPUT_COLUMNS))
    for name, own in (
        ("present_labels", "own_present_labels"),
        ("drift_eligible", "own_drift_eligible"),
    ):
        view = view.set_column(view.column_names.index(name), name, scored.column(own))
    again = score_turns(view, mode)
    for name, correct in (("drift_at1", "correct_at1"), ("drift_atk", "correct_atk")):
        drifted = pc.and_(again.column(name), pc.invert(scored.column(correct)))
        scored = scored.append_column(f"own_{name}", drifted)
    return scored


def score_against_presents(turns: pa.Table, mode: str) -> pa.Table:
    """``score_turns`` of ``turns``, with the drift flags against the model's own present
    where it has one (``with_own_drift``)."""
    return with_own_drift(score_turns(turns, mode), mode)


def asked_against(turns: pa.Table, own: pa.Table) -> pa.Table:
    """``turns`` (turns a model answers) with the model's own present values as their
    ``present_labels`` (what the reference systems answer from), from ``own``
    (``OWN_PRESENT_SCHEMA`` rows of the same turns); a turn ``own`` lacks is an error."""
    by_turn = dict(
        zip(
            zip(own["chain_id"].to_pylist(), own["turn_index"].to_pylist(), strict=True),
            own["own_present_labels"].to_pylist(),
            strict=True,
        )
    )
    keys = zip(turns["chain_id"].to_pylist(), turns["turn_index"].to_pylist(), strict=True)
    try:
        labels = [by_turn[key] for key in keys]
    except KeyError as error:
        raise ValueError(f"turn {error.args[0]} has no value against the model's present") from None
    column = turns.column_names.index("present_labels")
    return turns.set_column(column, turns.field(column), pa.array(labels, turns.field(column).type))
