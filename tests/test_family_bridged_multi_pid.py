"""Bridged multi-pid: a property of the previous answer at the first turn's year, joined by QID."""

from __future__ import annotations

import re
from collections import Counter

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
}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(bridged_multi_pid.generate(sample_facts, default_templates(), 7))


def small_facts(rows: list[tuple[str, str, int, list[str]]]) -> SnapshotFacts:
    return facts_from_rows([(str(y), s, p, v) for s, p, y, v in rows], LABELS)


def test_each_hop_asks_about_the_single_previous_answer_at_the_same_year(chains, sample_facts):
    assert len(chains) >= 100
    assert set(Counter(chain.length for chain in chains)) == {2, 3}
    for chain in chains:
        first, *hops = chain.turns
        year = first.scope_year
        assert chain.family == "bridged_multi_pid" and chain.anchor == str(year)
        assert first.is_explicit and str(year) in first.question
        assert first.subject_label in first.question and 1950 <= year <= 2025
        truth = sample_facts.year_golds(first.subject_qid, first.pid)[year]
        assert first.gold_qids == truth.qids == (truth.canonical,)
        entities = [first.subject_qid]
        names = [first.subject_label]
        for previous, turn in zip(chain.turns, hops, strict=False):
            assert previous.gold_qids == (turn.subject_qid,)
            assert turn.pid in BRIDGES[previous.pid] and not turn.is_explicit
            assert turn.scope_anchor in (str(year), None)
            gold = sample_facts.gold(turn.subject_qid, turn.pid, str(year))
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical
            assert (turn.scope_anchor is None) == sample_facts.is_timeless(
                turn.subject_qid, turn.pid
            )
            entities.append(turn.subject_qid)
            names.append(turn.subject_label)
            assert not set(entities) & set(turn.gold_qids)
            assert not DIGIT.search(turn.question)
            assert not any(name in turn.question for name in names)
        assert len({turn.question for turn in chain.turns}) == chain.length


def test_the_bridge_is_joined_by_qid_not_by_label():
    facts = small_facts(
        [
            ("Q1", "P108", 2010, ["Q2"]),
            ("Q2", "P169", 2010, ["Q3"]),
            ("Q2", "P169", 2011, ["Q5"]),
            ("Q7", "P169", 2010, ["Q8"]),
            ("Q3", "P108", 2010, ["Q2"]),
        ]
    )
    (chain,) = bridged_multi_pid.generate(facts, default_templates(), 0)
    assert [(t.subject_qid, t.pid, t.scope_anchor, t.gold_qids) for t in chain.turns] == [
        ("Q1", "P108", "2010", ("Q2",)),
        ("Q2", "P169", "2010", ("Q3",)),
    ]
    assert chain.turns[0].answer == "Acme" and chain.turns[1].answer == "Bob"
    assert chain.turns[1].question in default_templates().phrasings("P169", "about_previous")


def test_a_third_hop_is_optional_and_an_ambiguous_bridge_is_skipped():
    rows = [
        ("Q1", "P108", 2010, ["Q2"]),
        ("Q2", "P169", 2010, ["Q3"]),
        ("Q3", "P102", 2010, ["Q9"]),
    ]
    lengths: Counter[int] = Counter()
    for seed in range(20):
        chains = bridged_multi_pid.generate(small_facts(rows), default_templates(), seed)
        (chain,) = [c for c in chains if c.turns[0].subject_qid == "Q1"]
        lengths[chain.length] += 1
        if chain.length == 3:
            assert (chain.turns[2].subject_qid, chain.turns[2].gold_qids) == ("Q3", ("Q9",))
    assert set(lengths) == {2, 3}
    ambiguous = [("Q1", "P108", 2010, ["Q2", "Q7"]), *rows[1:]]
    chains = bridged_multi_pid.generate(small_facts(ambiguous), default_templates(), 0)
    assert [c.turns[0].subject_qid for c in chains] == ["Q2"]
