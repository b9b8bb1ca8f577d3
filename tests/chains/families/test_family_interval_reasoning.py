"""Interval reasoning: an explicit anchor, then yes/no span questions recomputed from the truth."""

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
    assert set(Counter(chain.length for chain in chains)) == {4, 5}
    for chain in chains:
        anchor, *spans = chain.turns
        assert chain.family == "interval_reasoning" and chain.anchor == anchor.scope_anchor
        assert anchor.answer_kind == "entity" and anchor.is_explicit
        assert anchor.scope_anchor == str(anchor.scope_year)
        assert anchor.subject_label in anchor.question and str(anchor.scope_year) in anchor.question
        for before, turn in zip(chain.turns, spans, strict=False):
            assert turn.answer_kind == "yes_no" and turn.answer in {"yes", "no"}
            assert turn.gold_qids == () and turn.present_qids == () and not turn.drift_eligible
            assert turn.is_explicit and (turn.subject_qid, turn.pid) == (
                anchor.subject_qid,
                anchor.pid,
            )
            assert turn.scope_anchor == f"{turn.scope_year}-{turn.scope_end_year}"
            assert turn.scope_anchor != before.scope_anchor
            assert (
                str(turn.scope_year) in turn.question and str(turn.scope_end_year) in turn.question
            )
        assert len({(turn.scope_anchor, turn.asked_qid) for turn in spans}) == len(spans)


def test_yes_no_answers_are_the_truth_over_the_span(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns[1:]:
            inside = held_over_span(
                sample_facts, turn.subject_qid, turn.pid, turn.scope_year, turn.scope_end_year
            )
            assert turn.answer == ("yes" if turn.asked_qid in inside else "no")
            if turn.answer == "no":
                years = sample_facts.year_golds(turn.subject_qid, turn.pid)
                assert any(turn.asked_qid in gold.qids for gold in years.values())


def test_the_question_names_the_asked_value_unless_it_asks_the_same_value_again(
    chains, sample_facts
):
    generic = {
        " ".join(text.split()[:2]) for text in default_templates().generic_phrasings("span_switch")
    }
    for chain in chains:
        for before, turn in zip(chain.turns[1:], chain.turns[2:], strict=False):
            label = sample_facts.labels[turn.asked_qid].label
            if label not in turn.question:
                assert turn.asked_qid == before.asked_qid
                assert " ".join(turn.question.split()[:2]) in generic
        assert sample_facts.labels[chain.turns[1].asked_qid].label in chain.turns[1].question


def test_yes_and_no_are_balanced(chains):
    counts = Counter(turn.answer for chain in chains for turn in chain.turns[1:])
    assert set(counts) == {"yes", "no"}
    assert min(counts.values()) >= 0.35 * sum(counts.values())


def test_exact_chains_on_a_hand_built_snapshot():
    years = {2000: ["Q10"], 2001: ["Q10"], 2002: ["Q11"], 2003: ["Q11"], 2004: ["Q10"]}
    facts = small_facts(years)
    templates = default_templates()
    answers = Counter()
    for seed in range(20):
        (chain,) = interval_reasoning.generate(facts, templates, seed)
        anchor, *spans = chain.turns
        assert anchor.gold_qids == tuple(years[anchor.scope_year])
        for turn in spans:
            inside = held_over_span(facts, "Q1", "P6", turn.scope_year, turn.scope_end_year)
            assert turn.answer == ("yes" if turn.asked_qid in inside else "no")
            answers[turn.answer] += 1
    assert answers["yes"] and answers["no"]


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
