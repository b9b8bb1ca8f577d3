"""Drift against the model's own present: the turns against a model's present, its drift
flags, metrics and knowledge control, and the reference rule that proves them."""

from __future__ import annotations

from datetime import date

import duckdb
import pyarrow as pa
import pytest

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.evaluation.consistency import consistency_problems
from chronoscope_dagster.evaluation.inference import (
    EvalChain,
    chains_from_turns,
    predict,
    predictions_table,
)
from chronoscope_dagster.evaluation.knowledge import knowledge_metrics, overall_values
from chronoscope_dagster.evaluation.metrics import (
    CHANGED_SINCE_CUTOFF,
    OWN_METRICS,
    compute_metrics,
)
from chronoscope_dagster.evaluation.own_present import (
    OWN_PRESENT_SCHEMA,
    asked_against,
    own_present_sql,
    score_against_presents,
)
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.queries import metrics_of, model_comparisons, scored_turns_sql
from chronoscope_dagster.evaluation.reference_systems import reference_problems
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.truth.anchors import default_calendar, model_present
from chronoscope_dagster.truth.table import TRUTH_SCHEMA
from chronoscope_dagster.warehouse import Warehouse, parquet_source

CALENDARS = {year: default_calendar(year) for year in (2022, 2023, 2024, 2025)}
CUTOFF_2023 = model_present(date(2023, 12, 31), CALENDARS)
DUMP = model_present(date(2030, 1, 1), CALENDARS)

# The 2023 snapshot's truth of three pairs: a head of government (Q1, P6) held by Q20 at the
# cutoff's anchor (today, in the dump's present, by Q30); a club (Q2, P286) with no holder at
# 2023-10-01 but one in 2021 (Q40) and in 2022 (Q41); a timeless capital (Q3, P36).
TRUTH_2023 = [
    ("2023-10-01", "day", "Q1", "P6", ["Q20"]),
    ("2010", "year", "Q1", "P6", ["Q10", "Q11"]),
    ("2021", "year", "Q2", "P286", ["Q40"]),
    ("2022", "year", "Q2", "P286", ["Q41"]),
    (None, "timeless", "Q3", "P36", ["Q50"]),
]
LABELS_2023 = {"Q10": "Gordon Brown", "Q11": "David Cameron", "Q20": "Rishi Sunak",
               "Q30": "Keir Starmer", "Q40": "Old Coach", "Q41": "New Coach", "Q50": "London"}  # fmt: skip


def truth_table(rows) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "anchor": anchor,
                "anchor_date": None
                if anchor is None
                else date.fromisoformat(anchor if "-" in anchor else f"{anchor}-01-01"),
                "anchor_scope": scope,
                "subject_qid": subject,
                "pid": pid,
                "value_qids": values,
                "canonical_value_qid": values[0],
                "uncertain_value_qids": [],
                "n_values": len(values),
            }
            for anchor, scope, subject, pid, values in rows
        ],
        schema=TRUTH_SCHEMA,
    )


def labels_table() -> pa.Table:
    return pa.table({"qid": list(LABELS_2023), "label": list(LABELS_2023.values())})


def turn(chain, index, subject, pid, scope, gold, present, **extra) -> dict:
    """One turn in the ``turns`` table's columns that the own-present query and scoring read."""
    explicit = extra.pop("is_explicit", index == 0)
    kind = extra.pop("answer_kind", "entity")
    gold_labels = [LABELS_2023[q] for q in gold] if kind == "entity" else []
    present_labels = [LABELS_2023[q] for q in present]
    eligible = kind == "entity" and bool(present) and not set(present) & set(gold)
    return {
        "chain_id": chain,
        "turn_index": index,
        "family": "carryover",
        "chain_length": extra.pop("chain_length", 2),
        "question": f"{subject} {pid} {scope}?",
        "explicit_question": f"{subject} {pid} in {scope}?",
        "subject_qid": subject,
        "pid": pid,
        "gold_qids": gold if kind == "entity" else [],
        "gold_labels": gold_labels,
        "gold_aliases": [],
        "answer": extra.pop("answer", gold_labels[0] if gold_labels else ""),
        "answer_kind": kind,
        "is_explicit": explicit,
        "scope_anchor": scope,
        "scope_year": int(scope[:4]) if scope else None,
        "present_qids": present,
        "present_labels": present_labels,
        "drift_eligible": eligible,
        "scope_dependent": not explicit and eligible,
        "rival_labels": [],
        **extra,
    }


