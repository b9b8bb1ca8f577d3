"""The headline scope_acc_at1 on the reference systems: the oracle scores 1, present_day and
scope_blind 0 wherever the metric exists, whatever else they get right."""

from __future__ import annotations

import pyarrow as pa
import pytest

from chronoscope_dagster.evaluation.inference import EvalChain, predict
from chronoscope_dagster.evaluation.metrics import compute_metrics
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting
from chronoscope_dagster.evaluation.reference_systems import (
    expected_scope_acc,
    scope_acc_problems,
)
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.llm.registry import parse_entry

# Explicit first turns; then implicit turns whose gold is not today's value (c1/1, c3/1), with
# no value today (c2/1), or today's value too (c1/2, not scope-dependent); and an explicit
# scored turn (c2/2).
CHAINS = [
    EvalChain(
        "c1",
        ("In 2010, who was the UK PM?", "And who led the opposition?", "And the capital?"),
        ("Gordon Brown", "David Cameron", "London"),
        ("Keir Starmer", "Kemi Badenoch", "London"),
        (True, False, False),
        ("Who was UK PM in 2010?", "Who led the UK opposition in 2010?", "UK capital in 2010?"),
    ),
    EvalChain(
        "c2",
        ("In 2005, who led Germany?", "And who was its president?", "In 2021, who led Germany?"),
        ("Gerhard Schröder", "Horst Köhler", "Angela Merkel"),
        ("Friedrich Merz", "", "Friedrich Merz"),
        (True, False, True),
        ("Who led Germany in 2005?", "Who was German president in 2005?", "Who led it in 2021?"),
    ),
    EvalChain(
        "c3",
        ("In 2019, who was the UK PM?", "And in the year after?"),
        ("Theresa May", "Boris Johnson"),
        ("Keir Starmer", "Keir Starmer"),
        (True, False),
        ("Who was UK PM in 2019?", "Who was UK PM in 2020?"),
    ),
]
FAMILY = {"c1": "carryover", "c2": "scope_switch", "c3": "carryover"}
SCOPE_DEPENDENT = {("c1", 1), ("c2", 1), ("c3", 1)}


def scored(backend: str, setting: Setting) -> pa.Table:
    """A reference system's scored turns, every column the metrics read, built by hand."""
    system = parse_entry({"name": backend, "backend": backend}).build()
    predictions = predict(CHAINS, setting, CachedChat(system, None), Decoding())
    by_chain = {chain.chain_id: chain for chain in CHAINS}
    rows = []
    for p in (p for p in predictions if p.scored):
        chain, turn = by_chain[p.chain_id], p.turn_index
        gold, present = chain.answers[turn], chain.present_day[turn]
        rows.append(
            {
                "chain_id": p.chain_id,
                "family": FAMILY[p.chain_id],
                "chain_length": len(chain.questions),
                "turn_index": turn,
                "followup_pos": turn,
                "is_final": turn == len(chain.questions) - 1,
                "prediction": p.completion.text,
                "candidates": list(p.completion.candidates),
                "answer": gold,
                "gold_labels": [gold],
                "gold_aliases": [],
                "present_labels": [present] if present else [],
                "drift_eligible": bool(present) and present != gold,
                "present_available": bool(present),
                "answer_kind": "entity",
                "rival_labels": [],
                "scope_dependent": (p.chain_id, turn) in SCOPE_DEPENDENT,
                "error": p.completion.error is not None,
            }
        )
    return score_turns(pa.Table.from_pylist(rows))


def metrics(backend: str, setting: Setting) -> pa.Table:
    return compute_metrics(scored(backend, setting), bootstrap=200, seed=0)


def scope_rows(table: pa.Table) -> dict[str, dict]:
    return {r["stratum"]: r for r in table.to_pylist() if r["metric"] == "scope_acc_at1"}


@pytest.mark.parametrize("setting", list(Setting))
@pytest.mark.parametrize("backend", ["oracle", "present_day", "scope_blind"])
def test_reference_systems_score_their_headline_in_every_stratum(backend, setting):
    table = metrics(backend, setting)
    rows = scope_rows(table)
    expected = {"oracle": 1.0, "present_day": 0.0, "scope_blind": 0.0}[backend]
    if backend == "scope_blind" and setting is Setting.EXPLICIT_SCOPE:
        expected = 1.0  # every turn asked with its scope stated
    assert expected_scope_acc(backend, setting) == expected
    assert set(rows) == {
        "overall",
        "family=carryover",
        "family=scope_switch",
        "length=2",
        "length=3",
        "followup_pos=1",
    }, "no scope-dependent turn at follow-up position 2: no row there"
    assert rows["overall"]["denominator"] == 3
    for row in rows.values():
        assert (row["value"], row["ci_low"], row["ci_high"]) == (expected,) * 3
    assert scope_acc_problems(backend, setting, table) == []


@pytest.mark.parametrize("setting", PAPER_SETTINGS)
def test_the_papers_accuracy_rewards_what_the_headline_does_not(setting):
    """scope_blind and present_day are right on the turns that state their scope or whose gold
    holds today (c1/2, and scope_blind on c2/2): the paper's Acc@1 credits them, the headline
    does not."""
    overall = {
        backend: {
            r["metric"]: r["value"] for r in metrics(backend, setting).to_pylist()
            if r["stratum"] == "overall"
        }
        for backend in ("scope_blind", "present_day")
    }  # fmt: skip
    assert overall["scope_blind"]["acc_at1"] == pytest.approx(2 / 5)
    assert overall["present_day"]["acc_at1"] == pytest.approx(1 / 5)
    assert overall["scope_blind"]["scope_acc_at1"] == overall["present_day"]["scope_acc_at1"] == 0


def test_a_reference_system_off_its_headline_is_a_problem():
    oracle = metrics("oracle", Setting.GOLD_CONTEXT)
    problems = scope_acc_problems("scope_blind", Setting.GOLD_CONTEXT, oracle)
    assert "overall scope_acc_at1 = 1.0, not 0.0 (n=3)" in problems
    assert len(problems) == len(scope_rows(oracle)) == 6
    blind = metrics("scope_blind", Setting.QUESTIONS_ONLY)
    assert scope_acc_problems("oracle", Setting.QUESTIONS_ONLY, blind)
    assert scope_acc_problems("scope_blind", Setting.EXPLICIT_SCOPE, blind)
    assert scope_acc_problems("present_day", Setting.EXPLICIT_SCOPE, oracle)
    variant = oracle.append_column("variant", pa.array(["paraphrased"] * oracle.num_rows))
    assert scope_acc_problems("present_day", Setting.GOLD_CONTEXT, variant)[0].startswith(
        "paraphrased overall"
    )


def test_other_systems_have_no_fixed_headline():
    assert expected_scope_acc("copy_previous", Setting.GOLD_CONTEXT) is None
    assert expected_scope_acc("local", Setting.EXPLICIT_SCOPE) is None
    blind = metrics("scope_blind", Setting.GOLD_CONTEXT)
    assert scope_acc_problems("copy_previous", Setting.GOLD_CONTEXT, blind) == []
