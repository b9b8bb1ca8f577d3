from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from chronoscope_dagster.evaluation.consistency import consistency_problems
from chronoscope_dagster.evaluation.matching import MODE_METADATA_KEY
from chronoscope_dagster.evaluation.metrics import (
    CHAIN_METRICS,
    METRICS,
    METRICS_SCHEMA,
    REFERENCE_METRICS,
    compute_metrics,
)
from chronoscope_dagster.evaluation.reference_format import reference_results_json

SCORED_SCHEMA = pa.schema(
    [
        ("chain_id", pa.string()),
        ("family", pa.string()),
        ("chain_length", pa.int64()),
        ("turn_index", pa.int64()),
        ("followup_pos", pa.int64()),
        ("is_final", pa.bool_()),
        ("correct_at1", pa.bool_()),
        ("correct_atk", pa.bool_()),
        ("drift_at1", pa.bool_()),
        ("drift_atk", pa.bool_()),
        ("drift_eligible", pa.bool_()),
        ("present_available", pa.bool_()),
        ("scope_dependent", pa.bool_()),
        ("error", pa.bool_()),
        ("tok_tp", pa.int64()),
        ("tok_pred", pa.int64()),
        ("tok_gold", pa.int64()),
        ("ch_tp", pa.int64()),
        ("ch_pred", pa.int64()),
        ("ch_gold", pa.int64()),
    ]
)


def turn(
    chain_id: str,
    family: str,
    length: int,
    index: int,
    *,
    ok1: bool = False,
    okk: bool | None = None,
    present: bool = False,
    eligible: bool = False,
    drift1: bool = False,
    driftk: bool | None = None,
    scope: bool = False,
    error: bool = False,
    tok: tuple[int, int, int] = (0, 1, 1),
    ch: tuple[int, int, int] = (0, 1, 1),
) -> dict:
    """One scored turn as the scoring module writes it (scope turns only: pos = turn index)."""
    return {
        "chain_id": chain_id,
        "family": family,
        "chain_length": length,
        "turn_index": index,
        "followup_pos": index,
        "is_final": index == length - 1,
        "correct_at1": ok1,
        "correct_atk": ok1 if okk is None else okk,
        "drift_at1": drift1,
        "drift_atk": drift1 if driftk is None else driftk,
        "drift_eligible": eligible,
        "present_available": present or eligible,
        "scope_dependent": scope,
        "error": error,
        "tok_tp": tok[0],
        "tok_pred": tok[1],
        "tok_gold": tok[2],
        "ch_tp": ch[0],
        "ch_pred": ch[1],
        "ch_gold": ch[2],
    }


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCORED_SCHEMA)


def golden_rows() -> list[dict]:
    return [
        turn("c1", "carryover", 2, 1, ok1=True, present=True, tok=(2, 2, 2), ch=(4, 4, 4)),
        turn(
            "c2",
            "carryover",
            2,
            1,
            okk=True,
            eligible=True,
            scope=True,
            tok=(0, 1, 2),
            ch=(0, 3, 5),
        ),
        turn("c3", "narrative", 4, 1, ok1=True, scope=True, tok=(1, 1, 1), ch=(1, 1, 1)),
        turn(
            "c3",
            "narrative",
            4,
            2,
            eligible=True,
            drift1=True,
            scope=True,
            tok=(0, 2, 1),
            ch=(0, 4, 3),
        ),
        turn("c3", "narrative", 4, 3, ok1=True, present=True, tok=(1, 2, 1), ch=(3, 3, 3)),
        turn(
            "c4",
            "narrative",
            3,
            1,
            eligible=True,
            error=True,
            scope=True,
            tok=(0, 0, 2),
            ch=(0, 0, 6),
        ),
        turn("c4", "narrative", 3, 2, tok=(0, 1, 1), ch=(0, 3, 3)),
    ]


def values(metrics: pa.Table) -> dict[tuple[str, str], float]:
    return {
        (r["stratum"], r["metric"]): r["value"]
        for r in metrics.select(["stratum", "metric", "value"]).to_pylist()
    }