# c1: "In 2010, who was the UK PM?" then "And in 2023?"; c2: "Who was PM in 2010?" then
# "And in 2024?" (a scope after the cutoff); c3: a 2021 club coach no one holds at the cutoff;
# c4: the timeless capital and a yes/no turn.
TURNS = [
    turn("c1", 0, "Q1", "P6", "2010", ["Q10", "Q11"], ["Q30"]),
    turn("c1", 1, "Q1", "P6", "2023", ["Q20"], ["Q30"]),
    turn("c2", 0, "Q1", "P6", "2019", ["Q10"], ["Q30"]),
    turn("c2", 1, "Q1", "P6", "2010", ["Q10", "Q11"], ["Q30"], is_explicit=False),
    turn("c3", 0, "Q2", "P286", "2020", ["Q40"], []),
    turn("c3", 1, "Q2", "P286", "2021", ["Q40"], []),
    turn("c4", 0, "Q3", "P36", "2010", ["Q50"], ["Q50"]),
    turn("c4", 1, "Q3", "P36", "2018-2019", [], [], answer_kind="yes_no", answer="yes"),
]
AFTER = turn("c5", 1, "Q1", "P6", "2024", ["Q30"], ["Q30"], is_explicit=False)
"""A turn scoped after the cutoff whose answer changed since it: what a 2023 model cannot know."""


def own_turns(turns: list[dict], present=CUTOFF_2023) -> pa.Table:
    connection = duckdb.connect()
    connection.register("turns_t", pa.Table.from_pylist(turns))
    connection.register("truth_t", truth_table(TRUTH_2023))
    connection.register("labels_t", labels_table())
    sql = own_present_sql("turns_t", "truth_t", "labels_t", present)
    return connection.sql(sql).to_arrow_table().cast(OWN_PRESENT_SCHEMA)


def by_turn(table: pa.Table) -> dict[tuple[str, int], dict]:
    return {(row["chain_id"], row["turn_index"]): row for row in table.to_pylist()}


def test_each_turn_is_judged_against_the_values_at_the_models_present():
    own = by_turn(own_turns([*TURNS, AFTER]))
    pm_2010 = own[("c1", 0)]
    assert pm_2010["own_present_qids"] == ["Q20"]
    assert pm_2010["own_present_labels"] == ["Rishi Sunak"]
    assert pm_2010["own_drift_eligible"] and pm_2010["changed_since_cutoff"]
    pm_2023 = own[("c1", 1)]
    assert not pm_2023["own_drift_eligible"], "the 2023 holder is the gold of 2023"
    assert not pm_2023["own_scope_dependent"] and pm_2023["changed_since_cutoff"]
    assert own[("c2", 1)]["own_scope_dependent"], "implicit, gold not the holder at the cutoff"
    assert not own[("c2", 0)]["own_scope_dependent"], "explicit"
    coach = own[("c3", 1)]
    assert coach["own_present_qids"] == [] and not coach["own_drift_eligible"]
    assert coach["own_scope_dependent"], "no holder at the cutoff; 2021's is not 2022's"
    assert not coach["changed_since_cutoff"], "no holder today either"
    capital = own[("c4", 0)]
    assert capital["own_present_qids"] == ["Q50"] and not capital["changed_since_cutoff"]
    yes_no = own[("c4", 1)]
    assert yes_no["own_present_qids"] == [] and not any(
        yes_no[k] for k in ("own_drift_eligible", "own_scope_dependent", "changed_since_cutoff")
    )
    assert own[("c5", 1)]["after_cutoff"] and own[("c5", 1)]["changed_since_cutoff"]
    assert not any(own[key]["after_cutoff"] for key in own if key != ("c5", 1))


def test_the_dumps_present_as_a_models_present_keeps_every_turns_own_flags():
    own = by_turn(own_turns(TURNS, present=DUMP))
    for row in TURNS:
        found = own[(row["chain_id"], row["turn_index"])]
        assert found["own_present_qids"] == row["present_qids"]
        assert found["own_drift_eligible"] == row["drift_eligible"]
        assert found["own_scope_dependent"] == row["scope_dependent"]
        assert not found["changed_since_cutoff"]


