"""Change point: two implicit turns at y1, an explicit override to y2 kept by the implicit turn
after it, maybe the first property again at y2."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import change_point
from chronoscope_dagster.chains.families.common import FOLLOWUP_SLOTS, clear_pronoun
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.templates import Templates, default_templates
from tests.chain_helpers import facts_from_rows

DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Acme", "Q10": "Hank Scorpio", "Q11": "Lisa Simpson", "Q12": "Mr Burns",
         "Q20": "Ned Flanders", "Q21": "Moe Szyslak", "Q30": "Globex", "Q31": "Initech",
         "Q32": "Umbrella", "Q40": "business", "Q50": "Freedonia"}  # fmt: skip
ACME = {
    ("P169", 2000): ["Q10"], ("P169", 2010): ["Q11"], ("P169", 2020): ["Q12"],
    ("P488", 2000): ["Q20"], ("P488", 2010): ["Q21"], ("P488", 2020): ["Q10"],
    ("P127", 2000): ["Q30"], ("P127", 2010): ["Q31"], ("P127", 2020): ["Q32"],
    ("P17", 2000): ["Q50"], ("P17", 2010): ["Q50"], ("P17", 2020): ["Q50"],
}  # fmt: skip
"""Acme's CEO (today Mr Burns, as in 2020), chair (in 2020 its CEO of 2000), owners (each a
business) and country (never changed), by property and year."""


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(change_point.generate(sample_facts, default_templates(), 7))


def acme() -> SnapshotFacts:
    rows = [(str(year), "Q1", pid, values) for (pid, year), values in ACME.items()]
    rows += [(None, owner, "P31", ["Q40"]) for owner in ("Q30", "Q31", "Q32")]
    return facts_from_rows(rows, NAMES, present={("Q1", "P169"): ["Q12"]})


def shape(chain: Chain) -> list[tuple[str, int | None, bool]]:
    return [(turn.pid, turn.scope_year, turn.is_explicit) for turn in chain.turns]


def phrasings(templates: Templates, pid: str, slots: tuple[str, ...], **values: object) -> set:
    return {
        templates.render(pid, slot, index, **values)
        for slot in slots
        for index in range(len(templates.phrasings(pid, slot)))
    }


def assert_chain_rules(chain: Chain, facts: SnapshotFacts) -> None:
    """The family's structure and rules, checked against the facts."""
    templates = default_templates()
    first, *later = chain.turns
    p, y1 = first.pid, first.scope_year
    q, r, y2 = chain.turns[1].pid, chain.turns[2].pid, chain.turns[3].scope_year
    assert len({p, q, r}) == 3 and y1 != y2
    expected = [(p, y1, True), (q, y1, False), (r, y1, False), (q, y2, True), (r, y2, False)]
    assert shape(chain) in (expected, [*expected, (p, y2, False)])
    assert chain.family == "change_point" and chain.anchor == str(y1)
    assert {turn.subject_qid for turn in chain.turns} == {first.subject_qid}
    assert first.subject_label in first.question and str(y1) in first.question
    assert str(y2) in chain.turns[3].question and not DIGIT.search(
        chain.turns[3].question.replace(str(y2), "")
    )
    for index, turn in enumerate(chain.turns):
        truth = facts.year_golds(turn.subject_qid, turn.pid)[turn.scope_year]
        assert turn.gold_qids == truth.qids and turn.canonical_qid == truth.canonical
        assert turn.scope_anchor == str(turn.scope_year) and turn.question.endswith("?")
        assert not any(
            set(turn.gold_qids) & set(earlier.gold_qids) for earlier in chain.turns[:index]
        )
    for before, turn in zip(chain.turns, later, strict=False):
        if turn.is_explicit:
            continue
        assert turn.scope_dependent
        assert facts.scope_sensitive(turn.subject_qid, turn.pid, turn.scope_anchor)
        assert not set(facts.present.get((turn.subject_qid, turn.pid), ())) & set(turn.gold_qids)
        assert not DIGIT.search(turn.question.replace(first.subject_label, ""))
        if clear_pronoun(facts, templates, turn.subject_qid, turn.pid, before.canonical_qid):
            assert turn.question in phrasings(templates, turn.pid, FOLLOWUP_SLOTS)
        else:
            named = phrasings(templates, turn.pid, ("cross_entity",), subject=first.subject_label)
            assert turn.question in named
    assert len({turn.question for turn in chain.turns}) == chain.length


def test_two_implicit_turns_then_an_override_kept_by_the_next(chains, sample_facts):
    assert len(chains) >= 5
    assert set(Counter(chain.length for chain in chains)) <= {5, 6}
    for chain in chains:
        assert_chain_rules(chain, sample_facts)


def test_exact_chains_on_a_small_company():
    shapes = Counter()
    for seed in range(40):
        facts = acme()
        for chain in change_point.generate(facts, default_templates(), seed):
            assert_chain_rules(chain, facts)
            shapes[tuple(shape(chain))] += 1
    assert (("P127", 2000, True), ("P488", 2000, False), ("P169", 2000, False),
            ("P488", 2010, True), ("P169", 2010, False)) in shapes  # fmt: skip
    assert {len(found) for found in shapes} == {5, 6}
    turns = [turn for found in shapes for turn in found]
    assert ("P169", 2020, False) not in turns  # Mr Burns is the CEO today as in 2020
    assert not [turn for turn in turns if turn[0] == "P17" and not turn[2]]  # never changed
    assert ("P17", 2000, True) in turns  # but may open a chain, which scores nothing
    for found in shapes:  # the chair of 2020 was the CEO of 2000: never both in a chain
        assert not {("P488", 2020), ("P169", 2000)} <= {(pid, year) for pid, year, _ in found}


def test_an_implicit_turn_after_an_answer_of_the_subjects_kind_names_the_subject():
    """Acme's owners are businesses: "it" after one could mean the owner, so the turn after
    an owner names Acme; after a person it says "it"."""
    named = Counter()
    for seed in range(20):
        for chain in change_point.generate(acme(), default_templates(), seed):
            for before, turn in zip(chain.turns, chain.turns[1:], strict=False):
                if not turn.is_explicit:
                    named[(before.pid == "P127", "Acme" in turn.question)] += 1
    assert named[(True, True)] and named[(False, False)]
    assert not named[(True, False)] and not named[(False, True)]


def test_a_property_that_never_changed_only_opens_and_two_are_too_few():
    templates = default_templates()

    def facts_of(*kept: str) -> SnapshotFacts:
        rows = [(str(year), "Q1", pid, values) for (pid, year), values in ACME.items()
                if pid in kept]  # fmt: skip
        return facts_from_rows(rows, NAMES)

    assert list(change_point.generate(facts_of("P169", "P488"), templates, 0)) == []
    facts = facts_of("P169", "P488", "P17")
    opened = [chain for seed in range(5) for chain in change_point.generate(facts, templates, seed)]
    assert opened and all(chain.turns[0].pid == "P17" for chain in opened)
    for chain in opened:
        assert_chain_rules(chain, facts)
