"""Scope loss against the explicit-scope control, and the reference systems that prove it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from chronoscope_dagster.evaluation.inference import (
    NO_EXPLICIT_QUESTION,
    EvalChain,
    predict,
)
from chronoscope_dagster.evaluation.knowledge import (
    knowledge_metrics,
    overall_values,
    reference_knowledge_problems,
)
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, SYSTEM_PROMPT, Setting
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.llm.registry import parse_entry

# Per chain: explicit first turn, then implicit turns; present-day values that differ from
# the gold (drift-eligible), equal it (not eligible) or are absent (not eligible).
CHAINS = [
    EvalChain(
        "c1",
        ("In 2010, who was the UK PM?", "And in 2019?", "And who led the opposition?"),
        ("Gordon Brown", "Theresa May", "Jeremy Corbyn"),
        ("Keir Starmer", "Keir Starmer", "Kemi Badenoch"),
        (True, False, False),
        ("Who was UK PM in 2010?", "Who was UK PM in 2019?", "Who led the opposition in 2019?"),
    ),
    EvalChain(
        "c2",
        ("In 2005, who led Germany?", "And in 2021?", "And in 2024?"),
        ("Gerhard Schröder", "Angela Merkel", "Olaf Scholz"),
        ("Friedrich Merz", "", "Olaf Scholz"),
        (True, False, False),
        ("Who led Germany in 2005?", "Who led Germany in 2021?", "Who led Germany in 2024?"),
    ),
]
ELIGIBLE = {("c1", 1), ("c1", 2)}


def reference(name: str):
    return parse_entry({"name": name, "backend": name}).build()


def scored(chains: list[EvalChain], backend: str, setting: Setting) -> pa.Table:
    """The scored turns of a reference system's predictions, in the shape metrics read."""
    predictions = predict(chains, setting, CachedChat(reference(backend), None), Decoding())
    by_chain = {c.chain_id: c for c in chains}
    rows = []
    for p in (p for p in predictions if p.scored):
        chain = by_chain[p.chain_id]
        present = chain.present_day[p.turn_index]
        rows.append(
            {
                "chain_id": p.chain_id,
                "turn_index": p.turn_index,
                "family": "scope_switch",
                "is_explicit": chain.explicit[p.turn_index],
                "prediction": p.completion.text,
                "candidates": list(p.completion.candidates),
                "answer": chain.answers[p.turn_index],
                "gold_labels": [chain.answers[p.turn_index]],
                "gold_aliases": [],
                "present_labels": [present] if present else [],
                "drift_eligible": (p.chain_id, p.turn_index) in ELIGIBLE,
                "answer_kind": "entity",
                "rival_labels": [],
            }
        )
    return score_turns(pa.Table.from_pylist(rows))


def test_explicit_scope_asks_each_scored_turn_alone_as_its_explicit_question():
    class Spy:
        cacheable = False

        def __init__(self):
            self.inner, self.requests = reference("scope_blind"), []

        def identity(self):
            return self.inner.identity()

        def complete(self, requests, decoding):
            self.requests += requests
            return self.inner.complete(requests, decoding)

        def close(self):
            pass

    spy = Spy()
    predict(CHAINS, Setting.EXPLICIT_SCOPE, CachedChat(spy, None), Decoding())
    assert [r.messages for r in spy.requests] == [
        (("system", SYSTEM_PROMPT), ("user", chain.explicit_questions[turn]))
        for chain in CHAINS
        for turn in (1, 2)
    ]
    assert all(r.states_scope for r in spy.requests)


def test_a_turn_without_explicit_question_is_an_error_row_never_sent():
    chain = EvalChain("c9", ("Q0?", "Q1?"), ("a", "b"), ("", ""), (True, False), ("Q0?", None))
    (prediction,) = predict(
        [chain], Setting.EXPLICIT_SCOPE, CachedChat(reference("oracle"), None), Decoding()
    )
    assert prediction.completion.error == NO_EXPLICIT_QUESTION and prediction.scored