def scored_rows(turns: list[dict], answers: dict[tuple[str, int], str], present=CUTOFF_2023):
    """``turns`` answered with ``answers`` (the gold elsewhere), scored beside their turns
    against ``present`` by the evaluation's own query."""
    predictions = pa.Table.from_pylist(
        [
            {
                "chain_id": row["chain_id"],
                "turn_index": row["turn_index"],
                "scored": row["turn_index"] >= 1,
                "prediction": (text := answers.get((row["chain_id"], row["turn_index"]))),
                "candidates": [text],
                "error": None,
            }
            for row in turns
        ]
    )
    connection = duckdb.connect()
    connection.register("predictions_t", predictions)
    connection.register("turns_t", pa.Table.from_pylist(turns))
    connection.register("own_t", own_turns(turns, present))
    sql = scored_turns_sql("predictions_t", "turns_t", 1, own_present="own_t")
    return connection.sql(sql).to_arrow_table()


def test_a_2010_question_answered_with_the_2023_holder_drifts_against_the_models_present_only():
    answers = {("c1", 1): "Rishi Sunak", ("c2", 1): "Rishi Sunak", ("c3", 1): "I don't know",
               ("c4", 1): "yes"}  # fmt: skip
    scored = by_turn(score_against_presents(scored_rows(TURNS, answers), "relaxed"))
    pm_2010 = scored[("c2", 1)]
    assert not pm_2010["correct_at1"]
    assert pm_2010["own_drift_at1"] and pm_2010["own_drift_atk"], "its present's holder"
    assert pm_2010["drift_eligible"] and not pm_2010["drift_at1"], "the 2025 holder differs"
    assert scored[("c1", 1)]["correct_at1"] and not scored[("c1", 1)]["own_drift_at1"]
    assert not scored[("c3", 1)]["own_drift_at1"], "no value at its present"


def test_the_own_present_metrics_stand_beside_the_dumps_unchanged():
    answers = {("c1", 1): "Keir Starmer", ("c2", 1): "Rishi Sunak", ("c3", 1): "I don't know",
               ("c4", 1): "no"}  # fmt: skip
    rows = scored_rows(TURNS, answers)
    scored = score_against_presents(rows, "relaxed")
    table = compute_metrics(scored, bootstrap=50, seed=0)
    own = [c for c in rows.column_names if c.startswith(("own_", "changed_", "after_"))]
    without = rows.drop_columns(own)
    dump_only = compute_metrics(score_turns(without), bootstrap=50, seed=0)
    dump_rows = table.filter(pa.compute.is_in(table["metric"], pa.array(dump_only["metric"])))
    dump_rows = dump_rows.filter(pa.compute.not_equal(dump_rows["stratum"], CHANGED_SINCE_CUTOFF))
    assert dump_rows.equals(dump_only), "the dump's figures do not move"
    overall = {r["metric"]: r for r in table.to_pylist() if r["stratum"] == "overall"}
    assert set(OWN_METRICS) <= set(overall)
    assert overall["drift_rate_given_present_at1"]["value"] == 0.5  # c1/1 of c1/1, c2/1
    assert overall["drift_rate_given_present_at1"]["denominator"] == 2
    assert overall["own_drift_rate_given_present_at1"]["value"] == 1.0  # c2/1 alone
    assert overall["own_drift_rate_given_present_at1"]["denominator"] == 1
    assert overall["n_turns_without_own_present"]["value"] == 2  # c3/1 and the yes/no turn
    assert overall["own_present_available_rate"]["value"] == 0.5
    assert overall["own_scope_acc_at1"]["denominator"] == 2  # c2/1 and c3/1
    changed = {r["metric"]: r for r in table.to_pylist() if r["stratum"] == CHANGED_SINCE_CUTOFF}
    assert changed["n_turns"]["value"] == 2  # c1/1 and c2/1
    assert "strict_chain_acc_at1" not in changed, "a stratum of some turns of a chain"
    assert consistency_problems(table) == []


