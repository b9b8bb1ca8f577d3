from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from chronoscope_dagster.evaluation.comparison import (
    COMPARED,
    COMPARISON_SCHEMA,
    compare_models,
    comparison_order,
)
from chronoscope_dagster.evaluation.matching import MODE_METADATA_KEY
from chronoscope_dagster.evaluation.metrics import compute_metrics
from tests.evaluation.test_metrics import golden_rows, table, turn


def chains(correct: range, n: int = 100, length: int = 3) -> list[dict]:
    """``n`` chains of ``length`` turns, every scored turn drift-eligible and scope-dependent;
    the chains in ``correct`` are right on every turn, the others wrong and drifted on every
    turn."""
    return [
        turn(
            f"c{c:04d}",
            "carryover",
            length,
            index,
            ok1=c in correct,
            eligible=True,
            drift1=c not in correct,
            scope=True,
        )
        for c in range(n)
        for index in range(1, length)
    ]


def by_metric(comparison: pa.Table) -> dict[str, dict]:
    return {row["metric"]: row for row in comparison.to_pylist()}


def test_a_known_difference_of_twenty_points():
    a, b = table(chains(range(60))), table(chains(range(40)))
    resamples = 1000
    rows = by_metric(compare_models(a, b, bootstrap=resamples, seed=3))
    assert list(rows) == list(COMPARED)
    expected = {
        "scope_acc_at1": (0.6, 0.4),
        "acc_at1": (0.6, 0.4),
        "final_turn_acc_at1": (0.6, 0.4),
        "strict_chain_acc_at1": (0.6, 0.4),
        "drift_rate_given_present_at1": (0.4, 0.6),
    }
    for metric, (value_a, value_b) in expected.items():
        row = rows[metric]
        assert row["value_a"] == pytest.approx(value_a)
        assert row["value_b"] == pytest.approx(value_b)
        difference = value_a - value_b
        assert row["difference"] == pytest.approx(difference)
        assert row["ci_low"] <= difference <= row["ci_high"]
        assert row["ci_low"] > 0 if difference > 0 else row["ci_high"] < 0
        # 20 of 100 chains differ, always in the same direction: a resample without any of
        # them (probability 0.8**100) is the only way to a difference of 0
        assert row["p_value"] == pytest.approx(2 / (1 + resamples))
        assert (row["n_chains"], row["n_turns"]) == (100, 200)
        assert (row["chains_left_out_a"], row["chains_left_out_b"]) == (0, 0)
    # the binomial standard error of a 20% share of differing chains among 100 is 0.04
    width = rows["acc_at1"]["ci_high"] - rows["acc_at1"]["ci_low"]
    assert 2 * 1.96 * 0.04 * 0.8 < width < 2 * 1.96 * 0.04 * 1.2


def test_the_resample_is_paired():
    """Ten of 400 single-turn chains differ: unpaired, the interval of 0.025 would be about
    +-0.07 and hold 0; paired it is about +-0.015 and does not."""
    rows_a = [turn(f"c{c:03d}", "carryover", 2, 1, ok1=c < 200) for c in range(400)]
    rows_b = [turn(f"c{c:03d}", "carryover", 2, 1, ok1=c < 190) for c in range(400)]
    row = by_metric(compare_models(table(rows_a), table(rows_b), bootstrap=2000))["acc_at1"]
    assert row["difference"] == pytest.approx(0.025)
    assert 0 < row["ci_low"] < 0.025 < row["ci_high"] < 0.05
    assert row["p_value"] < 0.05


def test_identical_predictions_differ_by_nothing():
    scored = table(golden_rows())
    comparison = compare_models(scored, scored, bootstrap=500)
    assert comparison.num_rows == len(COMPARED)
    for row in comparison.to_pylist():
        assert row["value_a"] == row["value_b"]
        assert (row["difference"], row["ci_low"], row["ci_high"]) == (0.0, 0.0, 0.0)
        assert row["p_value"] == 1.0


def test_the_values_are_the_metrics_values():
    a = table(golden_rows())
    rows_b = golden_rows()
    rows_b[3].update(drift_at1=False, drift_atk=False, correct_at1=True, correct_atk=True)
    b = table(rows_b)
    rows = by_metric(compare_models(a, b, bootstrap=0))
    for side, scored in (("value_a", a), ("value_b", b)):
        metrics = compute_metrics(scored, bootstrap=0).to_pylist()
        overall = {r["metric"]: r for r in metrics if r["stratum"] == "overall"}
        for metric in COMPARED:
            assert rows[metric][side] == overall[metric]["value"], (side, metric)
            assert rows[metric]["denominator"] == overall[metric]["denominator"]
    assert rows["acc_at1"]["difference"] == pytest.approx(-1 / 7)
    assert rows["strict_chain_acc_at1"]["difference"] == pytest.approx(-1 / 4)
    assert rows["drift_rate_given_present_at1"]["difference"] == pytest.approx(1 / 3)
    assert all(r["ci_low"] is None and r["p_value"] is None for r in rows.values())