@pytest.mark.parametrize("setting", PAPER_SETTINGS)
def test_scope_blind_knows_everything_alone_and_loses_every_eligible_implicit_turn(setting):
    explicit = scored(CHAINS, "scope_blind", Setting.EXPLICIT_SCOPE)
    assert explicit.column("correct_at1").to_pylist() == [True] * 4
    knowledge = knowledge_metrics(scored(CHAINS, "scope_blind", setting), explicit, bootstrap=50)
    values = overall_values(knowledge)
    # Implicit turns: c1/1, c1/2 eligible (answered today's value: lost, drifted); c2/1 no
    # present value (abstains: lost); c2/2 present equals gold (right).
    assert values == {
        "known_rate_at1": 1.0,
        "scope_loss_rate_at1": 0.75,
        "scope_loss_rate_eligible_at1": 1.0,
        "drift_given_known_at1": 1.0,
    }
    assert reference_knowledge_problems("scope_blind", knowledge) == []
    assert reference_knowledge_problems("oracle", knowledge) == [
        "scope_loss_rate_at1 = 0.75, not 0.0",
        "drift_given_known_at1 = 1.0, not 0.0",
    ]


@pytest.mark.parametrize("setting", PAPER_SETTINGS)
def test_the_oracle_loses_nothing(setting):
    knowledge = knowledge_metrics(
        scored(CHAINS, "oracle", setting), scored(CHAINS, "oracle", Setting.EXPLICIT_SCOPE)
    )
    assert overall_values(knowledge) == {
        "known_rate_at1": 1.0,
        "scope_loss_rate_at1": 0.0,
        "scope_loss_rate_eligible_at1": 0.0,
        "drift_given_known_at1": 0.0,
    }
    assert reference_knowledge_problems("oracle", knowledge) == []


def test_copy_previous_has_nothing_to_copy_alone():
    explicit = scored(CHAINS, "copy_previous", Setting.EXPLICIT_SCOPE)
    assert explicit.column("prediction").to_pylist() == [""] * 4


def synthetic(n: int, flags) -> pa.Table:
    """One scored implicit turn per chain, its flags from ``flags(chain)``."""
    rows = []
    for c in range(n):
        correct, eligible, drift = flags(c)
        rows.append(
            {"chain_id": f"c{c:03d}", "turn_index": 1, "family": "f" if c % 2 else "g",
             "is_explicit": False, "drift_eligible": eligible, "correct_at1": correct,
             "drift_at1": drift}
        )  # fmt: skip
    return pa.Table.from_pylist(rows)


def test_known_values_on_synthetic_predictions():
    # Known alone on chains 0..79; in conversation right on 0..39 only; eligible on even
    # chains; drifted on eligible wrong chains 40..59.
    explicit = synthetic(100, lambda c: (c < 80, c % 2 == 0, False))
    in_setting = synthetic(100, lambda c: (c < 40, c % 2 == 0, c % 2 == 0 and 40 <= c < 60)).slice(
        0, 90
    )
    rows = {
        (r["stratum"], r["metric"]): r
        for r in knowledge_metrics(in_setting, explicit, bootstrap=500, seed=1).to_pylist()
    }
    overall = {m: r for (s, m), r in rows.items() if s == "overall"}
    assert overall["known_rate_at1"]["value"] == pytest.approx(80 / 90)
    assert overall["scope_loss_rate_at1"]["value"] == pytest.approx(40 / 80)
    assert overall["scope_loss_rate_eligible_at1"]["value"] == pytest.approx(20 / 40)
    assert overall["drift_given_known_at1"]["value"] == pytest.approx(10 / 40)
    assert overall["drift_given_known_at1"]["denominator"] == 40
    for row in overall.values():
        assert row["ci_low"] < row["value"] < row["ci_high"]
        assert row["n_chains"] == 90 and row["turns_left_out"] == 0
    assert rows[("family=g", "drift_given_known_at1")]["value"] == pytest.approx(10 / 40)
    assert ("family=f", "drift_given_known_at1") not in rows
    missing = knowledge_metrics(
        synthetic(100, lambda c: (True, False, False)), explicit.slice(0, 60)
    )
    assert missing.column("turns_left_out").to_pylist()[0] == 40