F = Fraction
GOLDEN = {
    "overall": {
        "n_chains": 4,
        "n_turns": 7,
        "scope_acc_at1": F(1, 4),
        "acc_at1": F(3, 7),
        "acc_atk": F(4, 7),
        "token_f1_micro_top1": F(8, 19),
        "char3_f1_micro_top1": F(16, 43),
        "strict_chain_acc_at1": F(1, 4),
        "avg_chain_turn_acc_at1": F(5, 12),
        "final_turn_acc_at1": F(2, 4),
        "final_turn_acc_atk": F(3, 4),
        "present_available_rate": F(5, 7),
        "drift_rate_given_present_at1": F(1, 3),
        "drift_rate_given_present_atk": F(1, 3),
        "drift_rate_given_error_at1": F(1, 4),
    },
    "family=carryover": {
        "n_chains": 2,
        "n_turns": 2,
        "scope_acc_at1": F(0),
        "acc_at1": F(1, 2),
        "acc_atk": F(1),
        "token_f1_micro_top1": F(4, 7),
        "char3_f1_micro_top1": F(8, 16),
        "strict_chain_acc_at1": F(1, 2),
        "avg_chain_turn_acc_at1": F(1, 2),
        "final_turn_acc_at1": F(1, 2),
        "final_turn_acc_atk": F(1),
        "present_available_rate": F(1),
        "drift_rate_given_present_at1": F(0),
        "drift_rate_given_present_atk": F(0),
        "drift_rate_given_error_at1": F(0),
    },
    "family=narrative": {
        "n_chains": 2,
        "n_turns": 5,
        "scope_acc_at1": F(1, 3),
        "acc_at1": F(2, 5),
        "acc_atk": F(2, 5),
        "token_f1_micro_top1": F(4, 12),
        "char3_f1_micro_top1": F(8, 27),
        "strict_chain_acc_at1": F(0),
        "avg_chain_turn_acc_at1": F(1, 3),
        "final_turn_acc_at1": F(1, 2),
        "final_turn_acc_atk": F(1, 2),
        "present_available_rate": F(3, 5),
        "drift_rate_given_present_at1": F(1, 2),
        "drift_rate_given_present_atk": F(1, 2),
        "drift_rate_given_error_at1": F(1, 3),
    },
    "length=2": {"scope_acc_at1": F(0)},
    "length=3": {
        "n_chains": 1,
        "n_turns": 2,
        "scope_acc_at1": F(0),
        "acc_at1": F(0),
        "strict_chain_acc_at1": F(0),
        "avg_chain_turn_acc_at1": F(0),
        "final_turn_acc_at1": F(0),
        "present_available_rate": F(1, 2),
        "drift_rate_given_present_at1": F(0),
        "drift_rate_given_error_at1": F(0),
        "token_f1_micro_top1": F(0),
    },
    "length=4": {
        "scope_acc_at1": F(1, 2),
        "acc_at1": F(2, 3),
        "avg_chain_turn_acc_at1": F(2, 3),
        "final_turn_acc_at1": F(1),
        "drift_rate_given_present_at1": F(1),
        "drift_rate_given_error_at1": F(1),
    },
    "followup_pos=1": {
        "n_chains": 4,
        "n_turns": 4,
        "scope_acc_at1": F(1, 3),
        "acc_at1": F(2, 4),
        "acc_atk": F(3, 4),
        "present_available_rate": F(3, 4),
        "drift_rate_given_present_at1": F(0),
        "drift_rate_given_error_at1": F(0),
    },
    "followup_pos=2": {
        "n_turns": 2,
        "scope_acc_at1": F(0),
        "acc_at1": F(0),
        "present_available_rate": F(1, 2),
        "drift_rate_given_present_at1": F(1),
        "drift_rate_given_error_at1": F(1, 2),
    },
    "followup_pos=3": {"n_turns": 1, "acc_at1": F(1), "present_available_rate": F(1)},
}


@pytest.fixture(scope="module")
def golden() -> pa.Table:
    return compute_metrics(table(golden_rows()), bootstrap=200, seed=7)


def test_golden_values(golden: pa.Table) -> None:
    got = values(golden)
    for stratum, expected in GOLDEN.items():
        for metric, value in expected.items():
            assert got[(stratum, metric)] == pytest.approx(float(value), abs=1e-15), (
                stratum,
                metric,
            )


