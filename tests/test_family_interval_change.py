"""Interval change: "did it change between y1 and y2" recomputed from the truth at both ends."""

from __future__ import annotations

from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import interval_change
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_of_one_subject

NAMES = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg"}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(interval_change.generate(sample_facts, default_templates(), 0))


def small_facts(years: dict[int, list[str]], names: dict[str, str] = NAMES) -> SnapshotFacts:
    return facts_of_one_subject(years, names)


def test_family_is_not_empty_and_every_chain_has_its_shape(chains):
    assert len(chains) >= 50
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "interval_change"
        assert first.answer_kind == "yes_no" and first.answer in {"yes", "no"}
        assert first.gold_qids == () and first.present_qids == () and not first.drift_eligible
        assert first.asked_qid is None
        assert first.is_explicit and second.is_explicit and second.answer_kind == "entity"
        assert (second.subject_qid, second.pid) == (first.subject_qid, first.pid)
        assert chain.anchor == first.scope_anchor == f"{first.scope_year}-{first.scope_end_year}"


def test_answers_compare_the_two_ends_and_the_ends_are_equal_or_disjoint(chains, sample_facts):
    for chain in chains:
        first = chain.turns[0]
        years = sample_facts.year_golds(first.subject_qid, first.pid)
        before = set(years[first.scope_year].qids)
        after = set(years[first.scope_end_year].qids)
        assert first.answer == ("yes" if before != after else "no")
        assert before == after or not before & after
        assert sample_facts.verbalizable(tuple(before | after))


def test_yes_and_no_are_balanced(chains):
    counts = Counter(chain.turns[0].answer for chain in chains)
    assert set(counts) == {"yes", "no"}
    assert min(counts.values()) >= 0.35 * len(chains)


def test_exact_chains_on_a_hand_built_snapshot():
    facts = small_facts({2000: ["Q10"], 2001: ["Q10"], 2002: ["Q11"]})
    templates = default_templates()
    by_answer: dict[str, list] = {"yes": [], "no": []}
    for seed in range(20):
        (chain,) = interval_change.generate(facts, templates, seed)
        by_answer[chain.turns[0].answer].append(chain)
    assert by_answer["yes"] and by_answer["no"]
    phrasings = {
        templates.render("P6", "interval_change", i, subject="Ruritania", year=2000, year2=2001)
        for i in range(3)
    }
    for chain in by_answer["no"]:
        first, second = chain.turns
        assert first.question in phrasings and first.scope_anchor == "2000-2001"
        assert (second.scope_anchor, second.gold_qids, second.answer) == (
            "2001", ("Q10",), "Rudolf Rassendyll",
        )  # fmt: skip
    for chain in by_answer["yes"]:
        first, second = chain.turns
        assert first.scope_anchor in {"2000-2002", "2001-2002"}
        assert second.gold_qids == ("Q11",)


def test_partial_overlaps_and_unchanging_pairs_give_no_chain():
    templates = default_templates()
    overlapping = small_facts({2000: ["Q10"], 2001: ["Q10"], 2002: ["Q10", "Q11"]})
    assert not list(interval_change.generate(overlapping, templates, 0))
    unchanging = small_facts({2000: ["Q10"], 2001: ["Q10"], 2002: ["Q10"]})
    assert not list(interval_change.generate(unchanging, templates, 0))
