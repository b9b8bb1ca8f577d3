"""Change point: an implicit follow-up at y1, an explicit override to y2 kept afterwards, maybe a
second override."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import change_point
from chronoscope_dagster.chains.families.common import COMPLEMENTS
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows

DIGIT = re.compile(r"\d")
NAMES = {
    "Q1": "Ruritania", "Q10": "Rudolf", "Q11": "Flavia", "Q20": "Michael", "Q21": "Sapt",
}  # fmt: skip


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(change_point.generate(sample_facts, default_templates(), 7))


def small_facts(rows: dict[tuple[str, int], list[str]]) -> SnapshotFacts:
    return facts_from_rows([(str(y), "Q1", p, v) for (p, y), v in rows.items()], NAMES)


def shape(chain) -> list[tuple[str, int, bool]]:
    return [(turn.pid, turn.scope_year, turn.is_explicit) for turn in chain.turns]


def test_override_follows_an_implicit_turn_and_is_kept(chains, sample_facts):
    assert len(chains) >= 30
    assert set(Counter(chain.length for chain in chains)) == {4, 5}
    for chain in chains:
        first, follow, switch, kept, *last = chain.turns
        p, q, y1, y2 = first.pid, COMPLEMENTS[first.pid], first.scope_year, switch.scope_year
        assert chain.family == "change_point" and chain.anchor == str(y1)
        assert shape(chain)[:4] == [(p, y1, True), (q, y1, False), (p, y2, True), (q, y2, False)]
        assert y1 != y2 and not set(first.gold_qids) & set(switch.gold_qids)
        assert not set(follow.gold_qids) & set(kept.gold_qids)
        if last:
            (again,) = last
            assert (again.pid, again.is_explicit) == (p, True)
            assert again.scope_year not in (y1, y2)
            assert not set(again.gold_qids) & set(switch.gold_qids)
        assert {turn.subject_qid for turn in chain.turns} == {first.subject_qid}
        assert first.subject_label in first.question and str(y1) in first.question
        assert str(y2) in switch.question
        for turn in chain.turns:
            truth = sample_facts.year_golds(turn.subject_qid, turn.pid)[turn.scope_year]
            assert turn.gold_qids == truth.qids and turn.canonical_qid == truth.canonical
            assert turn.scope_anchor == str(turn.scope_year) and turn.question.endswith("?")
            if not turn.is_explicit:
                assert not DIGIT.search(turn.question)
                assert first.subject_label not in turn.question
        assert len({turn.question for turn in chain.turns}) == chain.length


def test_exact_chains_on_a_small_country():
    facts = small_facts(
        {
            ("P6", 2000): ["Q10"],
            ("P6", 2010): ["Q11"],
            ("P6", 2020): ["Q10"],
            ("P35", 2000): ["Q20"],
            ("P35", 2010): ["Q21"],
            ("P35", 2020): ["Q21"],
        }
    )
    shapes = set()
    for seed in range(60):
        for chain in change_point.generate(facts, default_templates(), seed):
            shapes.add(tuple(shape(chain)))
            for turn in chain.turns:
                truth = facts.year_golds("Q1", turn.pid)[turn.scope_year]
                assert turn.gold_qids == truth.qids
    assert (
        ("P6", 2000, True),
        ("P35", 2000, False),
        ("P6", 2010, True),
        ("P35", 2010, False),
    ) in shapes
    assert (("P6", 2010, True), ("P35", 2010, False), ("P6", 2000, True), ("P35", 2000, False),
            ("P6", 2020, True)) not in shapes  # fmt: skip
    assert any(len(found) == 5 for found in shapes)
    assert all((found[0][1], found[2][1]) not in {(2010, 2020), (2020, 2010)} for found in shapes)


def test_no_chain_without_a_disjoint_change_or_a_complement_at_y1():
    templates = default_templates()
    overlapping = small_facts(
        {("P6", 2000): ["Q10"], ("P6", 2010): ["Q10", "Q11"], ("P35", 2000): ["Q20"]}
    )
    assert list(change_point.generate(overlapping, templates, 0)) == []
    no_complement = small_facts({("P6", 2000): ["Q10"], ("P6", 2010): ["Q11"]})
    assert list(change_point.generate(no_complement, templates, 0)) == []
    unchanged_follow_up = small_facts(
        {
            ("P6", 2000): ["Q10"],
            ("P6", 2010): ["Q11"],
            ("P35", 2000): ["Q20"],
            ("P35", 2010): ["Q20"],
        }
    )
    assert [
        c
        for c in change_point.generate(unchanged_follow_up, templates, 0)
        if c.turns[0].pid == "P6"
    ] == []