def test_schema_and_order(golden: pa.Table) -> None:
    assert golden.schema == METRICS_SCHEMA
    strata = list(dict.fromkeys(golden.column("stratum").to_pylist()))
    assert strata == [
        "overall",
        "family=carryover",
        "family=narrative",
        "length=2",
        "length=3",
        "length=4",
        "followup_pos=1",
        "followup_pos=2",
        "followup_pos=3",
    ]
    for stratum in strata:
        metrics = [r["metric"] for r in golden.to_pylist() if r["stratum"] == stratum]
        assert metrics == [m for m in METRICS if m in metrics]


def test_numeric_order_of_lengths() -> None:
    rows = [turn(f"x{n}", "narrative", n, n - 1, ok1=True) for n in (10, 2, 9)]
    strata = list(dict.fromkeys(compute_metrics(table(rows), bootstrap=0)["stratum"].to_pylist()))
    assert strata[-6:] == [
        "length=2",
        "length=9",
        "length=10",
        "followup_pos=1",
        "followup_pos=8",
        "followup_pos=9",
    ]


def test_omitted_rows(golden: pa.Table) -> None:
    got = values(golden)
    for pos in (1, 2, 3):
        for metric in CHAIN_METRICS:
            assert (f"followup_pos={pos}", metric) not in got
    assert ("followup_pos=3", "drift_rate_given_present_at1") not in got
    assert ("followup_pos=3", "drift_rate_given_present_atk") not in got
    assert ("followup_pos=3", "drift_rate_given_error_at1") not in got
    assert ("followup_pos=3", "scope_acc_at1") not in got, "no scope-dependent turn there"
    assert ("length=2", "drift_rate_given_present_at1") in got
    assert not any(math.isnan(v) for v in got.values())


def test_zero_token_f1_denominator_is_omitted() -> None:
    rows = [turn("a", "carryover", 2, 1, ok1=True, tok=(0, 0, 0), ch=(0, 0, 0))]
    got = values(compute_metrics(table(rows), bootstrap=0))
    assert ("overall", "token_f1_micro_top1") not in got
    assert ("overall", "char3_f1_micro_top1") not in got
    assert got[("overall", "acc_at1")] == 1.0


def test_counts_and_denominators(golden: pa.Table) -> None:
    rows = {(r["stratum"], r["metric"]): r for r in golden.to_pylist()}
    overall = rows[("overall", "acc_at1")]
    assert (overall["n_turns"], overall["n_chains"], overall["denominator"]) == (7, 4, 7)
    assert rows[("overall", "drift_rate_given_present_at1")]["denominator"] == 3
    assert rows[("overall", "scope_acc_at1")]["denominator"] == 4
    assert rows[("family=narrative", "scope_acc_at1")]["denominator"] == 3
    assert rows[("overall", "drift_rate_given_error_at1")]["denominator"] == 4
    assert rows[("overall", "final_turn_acc_at1")]["denominator"] == 4
    assert rows[("overall", "token_f1_micro_top1")]["denominator"] == 19
    assert rows[("followup_pos=2", "acc_at1")]["n_chains"] == 2
    count = rows[("overall", "n_turns")]
    assert (count["value"], count["ci_low"], count["denominator"]) == (7.0, None, None)


def test_scope_accuracy_is_acc_at1_over_the_scope_dependent_turns_only() -> None:
    """Right on every turn that states its scope, wrong on every one that needs it: the paper's
    Acc@1 is high, the headline 0; its denominator is the scope-dependent turns."""
    rows = [
        turn(f"c{c}", "scope_switch", 3, i, ok1=i == 1, scope=i == 2, present=True)
        for c in range(6)
        for i in (1, 2)
    ]
    metrics = compute_metrics(table(rows), bootstrap=100, seed=0)
    got = {(r["stratum"], r["metric"]): r for r in metrics.to_pylist()}
    scope, acc = got[("overall", "scope_acc_at1")], got[("overall", "acc_at1")]
    assert (scope["value"], scope["ci_low"], scope["ci_high"], scope["denominator"]) == (
        0.0, 0.0, 0.0, 6,
    )  # fmt: skip
    assert (acc["value"], acc["denominator"]) == (0.5, 12)
    assert ("followup_pos=1", "scope_acc_at1") not in got, "no scope-dependent turn there"
    assert got[("followup_pos=2", "scope_acc_at1")]["denominator"] == 6
    assert consistency_problems(metrics) == []
    flipped = [{**r, "correct_at1": r["scope_dependent"], "correct_atk": r["scope_dependent"]}
               for r in rows]  # fmt: skip
    assert values(compute_metrics(table(flipped), bootstrap=0))[("overall", "scope_acc_at1")] == 1


