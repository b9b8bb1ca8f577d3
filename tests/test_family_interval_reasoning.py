"""Interval reasoning: a yes/no span question recomputed from the truth, then the entity turn at y2."""

from __future__ import annotations

from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import interval_reasoning
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_of_one_subject, held_over_span

NAMES = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg"}


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(interval_reasoning.generate(sample_facts, default_templates(), 0))


def small_facts(years: dict[int, list[str]], names: dict[str, str] = NAMES) -> SnapshotFacts:
    return facts_of_one_subject(years, names)


def test_family_is_not_empty_and_every_chain_has_its_shape(chains):
    assert len(chains) >= 50
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "interval_reasoning"
        assert first.answer_kind == "yes_no" and first.answer in {"yes", "no"}
        assert first.gold_qids == () and first.present_qids == () and not first.drift_eligible
        assert first.is_explicit and second.is_explicit and second.answer_kind == "entity"
        assert (second.subject_qid, second.pid) == (first.subject_qid, first.pid)
        assert chain.anchor == first.scope_anchor == f"{first.scope_year}-{first.scope_end_year}"
        assert first.question != second.question


def test_yes_no_answers_are_the_truth_over_the_span(chains, sample_facts):
    for chain in chains:
        first = chain.turns[0]
        inside = held_over_span(
            sample_facts, first.subject_qid, first.pid, first.scope_year, first.scope_end_year
        )
        assert first.answer == ("yes" if first.asked_qid in inside else "no")
        if first.answer == "no":
            years = sample_facts.year_golds(first.subject_qid, first.pid)
            assert any(first.asked_qid in gold.qids for gold in years.values())


def test_the_question_names_the_asked_value(chains, sample_facts):
    for chain in chains:
        first = chain.turns[0]
        assert sample_facts.labels[first.asked_qid].label in first.question


def test_yes_and_no_are_balanced(chains):
    counts = Counter(chain.turns[0].answer for chain in chains)
    assert set(counts) == {"yes", "no"}
    assert min(counts.values()) >= 0.35 * len(chains)


def test_exact_no_chain_on_a_hand_built_snapshot():
    facts = small_facts({2000: ["Q10"], 2001: ["Q10"], 2002: ["Q11"]})
    templates = default_templates()
    by_answer: dict[str, list] = {"yes": [], "no": []}
    for seed in range(20):
        (chain,) = interval_reasoning.generate(facts, templates, seed)
        by_answer[chain.turns[0].answer].append(chain)
    assert by_answer["yes"] and by_answer["no"]
    phrasings = {
        templates.render(
            "P6", "interval_yes_no", index,
            subject="Ruritania", value="Flavia Elphberg", year=2000, year2=2001,
        )
        for index in range(3)
    }  # fmt: skip
    for chain in by_answer["no"]:
        first, second = chain.turns
        assert first.question in phrasings
        assert (first.asked_qid, first.scope_year, first.scope_end_year) == ("Q11", 2000, 2001)
        assert (second.scope_anchor, second.gold_qids, second.answer) == (
            "2001", ("Q10",), "Rudolf Rassendyll",
        )  # fmt: skip
    for chain in by_answer["yes"]:
        first = chain.turns[0]
        assert first.asked_qid in held_over_span(
            facts, "Q1", "P6", first.scope_year, first.scope_end_year
        )


def test_values_that_never_changed_or_share_a_label_are_not_asked():
    assert not list(
        interval_reasoning.generate(
            small_facts({2000: ["Q10"], 2001: ["Q10"]}), default_templates(), 0
        )
    )
    twins = {**NAMES, "Q11": "Rudolf Rassendyll"}
    facts = small_facts({2000: ["Q10"], 2001: ["Q10"], 2002: ["Q11"]}, twins)
    assert not list(interval_reasoning.generate(facts, default_templates(), 0))


def test_unnameable_subject_is_skipped():
    facts = small_facts(
        {2000: ["Q10"], 2001: ["Q10"], 2002: ["Q11"]}, {"Q10": NAMES["Q10"], "Q11": NAMES["Q11"]}
    )
    assert not list(interval_reasoning.generate(facts, default_templates(), 0))