def test_models_without_a_cutoff_have_no_own_present_figures():
    connection = duckdb.connect()
    connection.register("turns_t", pa.Table.from_pylist(TURNS))
    connection.register(
        "predictions_t",
        pa.Table.from_pylist(
            [{"chain_id": t["chain_id"], "turn_index": t["turn_index"],
              "scored": t["turn_index"] >= 1,
              "prediction": "x", "candidates": ["x"], "error": None} for t in TURNS]
        ),
    )  # fmt: skip
    rows = connection.sql(scored_turns_sql("predictions_t", "turns_t", 1)).to_arrow_table()
    table = compute_metrics(score_against_presents(rows, "relaxed"), bootstrap=0)
    assert not set(table["metric"].to_pylist()) & set(OWN_METRICS)
    assert CHANGED_SINCE_CUTOFF not in table["stratum"].to_pylist()


def test_the_explicit_scope_control_does_not_count_what_the_model_could_not_know():
    turns = [*TURNS, turn("c5", 0, "Q1", "P6", "2019", ["Q10"], ["Q30"]), AFTER]
    everything = {(t["chain_id"], t["turn_index"]): t["answer"] for t in turns}
    explicit = score_against_presents(scored_rows(turns, everything), "relaxed")
    drifting = {**everything, ("c2", 1): "Rishi Sunak", ("c5", 1): "Rishi Sunak"}
    in_setting = score_against_presents(scored_rows(turns, drifting), "relaxed")
    values = overall_values(knowledge_metrics(in_setting, explicit, bootstrap=0))
    assert values["known_rate_at1"] == 1.0, "right alone on every turn, 2024 included"
    assert values["own_known_rate_at1"] == 4 / 5, "not c5/1: changed since, scoped after"
    assert values["drift_given_known_at1"] == 0.0, "Sunak is not the 2025 holder"
    assert values["own_drift_given_known_at1"] == 1.0  # c2/1 of c2/1 (c5/1 is not known)


CHAINS = [
    EvalChain("c1", ("In 2010, who was PM?", "And in 2023?"), ("Gordon Brown", "Rishi Sunak"),
              ("Keir Starmer", "Keir Starmer")),
    EvalChain("c2", ("In 2019, who was PM?", "And in 2010?"), ("Gordon Brown", "Gordon Brown"),
              ("Keir Starmer", "Keir Starmer")),
]  # fmt: skip


def present_day_turns(own: bool) -> tuple[pa.Table, pa.Table]:
    """(predictions, turns) of ``present_day`` with a 2023 cutoff on c1 and c2: answering its
    own present (``own``), or the dump's as today's code does."""
    turns = pa.Table.from_pylist([t for t in TURNS if t["chain_id"] in ("c1", "c2")])
    asked = asked_against(turns, own_turns(turns.to_pylist())) if own else turns
    chains = [
        EvalChain(
            c.chain_id,
            c.questions,
            c.answers,
            tuple(
                (r["present_labels"] or [""])[0]
                for r in asked.to_pylist()
                if r["chain_id"] == c.chain_id
            ),
        )
        for c in CHAINS
    ]
    system = parse_entry(
        {"name": "present_day_2023", "backend": "present_day", "knowledge_cutoff": "2023-12-31"}
    ).build()
    predicted = predict(chains, Setting.GOLD_CONTEXT, CachedChat(system, None), Decoding())
    return predictions_table("present_day_2023", Setting.GOLD_CONTEXT, predicted), turns


@pytest.mark.parametrize("own", [True, False])
def test_present_day_with_a_cutoff_must_drift_on_every_turn_eligible_against_its_present(own):
    predictions, turns = present_day_turns(own)

    def scored_turns(model, setting, variant=None):
        connection = duckdb.connect()
        connection.register("predictions_t", predictions)
        connection.register("turns_t", turns)
        connection.register("own_t", own_turns(turns.to_pylist()))
        sql = scored_turns_sql("predictions_t", "turns_t", 1, own_present="own_t")
        return connection.sql(sql).to_arrow_table()

    scored = score_against_presents(scored_turns("m", "s"), "relaxed")
    metrics = compute_metrics(scored, bootstrap=0)
    problems = reference_problems(
        "present_day",
        "present_day_2023",
        Setting.GOLD_CONTEXT,
        (None,),
        metrics=metrics,
        modes={("present_day_2023", Setting.GOLD_CONTEXT): "relaxed"},
        scored_turns=scored_turns,
        copy_previous=lambda: (0, 0),
    )
    overall = {r["metric"]: r["value"] for r in metrics.to_pylist() if r["stratum"] == "overall"}
    if own:
        assert problems == []
        assert overall["own_drift_rate_given_present_at1"] == 1.0
        assert overall["drift_rate_given_present_at1"] == 0.0, "wrong, not drift, for the dump"
    else:
        assert overall["drift_rate_given_present_at1"] == 1.0
        assert any("drift-eligible against its own present" in p for p in problems)


