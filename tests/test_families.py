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
