"""Multi-turn chain: several properties of one subject, all at the year of turn 1."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import multi_turn_chain
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

MANY = {f"Q{n}": f"Person {chr(55 + n)}" for n in range(10, 31)}
DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Acme", "Q2": "Globex", "Q10": "Hank Scorpio", "Q20": "Initech",
         "Q30": "Springfield", "Q31": "Shelbyville", "Q40": "Freedonia"}  # fmt: skip


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(multi_turn_chain.generate(sample_facts, default_templates(), 0))


def small_facts(rows: list[tuple[str | None, str, str, list[str]]]) -> SnapshotFacts:
    return facts_from_rows(rows, NAMES)


def test_chains_ask_different_properties_of_one_subject_at_one_year(chains):
    assert len(chains) >= 20
    for chain in chains:
        assert chain.family == "multi_turn_chain" and 3 <= chain.length <= 6
        assert len({turn.subject_qid for turn in chain.turns}) == 1
        assert len({turn.pid for turn in chain.turns}) == chain.length
        assert {turn.scope_anchor for turn in chain.turns} == {chain.anchor}
        assert len(chain.anchor) == 4
        assert len({turn.question for turn in chain.turns}) == chain.length


def test_every_gold_is_the_truth_in_the_year_and_no_answer_repeats(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns:
            gold = sample_facts.year_golds(turn.subject_qid, turn.pid)[turn.scope_year]
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical
        values = Counter(qid for turn in chain.turns for qid in turn.gold_qids)
        assert max(values.values()) == 1


def test_only_turn_one_states_the_year_and_later_turns_follow_up(chains):
    templates = default_templates()
    slots: Counter[str] = Counter()
    for chain in chains:
        first, *rest = chain.turns
        assert first.is_explicit and str(first.scope_year) in first.question
        assert first.subject_label in first.question
        for turn in rest:
            assert not turn.is_explicit and DIGIT.search(turn.question) is None
            assert turn.subject_label.casefold() not in turn.question.casefold()
            (slot,) = [
                slot
                for slot in ("followup", "followup_then")
                if turn.question in templates.phrasings(turn.pid, slot)
            ]
            slots[slot] += 1
    assert slots["followup"] > 0 and slots["followup_then"] > 0


def test_lengths_vary_where_the_facts_allow():
    pids = ("P169", "P488", "P127", "P131", "P17", "P276")
    rows = [("2001", "Q1", pid, [f"Q{10 + index}"]) for index, pid in enumerate(pids)]
    present = {("Q1", pid): ["Q30"] for pid in pids}
    lengths = {
        chain.length
        for seed in range(30)
        for chain in multi_turn_chain.generate(
            facts_from_rows(rows, {**MANY, "Q1": "Acme"}, present=present),
            default_templates(),
            seed,
        )
    }
    assert len(lengths) >= 3 and lengths <= set(range(3, 7))


def test_small_facts_keep_one_of_two_properties_with_the_same_answer():
    facts = small_facts(
        [
            ("2001", "Q1", "P169", ["Q10"]), ("2001", "Q1", "P488", ["Q10"]),
            ("2001", "Q1", "P127", ["Q20"]), ("2001", "Q1", "P131", ["Q30"]),
            ("2000", "Q1", "P131", ["Q31"]), ("2000", "Q1", "P17", ["Q40"]),
            ("2001", "Q2", "P169", ["Q10"]), ("2001", "Q2", "P127", ["Q20"]),
            (None, "Q2", "P17", ["Q40"]),
        ]
    )  # fmt: skip
    made = 0
    for seed in range(10):
        chains = list(multi_turn_chain.generate(facts, default_templates(), seed))
        made += len(chains)
        if not chains:
            continue
        (chain,) = chains
        assert chain.anchor == "2001" and chain.length == 3
        assert {turn.subject_qid for turn in chain.turns} == {"Q1"}
        pids = [turn.pid for turn in chain.turns]
        assert "P131" in pids[1:] and not {"P169", "P488"} <= set(pids)
        assert [turn.is_explicit for turn in chain.turns] == [True, False, False]
    assert made >= 3