def test_scope_accuracy_interval_resamples_chains() -> None:
    """Half the chains right on their scope-dependent turn: a real interval around 0.5."""
    rows = [
        turn(f"c{c:02d}", "carryover", 2, 1, ok1=c % 2 == 0, scope=True, present=True)
        for c in range(40)
    ]
    metrics = compute_metrics(table(rows), bootstrap=400, seed=2)
    row = next(r for r in metrics.to_pylist() if r["metric"] == "scope_acc_at1")
    assert row["value"] == 0.5 and row["ci_low"] < 0.4 and row["ci_high"] > 0.6
    assert metrics.equals(compute_metrics(table(rows[::-1]), bootstrap=400, seed=2))


def test_scope_dependent_column_is_required() -> None:
    with pytest.raises(ValueError, match="scope_dependent"):
        compute_metrics(table(golden_rows()).drop_columns(["scope_dependent"]), bootstrap=0)


def test_errored_turn_counts_as_wrong() -> None:
    rows = golden_rows()
    rows[5] = {**rows[5], "correct_at1": True, "correct_atk": True, "tok_tp": 2, "tok_pred": 2}
    assert values(compute_metrics(table(rows), bootstrap=0)) == values(
        compute_metrics(table(golden_rows()), bootstrap=0)
    )


def test_row_order_does_not_matter() -> None:
    rows = golden_rows()
    first = compute_metrics(table(rows), bootstrap=100, seed=3)
    second = compute_metrics(table(rows[::-1]), bootstrap=100, seed=3)
    assert first.equals(second)


def serialized(metrics: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, metrics.schema) as writer:
        writer.write_table(metrics)
    return sink.getvalue().to_pybytes()


