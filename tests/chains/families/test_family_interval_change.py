"""Interval change: "did it change between y0 and y1", updates and implicit follow-ups, checked
against the truth."""

from __future__ import annotations

from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import interval_change
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows, facts_of_one_subject

NAMES = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg"}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(interval_change.generate(sample_facts, default_templates(), 0))


def small_facts(years: dict[int, list[str]], names: dict[str, str] = NAMES) -> SnapshotFacts:
    return facts_of_one_subject(years, names)


def shape(chain) -> list[tuple[str, bool, str]]:
    return [(turn.answer_kind, turn.is_explicit, turn.pid) for turn in chain.turns]


def test_family_is_not_empty_and_every_chain_has_its_shape(chains):
    assert len(chains) >= 8
    assert set(Counter(chain.length for chain in chains)) <= {4, 5, 6}
    for chain in chains:
        first, update, follow, second, *rest = chain.turns
        p, r = first.pid, follow.pid
        assert shape(chain)[:4] == [
            ("yes_no", True, p), ("entity", True, p), ("entity", False, r), ("yes_no", True, p),
        ]  # fmt: skip
        assert r != p and len({turn.subject_qid for turn in chain.turns}) == 1
        assert chain.family == "interval_change" and chain.anchor == first.scope_anchor
        y0, y1, y2 = first.scope_year, first.scope_end_year, second.scope_end_year
        assert first.scope_anchor == f"{y0}-{y1}" and second.scope_anchor == f"{y1}-{y2}"
        assert y0 < y1 < y2 and str(y1) in update.question
        assert update.scope_anchor == follow.scope_anchor == str(y1)
        for turn in (first, second):
            assert turn.gold_qids == () and turn.asked_qid is None and turn.answer in {"yes", "no"}
        assert_entity_golds_disjoint(chain)
        if rest:
            assert second.answer == "yes" and shape(chain)[4] == ("entity", True, p)
            assert rest[0].scope_anchor == str(y2) and str(y2) in rest[0].question
        if len(rest) == 2:
            again = rest[1]
            assert (again.pid, again.scope_anchor, again.is_explicit) == (r, str(y2), False)
            assert again.question != follow.question


def test_answers_compare_the_two_ends_and_the_ends_are_equal_or_disjoint(chains, sample_facts):
    for chain in chains:
        for turn in (chain.turns[0], chain.turns[3]):
            years = sample_facts.year_golds(turn.subject_qid, turn.pid)
            before = set(years[turn.scope_year].qids)
            after = set(years[turn.scope_end_year].qids)
            assert turn.answer == ("yes" if before != after else "no")
            assert before == after or not before & after
            assert sample_facts.verbalizable(tuple(before | after))
        for turn in chain.turns:
            if turn.answer_kind == "entity":
                gold = sample_facts.gold(turn.subject_qid, turn.pid, turn.scope_anchor)
                assert turn.gold_qids == gold.qids


def test_both_yes_no_turns_are_balanced(sample_facts):
    """Each yes/no answer is drawn evenly; the sample holds few items, so over ten seeds."""
    templates = default_templates()
    chains = [
        chain
        for seed in range(10)
        for chain in interval_change.generate(sample_facts, templates, seed)
    ]
    for position in (0, 3):
        counts = Counter(chain.turns[position].answer for chain in chains)
        assert set(counts) == {"yes", "no"}
        assert min(counts.values()) >= 0.35 * len(chains), (position, counts)


COUNTRY = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg",
           "Q12": "Fritz von Tarlenheim", "Q20": "Rupert of Hentzau",
           "Q21": "Michael Elphberg", "Q22": "Colonel Sapt"}  # fmt: skip
HEADS = ["Q10"] * 2 + ["Q11"] * 3 + ["Q12"] * 4 + ["Q10"] * 5 + ["Q11"] * 2
"""Ruritania's heads of government, one a year from 2000 to 2015."""


def country(heads: dict[int, list[str]], states: dict[int, list[str]]):
    rows = [(str(y), "Q1", "P6", v) for y, v in heads.items()]
    rows += [(str(y), "Q1", "P35", v) for y, v in states.items()]
    return facts_from_rows(rows, COUNTRY)


def heads_and_states() -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    heads = {2000 + index: [head] for index, head in enumerate(HEADS)}
    states = {year: ["Q20" if year < 2004 else "Q21" if year < 2010 else "Q22"] for year in heads}
    return heads, states


def chains_of_heads(seeds: range) -> list:
    heads, states = heads_and_states()
    found = []
    for seed in seeds:
        chains = interval_change.generate(country(heads, states), default_templates(), seed)
        found.append([c for c in chains if c.turns[0].pid == "P6"])
    return found


def assert_entity_golds_disjoint(chain) -> None:
    golds = [set(turn.gold_qids) for turn in chain.turns if turn.answer_kind == "entity"]
    for index, gold in enumerate(golds):
        assert gold and not any(gold & earlier for earlier in golds[:index]), golds


def test_exact_chains_on_a_hand_built_snapshot():
    heads, states = heads_and_states()
    scored = Counter()
    for chains in chains_of_heads(range(30)):
        (chain,) = chains
        first, update, follow, second, *rest = chain.turns
        for turn in (first, second):
            before, after = heads[turn.scope_year], heads[turn.scope_end_year]
            assert turn.answer == ("yes" if before != after else "no")
        assert update.gold_qids == tuple(heads[first.scope_end_year])
        assert follow.pid == "P35" and follow.gold_qids == tuple(states[first.scope_end_year])
        if rest:
            assert rest[0].gold_qids == tuple(heads[second.scope_end_year])
        scored[(first.answer, second.answer)] += 1
    assert set(scored) == {("yes", "yes"), ("yes", "no"), ("no", "yes"), ("no", "no")}


def test_the_update_follows_only_a_yes_and_no_entity_answer_repeats():
    """After a "no" at turn 4 the update's gold would be turn 2's: the chain ends there. No
    entity turn's gold shares a value with an earlier one's."""
    lengths = Counter()
    for chains in chains_of_heads(range(30)):
        (chain,) = chains
        second = chain.turns[3]
        if second.answer == "no":
            assert chain.length == 4
        lengths[(second.answer, chain.length)] += 1
        assert_entity_golds_disjoint(chain)
    assert lengths[("no", 4)] and lengths[("yes", 5)] and lengths[("yes", 6)]


def test_no_chain_without_a_second_property_partial_overlaps_or_a_constant_value():
    templates = default_templates()
    alone = small_facts({2000: ["Q10"], 2001: ["Q10"], 2002: ["Q11"], 2003: ["Q10"]})
    assert not list(interval_change.generate(alone, templates, 0))
    states = {year: ["Q20"] for year in range(2000, 2004)}
    overlapping = country(
        {2000: ["Q10"], 2001: ["Q10"], 2002: ["Q10", "Q11"], 2003: ["Q11"]}, states
    )
    assert not [
        c for c in interval_change.generate(overlapping, templates, 0) if c.turns[0].pid == "P6"
    ]
    unchanging = country({year: ["Q10"] for year in range(2000, 2004)}, states)
    assert not list(interval_change.generate(unchanging, templates, 0))
