"""Distinct count: the number of values held over a span, recomputed from the truth."""

from __future__ import annotations

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import distinct_count
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_of_one_subject, held_over_span

NAMES = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg"}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(distinct_count.generate(sample_facts, default_templates(), 0))


def small_facts(years: dict[int, list[str]], names: dict[str, str] = NAMES) -> SnapshotFacts:
    return facts_of_one_subject(years, names)


def test_family_is_not_empty_and_every_chain_has_its_shape(chains):
    assert len(chains) >= 50
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "distinct_count"
        assert first.answer_kind == "count" and first.answer.isdigit()
        assert first.gold_qids == () and first.present_qids == () and not first.drift_eligible
        assert first.is_explicit and second.is_explicit and second.answer_kind == "entity"
        assert (second.subject_qid, second.pid) == (first.subject_qid, first.pid)
        assert chain.anchor == first.scope_anchor == f"{first.scope_year}-{first.scope_end_year}"


def test_counts_are_the_distinct_values_over_the_span_and_within_range(chains, sample_facts):
    for chain in chains:
        first = chain.turns[0]
        years = sample_facts.year_golds(first.subject_qid, first.pid)
        assert first.scope_year in years and first.scope_end_year in years
        values = held_over_span(
            sample_facts, first.subject_qid, first.pid, first.scope_year, first.scope_end_year
        )
        assert first.answer == str(len(values))
        assert 2 <= len(values) <= 15
        assert sample_facts.verbalizable(tuple(values))
    assert len({chain.turns[0].answer for chain in chains}) > 1


def test_exact_chain_on_a_hand_built_snapshot():
    templates = default_templates()
    facts = small_facts({2000: ["Q10"], 2001: ["Q11"]})
    (chain,) = distinct_count.generate(facts, templates, 0)
    first, second = chain.turns
    phrasings = {
        templates.render("P6", "count", i, subject="Ruritania", year=2000, year2=2001)
        for i in range(3)
    }
    assert first.question in phrasings
    assert (first.answer, first.scope_anchor, first.subject_label) == (
        "2",
        "2000-2001",
        "Ruritania",
    )
    assert (second.scope_anchor, second.gold_qids, second.answer) == (
        "2001", ("Q11",), "Flavia Elphberg",
    )  # fmt: skip


def test_spans_with_one_value_or_more_than_fifteen_are_left_out():
    templates = default_templates()
    assert not list(
        distinct_count.generate(small_facts({2000: ["Q10"], 2001: ["Q10"]}), templates, 0)
    )
    crowd = [f"Q{n}" for n in range(20, 36)]
    names = {**NAMES, **{qid: f"Minister {qid[1:]}" for qid in crowd}}
    facts = small_facts({2000: crowd, 2001: ["Q10"], 2002: ["Q11"]}, names)
    for seed in range(5):
        (chain,) = distinct_count.generate(facts, templates, seed)
        assert (chain.turns[0].scope_anchor, chain.turns[0].answer) == ("2001-2002", "2")
