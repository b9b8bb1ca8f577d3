"""What every family owes: the same seed gives the same chains, another seed others."""

import pytest

from chronoscope_dagster.chains.families import FAMILIES, family_module
from chronoscope_dagster.chains.templates import default_templates


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_is_deterministic_and_follows_the_seed(sample_facts, family):
    generate = family_module(family).generate
    templates = default_templates()
    first = list(generate(sample_facts, templates, 7))
    assert first, f"{family} is empty on the sample"
    assert list(generate(sample_facts, templates, 7)) == first
    other = [chain.chain_id for chain in generate(sample_facts, templates, 8)]
    assert other != [chain.chain_id for chain in first]


SPAN_FAMILIES = ("distinct_count", "interval_change", "interval_reasoning")


@pytest.mark.parametrize("family", SPAN_FAMILIES)
def test_span_questions_state_their_years_and_turn_two_is_the_truth_at_the_end(
    sample_facts, family
):
    chains = list(family_module(family).generate(sample_facts, default_templates(), 0))
    for chain in chains:
        first, second = chain.turns
        assert 1950 <= first.scope_year < first.scope_end_year <= 2025
        assert 2 <= first.scope_end_year - first.scope_year + 1 <= 10
        name = sample_facts.subject_name(first.subject_qid)
        assert name is not None and first.subject_label == name and name in first.question
        assert str(first.scope_year) in first.question
        assert str(first.scope_end_year) in first.question
        y2 = first.scope_end_year
        assert second.scope_anchor == str(y2) and str(y2) in second.question
        assert name not in second.question
        assert second.gold_qids == sample_facts.year_golds(second.subject_qid, second.pid)[y2].qids
        assert all(turn.question.endswith("?") for turn in chain.turns)
