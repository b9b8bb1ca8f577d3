"""Carryover-then: dated carryover chains whose follow-up says "then" / "at the time"."""

from __future__ import annotations

import re

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import carryover, carryover_then
from chronoscope_dagster.chains.families.common import COMPLEMENTS
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Ruritania", "Q2": "Zenda", "Q10": "Rudolf", "Q11": "Flavia", "Q20": "Michael",
         "Q30": "Strelsau", "Q31": "Elphberg"}  # fmt: skip


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(carryover_then.generate(sample_facts, default_templates(), 0))


def small_facts(rows: list[tuple[str | None, str, str, list[str]]]) -> SnapshotFacts:
    return facts_from_rows(rows, NAMES)


def test_family_holds_dated_complement_pairs_at_one_year(chains, sample_facts):
    assert len(chains) >= 40
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "carryover_then" and chain.length == 2
        assert first.subject_qid == second.subject_qid
        assert second.pid == COMPLEMENTS[first.pid] != first.pid
        assert len(first.scope_anchor) == 4 and first.scope_anchor == second.scope_anchor
        assert chain.anchor == first.scope_anchor
        for turn in chain.turns:
            gold = sample_facts.year_golds(turn.subject_qid, turn.pid)[turn.scope_year]
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical


def test_turn_one_states_the_year_and_turn_two_refers_back_without_one(chains):
    templates = default_templates()
    for chain in chains:
        first, second = chain.turns
        assert first.is_explicit and str(first.scope_year) in first.question
        assert first.subject_label in first.question
        assert not second.is_explicit and DIGIT.search(second.question) is None
        assert first.subject_label.casefold() not in second.question.casefold()
        assert second.question in templates.phrasings(second.pid, "followup_then")
        assert second.question.endswith("?") and first.question != second.question


def test_same_pairs_as_dated_carryover(chains, sample_facts):
    dated = {
        (c.turns[0].subject_qid, c.turns[0].pid)
        for c in carryover.generate(sample_facts, default_templates(), 0)
    }
    assert {(c.turns[0].subject_qid, c.turns[0].pid) for c in chains} == dated


def test_small_facts_give_the_exact_chains_and_skip_timeless_pairs():
    facts = small_facts(
        [
            ("2000", "Q1", "P6", ["Q10"]), ("2001", "Q1", "P6", ["Q11"]),
            ("2001", "Q1", "P35", ["Q20"]), ("2002", "Q1", "P35", ["Q21"]),
            (None, "Q2", "P131", ["Q30"]), (None, "Q2", "P17", ["Q31"]),
        ]
    )  # fmt: skip
    chains = list(carryover_then.generate(facts, default_templates(), 0))
    assert [
        [(t.subject_qid, t.pid, t.scope_anchor, t.gold_qids, t.is_explicit) for t in c.turns]
        for c in chains
    ] == [
        [("Q1", "P6", "2001", ("Q11",), True), ("Q1", "P35", "2001", ("Q20",), False)],
    ]  # P6's 2001 gold is its latest year's: answered without the scope, never a follow-up
    assert [c.turns[1].answer for c in chains] == ["Michael"]
