"""Bridged multi-pid: properties of the previous answers, or of the subject again, at the first
turn's year, joined by QID."""

from __future__ import annotations

import re

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import bridged_multi_pid
from chronoscope_dagster.chains.families.bridged_multi_pid import BRIDGES
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

DIGIT = re.compile(r"\d")
LABELS = {
    "Q1": ("Ada", None),
    "Q2": ("Acme", "maker of anvils"),
    "Q7": ("Acme", "bakery"),
    "Q3": ("Bob", None),
    "Q5": ("Dan", None),
    "Q8": ("Carol", None),
    "Q9": ("Anvil Party", None),
    "Q10": ("mayor of Anvilton", None),
    "Q11": ("governor of Anvilshire", None),
    "Q12": ("Hammer League", None),
}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(bridged_multi_pid.generate(sample_facts, default_templates(), 7))


PRESENT = {("Q2", "P169"): ["Q5"], ("Q1", "P39"): ["Q11"], ("Q1", "P102"): ["Q12"]}


def small_facts(
    rows: list[tuple[str, str, int, list[str]]], present: dict | None = None
) -> SnapshotFacts:
    return facts_from_rows(
        [(str(y), s, p, v) for s, p, y, v in rows], LABELS, present={**PRESENT, **(present or {})}
    )


def test_each_turn_asks_about_a_single_earlier_answer_or_the_subject_at_one_year(
    chains, sample_facts
):
    assert chains
    assert {chain.length for chain in chains} == {4}
    for chain in chains:
        first, *later = chain.turns
        year = first.scope_year
        assert chain.family == "bridged_multi_pid" and chain.anchor == str(year)
        assert first.is_explicit and str(year) in first.question
        assert first.subject_label in first.question and 1950 <= year <= 2025
        truth = sample_facts.year_golds(first.subject_qid, first.pid)[year]
        assert first.gold_qids == truth.qids == (truth.canonical,)
        asked_of_subject = {first.pid}
        for index, turn in enumerate(later):
            assert not turn.is_explicit and turn.scope_anchor == str(year)
            assert not sample_facts.is_timeless(turn.subject_qid, turn.pid)
            assert turn.scope_dependent
            if turn.subject_qid == first.subject_qid:
                assert turn.pid not in asked_of_subject and first.subject_label in turn.question
                asked_of_subject.add(turn.pid)
            else:
                assert any(
                    asked.gold_qids == (turn.subject_qid,) and turn.pid in BRIDGES[asked.pid]
                    for asked in chain.turns[: index + 1]
                )
                assert sample_facts.subject_name(turn.subject_qid) in turn.question
            gold = sample_facts.gold(turn.subject_qid, turn.pid, str(year))
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical
            earlier = chain.turns[: index + 1]
            seen = {t.subject_qid for t in earlier} | {q for t in earlier for q in t.gold_qids}
            assert not set(turn.gold_qids) & seen
        assert len({turn.question for turn in chain.turns}) == chain.length
        assert sum(turn.drift_eligible for turn in later) >= 2


ROWS = [
    ("Q1", "P108", 2010, ["Q2"]),
    ("Q2", "P169", 2010, ["Q3"]),
    ("Q2", "P169", 2011, ["Q5"]),
    ("Q7", "P169", 2010, ["Q8"]),
    ("Q3", "P102", 2010, ["Q9"]),
    ("Q1", "P39", 2010, ["Q10"]),
    ("Q1", "P39", 2011, ["Q11"]),
    ("Q3", "P102", 2011, ["Q12"]),
    ("Q1", "P102", 2010, ["Q9"]),
    ("Q1", "P102", 2011, ["Q12"]),
]
"""Ada worked for Acme the anvil maker (another Acme is a bakery), whose CEO Bob belonged to
the Anvil Party; so did Ada, who held an office too. Today Ada is in the Hammer League and
governs Anvilshire, and Dan runs Acme."""


def chains_of_ada(rows, seed: int = 0, present: dict | None = None) -> list:
    chains = bridged_multi_pid.generate(small_facts(rows, present), default_templates(), seed)
    return [chain for chain in chains if chain.turns[0].subject_qid == "Q1"]


def test_hops_are_joined_by_qid_not_by_label_and_the_chain_returns_to_its_subject():
    """The return to Ada asks her office, not her party: its answer was Bob's."""
    templates = default_templates()
    hop = {
        templates.render("P169", "cross_entity", index, subject="Acme (maker of anvils)")
        for index in range(len(templates.phrasings("P169", "cross_entity")))
    }
    for seed in range(10):
        (chain,) = chains_of_ada(ROWS, seed)
        assert [(t.subject_qid, t.pid, t.scope_anchor, t.gold_qids) for t in chain.turns] == [
            ("Q1", "P108", "2010", ("Q2",)),
            ("Q2", "P169", "2010", ("Q3",)),
            ("Q3", "P102", "2010", ("Q9",)),
            ("Q1", "P39", "2010", ("Q10",)),
        ]
        assert chain.turns[1].answer == "Bob" and chain.turns[1].question in hop
        assert "Bob" in chain.turns[2].question and "Ada" in chain.turns[3].question
        assert all(turn.scope_dependent for turn in chain.turns[1:])


def test_a_hop_whose_answer_does_not_depend_on_the_year_is_not_asked():
    """Bob was always in the Anvil Party: after Acme's CEO the chain returns to Ada."""
    rows = [row for row in ROWS if row[:2] != ("Q3", "P102") or row[2] == 2010]
    for seed in range(10):
        chains = chains_of_ada(rows, seed)
        assert chains and all(
            all(turn.scope_dependent for turn in chain.turns[1:]) for chain in chains
        )
        assert not [turn for chain in chains for turn in chain.turns if turn.subject_qid == "Q3"]


def test_a_chain_that_cannot_reach_four_turns_or_has_an_ambiguous_bridge_is_not_made():
    short = small_facts(ROWS[:4])
    assert not [
        c
        for c in bridged_multi_pid.generate(short, default_templates(), 0)
        if c.turns[0].subject_qid == "Q1"
    ]
    assert short.drops["too_short"] >= 1
    assert not chains_of_ada([("Q1", "P108", 2010, ["Q2", "Q7"]), *ROWS[1:]])


def test_where_no_hop_or_return_is_left_the_chain_branches_from_an_earlier_answer():
    """Ada has nothing else to be asked and Bob's party has no bridge: the last turn asks who
    chaired Acme, named again, at the same year (its chair changed in 2011 and today's is not
    known: less telling than its CEO, it is not drawn second)."""
    rows = [row for row in ROWS if row[0] != "Q1" or row[1] == "P108"]
    rows += [("Q2", "P488", 2010, ["Q8"]), ("Q2", "P488", 2011, ["Q5"])]
    present = {("Q3", "P102"): ["Q12"]}
    for seed in range(10):
        (chain,) = chains_of_ada(rows, seed, present)
        assert [(t.subject_qid, t.pid, t.scope_anchor, t.gold_qids) for t in chain.turns] == [
            ("Q1", "P108", "2010", ("Q2",)),
            ("Q2", "P169", "2010", ("Q3",)),
            ("Q3", "P102", "2010", ("Q9",)),
            ("Q2", "P488", "2010", ("Q8",)),
        ]
        assert "Acme" in chain.turns[3].question and not DIGIT.search(chain.turns[3].question)
    assert not chains_of_ada([row for row in rows if row[1] != "P488"], 0, present)
