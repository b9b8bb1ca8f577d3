"""Multi-turn chain: several properties of one subject, all at the year of turn 1."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import multi_turn_chain
from chronoscope_dagster.chains.families.common import FOLLOWUP_SLOTS, clear_pronoun
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

MANY = {f"Q{n}": f"Person {chr(55 + n)}" for n in range(10, 31)}
DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Acme", "Q2": "Globex", "Q10": "Hank Scorpio", "Q11": "Mindy Simmons",
         "Q12": "Homer Simpson", "Q13": "Waylon Smithers", "Q14": "Lenny Leonard",
         "Q20": "Initech", "Q22": "Intertrode", "Q33": "Ogdenville", "Q21": "Initrode", "Q30": "Springfield",
         "Q31": "Shelbyville", "Q32": "Capital City", "Q40": "Freedonia",
         "Q41": "business", "Q42": "Chamber of Commerce"}  # fmt: skip
ACME = [
    ("2000", "Q1", "P169", ["Q10"]), ("2000", "Q1", "P488", ["Q11"]),
    ("2000", "Q1", "P127", ["Q20"]), ("2000", "Q1", "P131", ["Q31"]),
    ("2001", "Q1", "P169", ["Q12"]), ("2001", "Q1", "P488", ["Q12"]),
    ("2001", "Q1", "P127", ["Q21"]), ("2001", "Q1", "P131", ["Q30"]),
    ("2000", "Q1", "P276", ["Q32"]), ("2001", "Q1", "P276", ["Q32"]),
    ("2000", "Q1", "P463", ["Q42"]), ("2001", "Q1", "P463", ["Q42"]),
    (None, "Q1", "P17", ["Q40"]),
    ("2002", "Q1", "P169", ["Q13"]), ("2002", "Q1", "P488", ["Q14"]),
    ("2002", "Q1", "P127", ["Q22"]), ("2002", "Q1", "P131", ["Q33"]),
    ("2001", "Q2", "P169", ["Q10"]), ("2001", "Q2", "P127", ["Q20"]), (None, "Q2", "P17", ["Q40"]),
]  # fmt: skip
"""Acme's CEO, chair, owner and division changed from 2000 to 2001 (in 2001 one person was
CEO and chair) and again in 2002 (its latest year: what a model ignoring the scope answers,
so never asked), its location and membership did not, and its country has no date; Globex
has one year."""


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(multi_turn_chain.generate(sample_facts, default_templates(), 0))


def small_facts(rows: list[tuple[str | None, str, str, list[str]]]) -> SnapshotFacts:
    return facts_from_rows(rows, NAMES)


def test_chains_ask_different_properties_of_one_subject_at_one_year(chains):
    assert len(chains) >= 8
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


def later_turn_slots(chain: Chain, facts: SnapshotFacts) -> list[str]:
    """The slot each later turn asks, checked: implicit, no year, and the subject named
    (``cross_entity``) exactly where a pronoun could also mean the answer before."""
    templates = default_templates()
    first = chain.turns[0]
    assert first.is_explicit and str(first.scope_year) in first.question
    assert first.subject_label in first.question
    slots = []
    for before, turn in zip(chain.turns, chain.turns[1:], strict=False):
        assert not turn.is_explicit
        assert DIGIT.search(turn.question.replace(turn.subject_label, "")) is None
        if clear_pronoun(facts, templates, turn.subject_qid, turn.pid, before.canonical_qid):
            assert turn.subject_label.casefold() not in turn.question.casefold()
            (slot,) = [
                s for s in FOLLOWUP_SLOTS if turn.question in templates.phrasings(turn.pid, s)
            ]
        else:
            count = len(templates.phrasings(turn.pid, "cross_entity"))
            named = {
                templates.render(turn.pid, "cross_entity", index, subject=turn.subject_label)
                for index in range(count)
            }
            assert turn.question in named
            slot = "cross_entity"
        slots.append(slot)
    return slots


def test_only_turn_one_states_the_year_and_later_turns_follow_up(chains, sample_facts):
    slots = Counter(slot for chain in chains for slot in later_turn_slots(chain, sample_facts))
    assert slots["followup"] > 0 and slots["followup_then"] > 0


def test_every_scored_turn_depends_on_the_year(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns[1:]:
            assert turn.scope_dependent and turn.scope_anchor == chain.anchor
            assert not sample_facts.is_timeless(turn.subject_qid, turn.pid)
            assert sample_facts.scope_sensitive(turn.subject_qid, turn.pid, turn.scope_anchor)


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
    years = Counter()
    for seed in range(20):
        facts = small_facts(ACME)
        (chain,) = multi_turn_chain.generate(facts, default_templates(), seed)
        assert {turn.subject_qid for turn in chain.turns} == {"Q1"}
        assert chain.anchor in ("2000", "2001") and 3 <= chain.length <= 5
        pids = [turn.pid for turn in chain.turns]
        if chain.anchor == "2001":
            assert not {"P169", "P488"} <= set(pids)  # both answer Homer Simpson
        assert [turn.is_explicit for turn in chain.turns] == [True] + [False] * (chain.length - 1)
        for turn in chain.turns:
            assert turn.gold_qids == facts.year_golds("Q1", turn.pid)[int(chain.anchor)].qids
        years[chain.anchor] += 1
    assert set(years) == {"2000", "2001"}


def test_a_follow_up_that_does_not_depend_on_the_year_is_never_scored():
    """The location and membership never changed and the country has no date: one of the
    first two opens the chain (turn 1 is not scored), none is a later turn."""
    openers = Counter()
    for seed in range(20):
        facts = small_facts(ACME)
        for chain in multi_turn_chain.generate(facts, default_templates(), seed):
            openers[chain.turns[0].pid] += 1
            assert not {"P276", "P463", "P17"} & {turn.pid for turn in chain.turns[1:]}
            assert all(turn.scope_dependent for turn in chain.turns[1:])
    assert set(openers) == {"P276", "P463"}  # the least scope-sensitive property opens


def test_after_an_answer_of_the_subjects_kind_the_follow_up_names_the_subject():
    """Acme's owners are businesses: "it" after one could mean the owner, so the turn after
    the owner names Acme; the others say "it"."""
    rows = [*ACME, *[(None, owner, "P31", ["Q41"]) for owner in ("Q20", "Q21")]]
    slots = Counter()
    for seed in range(20):
        facts = small_facts(rows)
        for chain in multi_turn_chain.generate(facts, default_templates(), seed):
            for before, slot in zip(chain.turns, later_turn_slots(chain, facts), strict=False):
                slots[(before.pid == "P127", slot == "cross_entity")] += 1
    assert slots[(True, True)] and slots[(False, False)]
    assert not slots[(True, False)] and not slots[(False, True)]