def test_chains_not_scored_alike_by_both_are_left_out_and_counted():
    rows_a = chains(range(6), n=10)
    rows_b = [r for r in chains(range(3), n=12) if not (r["chain_id"] == "c0001" and r["is_final"])]
    comparison = compare_models(table(rows_a), table(rows_b), bootstrap=200)
    kept = {f"c{c:04d}" for c in range(10)} - {"c0001"}
    row = by_metric(comparison)["acc_at1"]
    assert (row["n_chains"], row["n_turns"]) == (9, 18)
    assert (row["chains_left_out_a"], row["chains_left_out_b"]) == (1, 3)
    only = [table([r for r in rows if r["chain_id"] in kept]) for rows in (rows_a, rows_b)]
    counted = ["chains_left_out_a", "chains_left_out_b"]
    assert comparison.drop_columns(counted) == compare_models(*only, bootstrap=200).drop_columns(
        counted
    )
    assert row["value_a"] == pytest.approx(5 / 9) and row["value_b"] == pytest.approx(2 / 9)


def test_no_common_chain_or_disagreeing_turns_are_refused():
    a = table(chains(range(2), n=4))
    b = table([{**r, "chain_id": r["chain_id"] + "x"} for r in chains(range(2), n=4)])
    with pytest.raises(ValueError, match="no chain scored on the same turns"):
        compare_models(a, b)
    rows_b = chains(range(2), n=4)
    rows_b[5].update(drift_eligible=False, drift_at1=False, drift_atk=False)
    with pytest.raises(ValueError, match="disagree on drift_eligible on 1 turns"):
        compare_models(a, table(rows_b))
    rows_b = chains(range(2), n=4)
    rows_b[2].update(scope_dependent=False)
    with pytest.raises(ValueError, match="disagree on scope_dependent on 1 turns"):
        compare_models(a, table(rows_b))
    with pytest.raises(ValueError, match="different match modes"):
        compare_models(a, a.replace_schema_metadata({MODE_METADATA_KEY: b"exact"}))


def test_a_metric_without_denominator_is_left_out():
    rows = [turn(f"c{c}", "carryover", 2, 1, ok1=c < 2) for c in range(4)]
    comparison = compare_models(table(rows), table(rows[::-1]), bootstrap=100)
    metrics = comparison.column("metric").to_pylist()
    assert "drift_rate_given_present_at1" not in metrics and "scope_acc_at1" not in metrics
    assert comparison.num_rows == len(COMPARED) - 2


def test_deterministic_and_independent_of_row_order():
    a = table(golden_rows())
    b_rows = golden_rows()
    b_rows[2].update(correct_at1=False, correct_atk=False)
    b = table(b_rows[::-1])
    first = compare_models(a, b, bootstrap=300, seed=7)
    assert first.schema == COMPARISON_SCHEMA
    assert first == compare_models(a, b, bootstrap=300, seed=7)
    assert first == compare_models(table(golden_rows()[::-1]), table(b_rows), bootstrap=300, seed=7)
    swapped = by_metric(compare_models(b, a, bootstrap=300, seed=7))
    for row in first.to_pylist():
        other = swapped[row["metric"]]
        assert other["difference"] == -row["difference"]
        assert other["ci_low"] == pytest.approx(-row["ci_high"])
        assert other["ci_high"] == pytest.approx(-row["ci_low"])
        assert other["p_value"] == row["p_value"]


@pytest.mark.parametrize(
    ("keywords", "message"),
    [({"bootstrap": -1}, "bootstrap"), ({"seed": -1}, "seed"), ({"confidence": 1.0}, "confidence")],
)
def test_bad_parameters_are_refused(keywords, message):
    scored = table(golden_rows())
    with pytest.raises(ValueError, match=message):
        compare_models(scored, scored, **keywords)


def test_p_value_follows_the_interval():
    """Over many differences, p < 0.05 exactly where the 95% interval excludes 0, up to the
    resolution of the resamples."""
    rng = np.random.default_rng(0)
    disagreements, significant = 0, 0
    for trial in range(30):
        right_a = rng.random(60) < 0.5
        right_b = np.where(rng.random(60) < 0.15, ~right_a, right_a)
        rows_a = [turn(f"c{c}", "f", 2, 1, ok1=bool(right_a[c])) for c in range(60)]
        rows_b = [turn(f"c{c}", "f", 2, 1, ok1=bool(right_b[c])) for c in range(60)]
        row = by_metric(compare_models(table(rows_a), table(rows_b), bootstrap=1000, seed=trial))
        row = row["acc_at1"]
        excludes = row["ci_low"] > 0 or row["ci_high"] < 0
        significant += excludes
        if excludes != (row["p_value"] < 0.05) and not math.isclose(
            row["p_value"], 0.05, abs_tol=0.01
        ):
            disagreements += 1
    assert disagreements == 0
    assert 0 < significant < 30, "both outcomes occur"


def test_the_baseline_is_the_first_registry_entry_with_results_or_the_named_one():
    registry = ["local", "oracle", "present_day"]
    assert comparison_order(["present_day", "zeta", "oracle", "alpha"], registry) == [
        "oracle",
        "present_day",
        "alpha",
        "zeta",
    ]
    assert comparison_order(["zeta", "alpha"], registry) == ["alpha", "zeta"]
    assert comparison_order(["oracle", "present_day"], registry, "present_day") == [
        "present_day",
        "oracle",
    ]
    with pytest.raises(ValueError, match="baseline 'local' has no results"):
        comparison_order(["oracle"], registry, "local")
