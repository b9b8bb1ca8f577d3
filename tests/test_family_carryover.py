"""Carryover: turn 2 asks the complement property of the same subject at turn 1's scope."""

from __future__ import annotations

import re

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import carryover
from chronoscope_dagster.chains.families.carryover import COMPLEMENTS
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Ruritania", "Q2": "Zenda", "Q3": "Graustark", "Q10": "Rudolf", "Q11": "Flavia",
         "Q20": "Michael", "Q21": "Rupert", "Q30": "Strelsau", "Q31": "Elphberg"}  # fmt: skip


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(carryover.generate(sample_facts, default_templates(), 0))


def small_facts(rows: list[tuple[str | None, str, str, list[str]]]) -> SnapshotFacts:
    return facts_from_rows(rows, NAMES)


def test_family_holds_dated_and_timeless_chains_of_complement_pairs(chains):
    dated = [c for c in chains if c.turns[0].scope_anchor is not None]
    timeless = [c for c in chains if c.turns[0].scope_anchor is None]
    assert len(dated) >= 100 and len(timeless) >= 50
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "carryover" and chain.length == 2
        assert first.subject_qid == second.subject_qid
        assert second.pid == COMPLEMENTS[first.pid] != first.pid
        assert first.scope_anchor == second.scope_anchor
        assert chain.anchor == (first.scope_anchor or "timeless")
        assert first.question != second.question
        assert all(turn.question.endswith("?") for turn in chain.turns)


def test_every_gold_is_the_truth_at_the_first_turns_scope(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns:
            gold = sample_facts.golds[(turn.subject_qid, turn.pid)][turn.scope_anchor]
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical
        first, second = chain.turns
        if first.scope_anchor is None:
            assert sample_facts.is_timeless(first.subject_qid, first.pid)
            assert sample_facts.is_timeless(second.subject_qid, second.pid)
        else:
            assert len(first.scope_anchor) == 4


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
    assert got == [
        [("Q1", "P6", "2001", ("Q11", "Q10"), True), ("Q1", "P35", "2001", ("Q20",), False)],
        [("Q1", "P35", "2001", ("Q20",), True), ("Q1", "P6", "2001", ("Q11", "Q10"), False)],
        [("Q2", "P17", None, ("Q31",), True), ("Q2", "P131", None, ("Q30",), False)],
        [("Q2", "P131", None, ("Q30",), True), ("Q2", "P17", None, ("Q31",), False)],
    ]
    templates = default_templates()
    first = chains[0].turns[0]
    assert first.question in {
        templates.render("P6", "explicit_year", i, subject="Ruritania", year=2001)
        for i in range(len(templates.phrasings("P6", "explicit_year")))
    }
    assert chains[2].turns[0].question in {
        templates.render("P17", "timeless", i, subject="Zenda")
        for i in range(len(templates.phrasings("P17", "timeless")))
    }