def synthetic(n_chains: int, *, seed: int = 0, offset: int = 0) -> pa.Table:
    """Chains of lengths 2-5 in three families with random correctness and drift."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 6, size=n_chains)
    families = np.array(["carryover", "narrative", "interval_change"])[rng.integers(0, 3, n_chains)]
    reps = lengths - 1
    chain = np.repeat(np.arange(n_chains), reps)
    start = np.repeat(np.cumsum(reps) - reps, reps)
    index = np.arange(len(chain)) - start + 1
    length = lengths[chain]
    ok1 = rng.random(len(chain)) < 0.4
    okk = ok1 | (rng.random(len(chain)) < 0.2)
    eligible = rng.random(len(chain)) < 0.3
    drift1 = eligible & ~ok1 & (rng.random(len(chain)) < 0.3)
    driftk = eligible & ~okk & (drift1 | (rng.random(len(chain)) < 0.1))
    error = ~ok1 & ~okk & ~drift1 & ~driftk & (rng.random(len(chain)) < 0.02)
    gold = rng.integers(1, 4, len(chain))
    pred = rng.integers(0, 4, len(chain))
    tp = np.minimum(gold, pred) * ok1
    return pa.table(
        {
            "chain_id": pa.array([f"s{offset + c:07d}" for c in chain]),
            "family": pa.array(families[chain]),
            "chain_length": length,
            "turn_index": index,
            "followup_pos": index,
            "is_final": index == length - 1,
            "correct_at1": ok1,
            "correct_atk": okk,
            "drift_at1": drift1,
            "drift_atk": driftk,
            "drift_eligible": eligible,
            "present_available": eligible | (rng.random(len(chain)) < 0.3),
            "scope_dependent": eligible | (rng.random(len(chain)) < 0.2),
            "error": error,
            "tok_tp": tp,
            "tok_pred": pred,
            "tok_gold": gold,
            "ch_tp": 2 * tp,
            "ch_pred": 2 * pred,
            "ch_gold": 2 * gold,
        }
    )


def test_ci_deterministic_and_seeded() -> None:
    scored = synthetic(300)
    first = compute_metrics(scored, bootstrap=300, seed=11)
    again = compute_metrics(scored, bootstrap=300, seed=11)
    other = compute_metrics(scored, bootstrap=300, seed=12)
    assert serialized(first) == serialized(again)
    assert first.column("value").equals(other.column("value"))
    assert not first.column("ci_low").equals(other.column("ci_low"))


def test_ci_contains_value_and_consistency() -> None:
    metrics = compute_metrics(synthetic(400, seed=5), bootstrap=300, seed=1)
    ratios = [r for r in metrics.to_pylist() if r["metric"] not in ("n_chains", "n_turns")]
    assert ratios
    for row in ratios:
        assert row["ci_low"] <= row["value"] <= row["ci_high"], row
        assert 0.0 <= row["ci_low"] <= row["ci_high"] <= 1.0
    assert consistency_problems(metrics) == []


def test_adding_a_stratum_keeps_other_intervals() -> None:
    base = synthetic(200, seed=2)
    extra = table([turn("zz", "bridged_multi_pid", 4, i, ok1=True) for i in (1, 2, 3)])
    first = compute_metrics(base, bootstrap=200, seed=4).to_pylist()
    second = compute_metrics(pa.concat_tables([base, extra]), bootstrap=200, seed=4).to_pylist()
    pick = [r for r in first if r["stratum"] == "family=carryover"]
    assert pick == [r for r in second if r["stratum"] == "family=carryover"]


def test_ci_shrinks_with_more_chains() -> None:
    small = synthetic(50, seed=9)
    large = pa.concat_tables([synthetic(50, seed=9, offset=100 * k) for k in range(10)])

    def width(metrics: pa.Table, metric: str) -> float:
        row = next(
            r for r in metrics.to_pylist() if r["stratum"] == "overall" and r["metric"] == metric
        )
        return row["ci_high"] - row["ci_low"]

    small_metrics = compute_metrics(small, bootstrap=400, seed=0)
    large_metrics = compute_metrics(large, bootstrap=400, seed=0)
    for metric in ("acc_at1", "strict_chain_acc_at1", "final_turn_acc_at1"):
        assert values(small_metrics)[("overall", metric)] == pytest.approx(
            values(large_metrics)[("overall", metric)]
        )
        assert width(large_metrics, metric) < 0.6 * width(small_metrics, metric)


def test_all_correct_gives_one_with_degenerate_ci() -> None:
    rows = [
        turn(f"c{c}", "carryover" if c % 2 else "narrative", 2 + c % 3, i, ok1=True, tok=(1, 1, 1))
        for c in range(12)
        for i in range(1, 2 + c % 3)
    ]
    metrics = compute_metrics(table(rows), bootstrap=200, seed=0)
    for row in metrics.to_pylist():
        if row["metric"] in ("acc_at1", "acc_atk", "strict_chain_acc_at1", "final_turn_acc_at1"):
            assert (row["value"], row["ci_low"], row["ci_high"]) == (1.0, 1.0, 1.0)
        if row["metric"] in ("avg_chain_turn_acc_at1", "token_f1_micro_top1"):
            assert (row["value"], row["ci_low"], row["ci_high"]) == (1.0, 1.0, 1.0)
    assert ("overall", "drift_rate_given_error_at1") not in values(metrics)


def test_no_bootstrap_no_intervals(golden: pa.Table) -> None:
    metrics = compute_metrics(table(golden_rows()), bootstrap=0)
    assert metrics.column("ci_low").null_count == metrics.num_rows
    assert metrics.column("value").equals(golden.column("value"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"drift_eligible": False, "present_available": False}, "drift-eligible"),
        ({"is_final": True}, "is_final"),
        ({"turn_index": 5}, "turn_index"),
        ({"tok_tp": 3}, "tok_tp"),
        ({"correct_atk": False, "correct_at1": True, "drift_at1": False}, "correct@k"),
    ],
)
def test_contract_violations_raise(change: dict, message: str) -> None:
    rows = golden_rows()
    rows[3] = {**rows[3], **change}
    with pytest.raises(ValueError, match=message):
        compute_metrics(table(rows), bootstrap=0)


def test_duplicate_turn_and_inconsistent_family_raise() -> None:
    rows = golden_rows()
    with pytest.raises(ValueError, match="repeat"):
        compute_metrics(table([*rows, rows[0]]), bootstrap=0)
    rows[4] = {**rows[4], "family": "other"}
    with pytest.raises(ValueError, match="family"):
        compute_metrics(table(rows), bootstrap=0)


def test_empty_input_gives_empty_table() -> None:
    metrics = compute_metrics(table([]), bootstrap=10)
    assert metrics.num_rows == 0 and metrics.schema == METRICS_SCHEMA


def doctor(metrics: pa.Table, stratum: str, metric: str, **changes: float | None) -> pa.Table:
    rows = metrics.to_pylist()
    for row in rows:
        if row["stratum"] == stratum and row["metric"] == metric:
            row.update(changes)
    return pa.Table.from_pylist(rows, schema=metrics.schema)


def test_consistency_catches_doctored_tables(golden: pa.Table) -> None:
    assert consistency_problems(golden) == []
    problems = consistency_problems(doctor(golden, "overall", "acc_at1", value=0.9, ci_high=0.95))
    assert any("acc_at1" in p and "family strata" in p for p in problems)
    assert any("acc_at1" in p and "followup_pos strata" in p for p in problems)
    problems = consistency_problems(doctor(golden, "length=2", "acc_atk", value=1.5))
    assert any("outside [0, 1]" in p for p in problems)
    problems = consistency_problems(doctor(golden, "family=narrative", "acc_at1", ci_low=0.45))
    assert any("does not contain" in p for p in problems)
    lowered = doctor(golden, "family=narrative", "acc_at1", value=0.39, ci_low=0.0)
    assert any("weighted mean" in p for p in consistency_problems(lowered))
    extra = pa.concat_tables(
        [
            golden,
            pa.Table.from_pylist(
                [
                    {
                        "stratum": "followup_pos=1",
                        "metric": "strict_chain_acc_at1",
                        "value": 0.0,
                        "ci_low": None,
                        "ci_high": None,
                        "n_turns": 4,
                        "n_chains": 4,
                        "denominator": 4,
                    }
                ],
                schema=METRICS_SCHEMA,
            ),
        ]
    )
    assert any("follow-up position" in p for p in consistency_problems(extra))


def test_consistency_groups_by_model_and_setting(golden: pa.Table) -> None:
    both = pa.concat_tables(
        [
            golden.append_column("setting", pa.array(["gold_context"] * golden.num_rows)),
            doctor(golden, "overall", "n_turns", value=8.0).append_column(
                "setting", pa.array(["self_conditioned"] * golden.num_rows)
            ),
        ]
    )
    problems = consistency_problems(both)
    assert problems and all(p.startswith("setting=self_conditioned: ") for p in problems)


def test_reference_json(golden: pa.Table) -> None:
    result = reference_results_json(
        {"gold_context": golden, "self_conditioned": golden, "questions_only": golden},
        model="oracle",
        data="chains.parquet",
        seed=42,
        sampled_chains_gold_qonly=4,
        sampled_chains_self=4,
        args={"match_mode": "relaxed"},
        runtime_seconds=1.5,
    )
    json.dumps(result, allow_nan=False)
    assert list(result) == [
        "model",
        "data",
        "seed",
        "sampled_chains_gold_qonly",
        "sampled_chains_self",
        "args",
        "results",
        "examples",
        "runtime_seconds",
    ]
    assert list(result["results"]) == ["gold", "questions_only", "self"]
    gold = result["results"]["gold"]
    assert list(gold) == ["overall", "by_family", "by_length", "by_followup_pos", "examples"]
    assert list(result["results"]["self"])[-1] == "bad_samples"
    assert list(gold["by_family"]) == ["carryover", "narrative"]
    assert list(gold["by_length"]) == ["2", "3", "4"]
    assert list(gold["by_followup_pos"]) == ["1", "2", "3"]
    for m in [gold["overall"], *gold["by_length"].values(), *gold["by_followup_pos"].values()]:
        assert list(m) == list(REFERENCE_METRICS), "the reference's keys, no headline"
        assert isinstance(m["n_chains"], int) and isinstance(m["n_turns"], int)
    assert gold["overall"]["acc_at1"] == pytest.approx(3 / 7)
    assert gold["overall"]["n_turns"] == 7
    pos3 = gold["by_followup_pos"]["3"]
    assert pos3["strict_chain_acc_at1"] == 0.0 and pos3["drift_rate_given_present_at1"] == 0.0
    assert pos3["n_chains"] == 1 and pos3["acc_at1"] == 1.0
    with pytest.raises(ValueError, match="unknown settings"):
        reference_results_json(
            {"gold": golden},
            model="m",
            data="d",
            seed=0,
            sampled_chains_gold_qonly=0,
            sampled_chains_self=0,
            args={},
            runtime_seconds=0.0,
        )


def test_thousand_resamples_over_fifty_thousand_chains() -> None:
    metrics = compute_metrics(synthetic(50_000, seed=3), bootstrap=1000, seed=0)
    assert consistency_problems(metrics) == []
    acc = next(
        r for r in metrics.to_pylist() if r["stratum"] == "overall" and r["metric"] == "acc_at1"
    )
    assert acc["n_chains"] == 50_000 and acc["ci_high"] - acc["ci_low"] < 0.02


def reference_mode_rows() -> list[dict]:
    return [
        turn("c1", "carryover", 2, 1, ok1=True, present=True, tok=(1, 1, 1), ch=(3, 3, 3)),
        # A present value inside the gold set: not drift-eligible, but the reference drifts it.
        turn("c2", "carryover", 2, 1, present=True, drift1=True, tok=(0, 1, 4), ch=(0, 3, 10)),
        turn(
            "c3",
            "narrative",
            3,
            1,
            okk=True,
            eligible=True,
            drift1=True,
            driftk=False,
            tok=(0, 0, 2),
            ch=(0, 0, 4),
        ),
        turn("c3", "narrative", 3, 2, tok=(0, 0, 2), ch=(1, 5, 4)),
    ]


def test_reference_mode_drift_and_f1_are_the_authors() -> None:
    """Expected values obtained by running the authors' evaluator (hf_scope_benchmark.py:
    new_bucket, its per-turn bucket accounting, finalize) on these four turns; compared exactly,
    so the F1 (2PR/(P+R): 0.1818181818181818, where 2tp/(pred+gold) gives ...82) and every
    printed 6-decimal value agree."""
    expected = {
        "acc_at1": 0.25,
        "acc_atk": 0.5,
        "token_f1_micro_top1": 0.1818181818181818,
        "char3_f1_micro_top1": 0.25,
        "present_available_rate": 0.75,
        "drift_rate_given_present_at1": 0.6666666666666666,
        "drift_rate_given_present_atk": 0.3333333333333333,
        "drift_rate_given_error_at1": 0.6666666666666666,
    }
    scored = table(reference_mode_rows())
    got = values(compute_metrics(scored, bootstrap=50, mode="reference"))
    assert {metric: got[("overall", metric)] for metric in expected} == expected
    tagged = scored.replace_schema_metadata({MODE_METADATA_KEY: b"reference"})
    assert compute_metrics(tagged, bootstrap=0).equals(
        compute_metrics(scored, bootstrap=0, mode="reference")
    )
    with pytest.raises(ValueError, match="drift-eligible"):
        compute_metrics(scored, bootstrap=0)
    eligible_only = [row for row in reference_mode_rows() if row["chain_id"] != "c2"]
    relaxed = values(compute_metrics(table(eligible_only), bootstrap=0))
    assert relaxed[("overall", "drift_rate_given_present_at1")] == 1.0  # 1 of 1 eligible
    assert relaxed[("overall", "token_f1_micro_top1")] == 2 * 1 / (1 + 5)


def test_reference_mode_drift_needs_a_present_value() -> None:
    rows = reference_mode_rows()
    rows[1] = {**rows[1], "present_available": False}
    with pytest.raises(ValueError, match="drift without a present value"):
        compute_metrics(table(rows), bootstrap=0, mode="reference")
    with pytest.raises(ValueError, match="match mode"):
        compute_metrics(table(rows), bootstrap=0, mode="semantic")
