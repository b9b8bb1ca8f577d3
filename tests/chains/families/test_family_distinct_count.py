"""Distinct count: the number of values held over windows that move, recomputed from the truth."""

from __future__ import annotations

from collections import Counter

import pytest

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.families import distinct_count
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_of_one_subject, held_over_span

NAMES = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg"}
HEADS = {**NAMES, "Q12": "Rupert of Hentzau", "Q13": "Fritz von Tarlenheim"}
TERMS = {2000 + index: [head] for index, head in
         enumerate(["Q10", "Q11", "Q12", "Q12", "Q10", "Q10", "Q10", "Q13"])}  # fmt: skip
"""Ruritania's heads of government from 2000 to 2007: windows of three years hold 1, 2 or 3."""


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(distinct_count.generate(sample_facts, default_templates(), 0))


def small_facts(years: dict[int, list[str]], names: dict[str, str] = NAMES) -> SnapshotFacts:
    return facts_of_one_subject(years, names)


def window_length(turn) -> int:
    return turn.scope_end_year - turn.scope_year + 1


def test_family_is_not_empty_and_every_chain_has_its_shape(chains):
    assert len(chains) >= 15
    assert set(Counter(chain.length for chain in chains)) == {4, 5}
    for chain in chains:
        first = chain.turns[0]
        assert chain.family == "distinct_count" and chain.anchor == first.scope_anchor
        assert first.subject_label in first.question
        assert len({window_length(turn) for turn in chain.turns}) == 1
        for turn in chain.turns:
            assert turn.answer_kind == "count" and turn.answer.isdigit() and turn.is_explicit
            assert turn.gold_qids == () and turn.present_qids == () and not turn.drift_eligible
            assert (turn.subject_qid, turn.pid) == (first.subject_qid, first.pid)
            assert turn.scope_anchor == f"{turn.scope_year}-{turn.scope_end_year}"
            assert (
                str(turn.scope_year) in turn.question and str(turn.scope_end_year) in turn.question
            )
        assert len({turn.scope_anchor for turn in chain.turns}) == chain.length


def test_counts_are_the_distinct_values_over_the_span_and_within_range(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns:
            years = sample_facts.year_golds(turn.subject_qid, turn.pid)
            assert turn.scope_year in years and turn.scope_end_year in years
            values = held_over_span(
                sample_facts, turn.subject_qid, turn.pid, turn.scope_year, turn.scope_end_year
            )
            assert turn.answer == str(len(values))
            assert 1 <= len(values) <= 15
            assert sample_facts.verbalizable(tuple(values))


def test_count_answers_spread(chains):
    counts = Counter(turn.answer for chain in chains for turn in chain.turns[1:])
    assert max(counts.values()) < 0.5 * sum(counts.values())


def test_exact_chain_on_a_hand_built_snapshot():
    templates = default_templates()
    facts = small_facts(TERMS, HEADS)
    (chain,) = distinct_count.generate(facts, templates, 0)
    first = chain.turns[0]
    phrasings = {
        templates.render(
            "P6", "count", i, subject="Ruritania", year=first.scope_year, year2=first.scope_end_year
        )
        for i in range(3)
    }
    assert first.question in phrasings and first.subject_label == "Ruritania"
    for turn in chain.turns:
        held = held_over_span(facts, "Q1", "P6", turn.scope_year, turn.scope_end_year)
        assert turn.answer == str(len(held))
        assert window_length(turn) == 3  # the only length of windows with three counts


def test_one_window_length_per_chain_and_no_window_asked_twice():
    lengths = Counter()
    for seed in range(30):
        (chain,) = distinct_count.generate(small_facts(TERMS, HEADS), default_templates(), seed)
        assert len({window_length(turn) for turn in chain.turns}) == 1
        assert len({turn.scope_anchor for turn in chain.turns}) == chain.length
        lengths[chain.length] += 1
    assert set(lengths) == {4, 5}
    heads = "Q10 Q10 Q11 Q12 Q12 Q12 Q13 Q10 Q11 Q11 Q13 Q13 Q13 Q13 Q12 Q10 Q11 Q10 Q10 Q12"
    longer = {1990 + index: [head] for index, head in enumerate(heads.split())}
    drawn = Counter()
    for seed in range(30):
        (chain,) = distinct_count.generate(small_facts(longer, HEADS), default_templates(), seed)
        (length,) = {window_length(turn) for turn in chain.turns}
        assert len({turn.scope_anchor for turn in chain.turns}) == chain.length
        drawn[length] += 1
    assert len(drawn) >= 3  # several lengths qualify; each chain keeps one


def test_each_count_is_drawn_evenly_whatever_its_number_of_windows():
    """Of the three-year windows, four hold 2 values, one holds 1 and one 3: the first count
    is still each of them about a third of the time."""
    first = Counter()
    for seed in range(60):
        (chain,) = distinct_count.generate(small_facts(TERMS, HEADS), default_templates(), seed)
        first[chain.turns[0].answer] += 1
    assert set(first) == {"1", "2", "3"} and min(first.values()) >= 15, first


def test_too_few_windows_or_more_than_fifteen_values_are_left_out():
    templates = default_templates()
    facts = small_facts({2000: ["Q10"], 2001: ["Q11"]})
    assert not list(distinct_count.generate(facts, templates, 0))
    assert facts.drops["too_short"] == 1
    two_counts = small_facts(
        {year: ["Q10" if year < 2003 else "Q11"] for year in range(2000, 2006)}
    )
    assert not list(distinct_count.generate(two_counts, templates, 0))
    assert two_counts.drops["too_short"] == 1  # no length gives three different counts
    crowd = [f"Q{n}" for n in range(20, 36)]
    names = {**HEADS, **{qid: f"Minister {qid[1:]}" for qid in crowd}}
    facts = small_facts({2000: crowd, **{year + 1: heads for year, heads in TERMS.items()}}, names)
    made = 0
    for seed in range(5):
        for chain in distinct_count.generate(facts, templates, seed):
            assert all(turn.scope_year > 2000 for turn in chain.turns)
            made += 1
    assert made == 5
