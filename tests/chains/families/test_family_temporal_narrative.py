"""Temporal narrative: ascending years over one subject and property, golds that change."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import temporal_narrative
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_of_one_subject

YEAR = re.compile(r"\d+")
NAMES = {"Q1": "Ruritania", "Q10": "Rudolf", "Q11": "Flavia", "Q12": "Michael", "Q13": "Sapt"}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(temporal_narrative.generate(sample_facts, default_templates(), 7))


def small_facts(years: dict[int, list[str]]) -> SnapshotFacts:
    return facts_of_one_subject(years, NAMES)


def test_narratives_walk_forward_through_at_least_two_changes(chains, sample_facts):
    assert len(chains) >= 100
    lengths = Counter(chain.length for chain in chains)
    assert min(lengths) == 3 and max(lengths) == 11
    for chain in chains:
        first = chain.turns[0]
        years = [turn.scope_year for turn in chain.turns]
        assert years == sorted(set(years)) and years[0] >= 1950 and years[-1] <= 2025
        assert chain.family == "temporal_narrative" and chain.anchor == str(years[0])
        assert {(turn.subject_qid, turn.pid) for turn in chain.turns} == {
            (first.subject_qid, first.pid)
        }
        golds = [frozenset(turn.gold_qids) for turn in chain.turns]
        assert sum(a != b for a, b in itertools.pairwise(golds)) >= 2
        truth = sample_facts.year_golds(first.subject_qid, first.pid)
        for turn in chain.turns:
            assert turn.gold_qids == truth[turn.scope_year].qids
            assert turn.canonical_qid == truth[turn.scope_year].canonical
            assert turn.is_explicit and turn.scope_anchor == str(turn.scope_year)
            assert YEAR.findall(turn.question) == [str(turn.scope_year)]
            assert turn.question.endswith("?")
        assert first.subject_label in first.question
        assert all(first.subject_label not in turn.question for turn in chain.turns[1:])
        assert len({turn.question for turn in chain.turns}) == chain.length


def test_later_turns_use_property_generic_and_closing_phrasings(chains):
    templates = default_templates()
    closing = set(templates.generic_phrasings("narrative_last"))
    generic = set(templates.generic_phrasings("scope_switch"))
    kinds: Counter[str] = Counter()
    for chain in chains:
        for index, turn in enumerate(chain.turns[1:], start=2):
            text = turn.question.replace(str(turn.scope_year), "{year}")
            if text in closing:
                assert index == chain.length
                kinds["last"] += 1
            elif text in generic:
                kinds["generic"] += 1
            else:
                assert text in templates.phrasings(turn.pid, "scope_switch")
                kinds["property"] += 1
    assert kinds["last"] and kinds["generic"] and kinds["property"]


def test_exact_chain_uses_only_years_from_1950_to_the_snapshot():
    facts = small_facts({1940: ["Q13"], 2000: ["Q10"], 2002: ["Q11"], 2004: ["Q12"], 2030: ["Q13"]})
    templates = default_templates()
    for seed in range(5):
        (chain,) = temporal_narrative.generate(facts, templates, seed)
        assert [(t.scope_year, t.gold_qids) for t in chain.turns] == [
            (2000, ("Q10",)), (2002, ("Q11",)), (2004, ("Q12",)),
        ]  # fmt: skip
        assert chain.turns[0].question in {
            templates.render("P6", "explicit_year", index, subject="Ruritania", year=2000)
            for index in range(len(templates.phrasings("P6", "explicit_year")))
        }
        assert [t.answer for t in chain.turns] == ["Rudolf", "Flavia", "Michael"]


def test_a_return_to_the_first_value_counts_as_a_change_but_one_change_is_not_enough():
    templates = default_templates()
    back = small_facts({2000: ["Q10"], 2001: ["Q11"], 2002: ["Q10"]})
    (chain,) = temporal_narrative.generate(back, templates, 0)
    assert [t.answer for t in chain.turns] == ["Rudolf", "Flavia", "Rudolf"]
    once = small_facts({2000: ["Q10"], 2001: ["Q11"], 2002: ["Q11"], 2003: ["Q11"]})
    assert list(temporal_narrative.generate(once, templates, 0)) == []


def test_a_long_story_is_told_in_full_and_consecutive_golds_never_share_a_value():
    alternating = {year: ["Q10" if year % 2 else "Q11"] for year in range(2000, 2008)}
    for seed in range(10):
        (chain,) = temporal_narrative.generate(small_facts(alternating), default_templates(), seed)
        assert [turn.scope_year for turn in chain.turns] == list(range(2000, 2008))
        for before, turn in zip(chain.turns, chain.turns[1:], strict=False):
            assert not set(before.gold_qids) & set(turn.gold_qids)