def test_present_day_with_a_2023_cutoff_on_the_embedded_sample(sample_truth_home, sample_turns):
    """The embedded sample's 2025 chains, answered by ``present_day`` with a 2023 cutoff from
    its own present (the 2023 snapshot at 2023-10-01): drift 1.0 against that present, less
    against the dump's, where the two presents differ."""
    warehouse = Warehouse(sample_truth_home)
    present = model_present(
        date(2023, 12, 31), {int(y): default_calendar(int(y)) for y in SNAPSHOT_YEARS}
    )
    assert (present.snapshot_year, present.anchor.key) == (2023, "2023-10-01")
    connection = duckdb.connect()
    connection.register("turns_t", sample_turns)
    sql = own_present_sql(
        "turns_t",
        parquet_source(warehouse.data_path("truth", snapshot_year="2023")),
        parquet_source(warehouse.data_path("labels", snapshot_year="2023")),
        present,
    )
    own = connection.sql(sql).to_arrow_table().cast(OWN_PRESENT_SCHEMA)
    assert own.num_rows == sample_turns.num_rows, "every turn accounted for"
    chains = chains_from_turns(asked_against(sample_turns, own))
    system = parse_entry(
        {"name": "present_day_2023", "backend": "present_day", "knowledge_cutoff": "2023-12-31"}
    ).build()
    predicted = predict(chains, Setting.GOLD_CONTEXT, CachedChat(system, None), Decoding())
    connection.register(
        "predictions_t", predictions_table("present_day_2023", Setting.GOLD_CONTEXT, predicted)
    )
    connection.register("own_t", own)
    rows = connection.sql(
        scored_turns_sql("predictions_t", "turns_t", 1, own_present="own_t")
    ).to_arrow_table()
    table, _, _ = metrics_of(
        rows, "present_day_2023", Setting.GOLD_CONTEXT, match_mode="relaxed", bootstrap=0, seed=0
    )
    overall = {r["metric"]: r for r in table.to_pylist() if r["stratum"] == "overall"}
    assert overall["own_drift_rate_given_present_at1"]["value"] == 1.0
    assert overall["drift_rate_given_present_at1"]["value"] < 1.0
    assert overall["own_scope_acc_at1"]["value"] == 0.0
    changed = [r for r in table.to_pylist() if r["stratum"] == CHANGED_SINCE_CUTOFF]
    assert changed and changed[0]["n_turns"] > 0
    assert consistency_problems(table.drop_columns(["model", "setting"])) == []
    problems = reference_problems(
        "present_day",
        "present_day_2023",
        Setting.GOLD_CONTEXT,
        (None,),
        metrics=table,
        modes={("present_day_2023", Setting.GOLD_CONTEXT): "relaxed"},
        scored_turns=lambda *_: rows,
        copy_previous=lambda: (0, 0),
    )
    assert problems == []


def test_models_with_and_without_a_cutoff_are_compared_against_the_dumps_present():
    answers = {("c1", 1): "Keir Starmer", ("c2", 1): "Rishi Sunak"}
    with_cutoff = scored_rows(TURNS, answers)
    own = [c for c in with_cutoff.column_names if c.startswith(("own_", "changed_", "after_"))]
    tables = {"dump": with_cutoff.drop_columns(own), "cut": with_cutoff}
    comparisons, uncompared = model_comparisons(
        ["dump", "cut"],
        modes={(m, Setting.GOLD_CONTEXT.value): "relaxed" for m in tables},
        scored_turns=lambda model, setting: tables[model] if setting == "gold_context" else None,
        bootstrap=0,
        seed=0,
    )
    assert uncompared == [] and comparisons.num_rows > 0
    assert set(comparisons["difference"].to_pylist()) == {0.0}, "the same answers"
