"""Carryover: turn 2 asks the complement property of the same subject at turn 1's scope."""

from __future__ import annotations

import re

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import carryover
from chronoscope_dagster.chains.families.common import COMPLEMENTS
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Ruritania", "Q2": "Zenda", "Q3": "Graustark", "Q10": "Rudolf", "Q11": "Flavia",
         "Q12": "Fritz", "Q20": "Michael", "Q21": "Rupert", "Q22": "Sapt", "Q30": "Strelsau", "Q31": "Elphberg"}  # fmt: skip


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(carryover.generate(sample_facts, default_templates(), 0))


def small_facts(rows: list[tuple[str | None, str, str, list[str]]]) -> SnapshotFacts:
    return facts_from_rows(rows, NAMES)


def test_family_holds_dated_chains_of_complement_pairs_that_test_the_year(chains, sample_facts):
    assert len(chains) >= 40
    drifting = 0
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "carryover" and chain.length == 2
        assert first.subject_qid == second.subject_qid
        assert second.pid == COMPLEMENTS[first.pid] != first.pid
        assert first.scope_anchor == second.scope_anchor == chain.anchor
        assert len(chain.anchor) == 4
        assert sample_facts.scope_sensitive(second.subject_qid, second.pid, second.scope_anchor)
        assert second.scope_dependent
        if sample_facts.present.get((second.subject_qid, second.pid)):
            assert second.drift_eligible  # with a value today, sensitive means drift-eligible
        drifting += second.drift_eligible
        assert not set(first.gold_qids) & set(second.gold_qids)
        assert first.question != second.question
        assert all(turn.question.endswith("?") for turn in chain.turns)
    assert drifting >= 0.5 * len(chains)


def test_every_gold_is_the_truth_at_the_first_turns_scope(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns:
            gold = sample_facts.gold(turn.subject_qid, turn.pid, turn.scope_anchor)
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical


def test_turn_one_states_the_year_and_turn_two_is_implicit(chains):
    templates = default_templates()
    for chain in chains:
        first, second = chain.turns
        assert first.is_explicit and first.subject_label in first.question
        if first.scope_anchor is None:
            assert DIGIT.search(first.question.replace(first.subject_label, "")) is None
        else:
            assert str(first.scope_year) in first.question
        assert not second.is_explicit
        assert DIGIT.search(second.question) is None
        assert first.subject_label.casefold() not in second.question.casefold()
        assert second.question in templates.phrasings(second.pid, "followup")


def test_small_facts_give_the_exact_chains():
    facts = small_facts(
        [
            ("2000", "Q1", "P6", ["Q10"]), ("2001", "Q1", "P6", ["Q11", "Q10"]),
            ("2001", "Q1", "P35", ["Q20"]), ("2002", "Q1", "P35", ["Q21"]),
            (None, "Q2", "P131", ["Q30"]), (None, "Q2", "P17", ["Q31"]),
            ("2001", "Q3", "P6", ["Q10"]), (None, "Q3", "P35", ["Q20"]),
        ]
    )  # fmt: skip
    chains = list(carryover.generate(facts, default_templates(), 0))
    got = [
        [(t.subject_qid, t.pid, t.scope_anchor, t.gold_qids, t.is_explicit) for t in c.turns]
        for c in chains
    ]
    # P6's gold in 2001 is its latest year's: a follow-up on it is answered without the scope
    assert got == [
        [("Q1", "P6", "2001", ("Q11", "Q10"), True), ("Q1", "P35", "2001", ("Q20",), False)],
    ]
    assert facts.drops["scope_insensitive"] == 1
    templates = default_templates()
    first = chains[0].turns[0]
    assert first.question in {
        templates.render("P6", "explicit_year", i, subject="Ruritania", year=2001)
        for i in range(len(templates.phrasings("P6", "explicit_year")))
    }


def test_a_follow_up_that_holds_today_or_an_answer_of_the_subjects_kind_is_not_asked():
    rows = [
        ("2001", "Q1", "P6", ["Q10"]), ("2002", "Q1", "P6", ["Q11"]),
        ("2001", "Q1", "P35", ["Q20"]), ("2002", "Q1", "P35", ["Q21"]),
    ]  # fmt: skip
    today = facts_from_rows(
        rows, NAMES, present={("Q1", "P35"): ["Q20", "Q21"], ("Q1", "P6"): ["Q10", "Q11"]}
    )
    assert list(carryover.generate(today, default_templates(), 0)) == []
    assert today.drops["scope_insensitive"] == 2
    kinds = [*rows, *[(None, qid, "P31", ["Q40"]) for qid in ("Q1", "Q10", "Q11")]]
    ambiguous = facts_from_rows(kinds, {**NAMES, "Q40": "country"})
    chains = list(carryover.generate(ambiguous, default_templates(), 0))
    assert [c.turns[0].pid for c in chains] == ["P35"]
    assert ambiguous.drops["ambiguous_reference"] >= 1


def test_turn_two_never_answers_what_turn_one_did():
    """In 2001 Rudolf headed both state and government: turn 2 would copy turn 1, so only
    2000 and 2002 are asked (2003, the latest year, is answered without the scope)."""
    rows = [
        ("2000", "Q1", "P6", ["Q10"]), ("2001", "Q1", "P6", ["Q10"]), ("2002", "Q1", "P6", ["Q11"]),
        ("2000", "Q1", "P35", ["Q20"]), ("2001", "Q1", "P35", ["Q10"]),
        ("2002", "Q1", "P35", ["Q21"]), ("2003", "Q1", "P6", ["Q12"]),
        ("2003", "Q1", "P35", ["Q22"]),
    ]  # fmt: skip
    years = set()
    for seed in range(20):
        for chain in carryover.generate(small_facts(rows), default_templates(), seed):
            first, second = chain.turns
            assert not set(first.gold_qids) & set(second.gold_qids)
            years.add(chain.anchor)
    assert years == {"2000", "2002"}
