"""Interval reasoning: an explicit anchor, then yes/no questions whether a value held throughout
a span, recomputed from the truth."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from chronoscope_dagster.chains.evidence import anchor_span, merge
from chronoscope_dagster.chains.facts import Shard, SnapshotFacts
from chronoscope_dagster.chains.families import interval_reasoning
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.templates import Templates, default_templates
from tests.chain_helpers import (
    facts_from_rows,
    facts_of_one_subject,
    held_over_span,
    intervals_table,
    shard_apart,
)

NAMES = {"Q1": "Ruritania", "Q10": "Rudolf Rassendyll", "Q11": "Flavia Elphberg",
         "Q12": "Rupert of Hentzau"}  # fmt: skip
HEADS = ["Q10"] * 2 + ["Q11"] * 3 + ["Q12"] * 4 + ["Q10"] * 5 + ["Q11"] * 2
"""Ruritania's heads of government, one a year from 2000 to 2015."""


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(interval_reasoning.generate(sample_facts, default_templates(), 0))


def small_facts(years: dict[int, list[str]], names: dict[str, str] = NAMES) -> SnapshotFacts:
    return facts_of_one_subject(years, names)


def heads_by_year() -> dict[int, list[str]]:
    return {2000 + index: [head] for index, head in enumerate(HEADS)}


def held(facts: SnapshotFacts, turn: Turn) -> tuple[bool, bool]:
    """Whether the asked value's dated statements hold on every day of the turn's span, and
    on some day of it."""
    start, end = anchor_span(turn.scope_anchor, facts.snapshot_year)
    days = merge(facts.value_spans[(turn.subject_qid, turn.pid)][turn.asked_qid])
    every = any(first <= start and end <= last for first, last in days)
    return every, any(first <= end and start <= last for first, last in days)


def renderings(templates: Templates, pid: str | None, slot: str, **values: object) -> set[str]:
    if pid is None:
        count = len(templates.generic_phrasings(slot))
        return {templates.render_generic(slot, index, **values) for index in range(count)}
    count = len(templates.phrasings(pid, slot))
    return {templates.render(pid, slot, index, **values) for index in range(count)}


def chains_over_seeds(facts_of: Callable[[], SnapshotFacts], seeds: range) -> list[Chain]:
    return [
        chain
        for seed in seeds
        for chain in interval_reasoning.generate(facts_of(), default_templates(), seed)
    ]


def test_family_is_not_empty_and_every_chain_has_its_shape(chains, sample_facts):
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
            assert turn.asked_label == sample_facts.labels[turn.asked_qid].label
            assert turn.scope_anchor == f"{turn.scope_year}-{turn.scope_end_year}"
            assert turn.scope_anchor != before.scope_anchor
            assert (
                str(turn.scope_year) in turn.question and str(turn.scope_end_year) in turn.question
            )
        assert len({(turn.scope_anchor, turn.asked_qid) for turn in spans}) == len(spans)


def test_yes_no_answers_say_whether_the_value_held_throughout_the_span(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns[1:]:
            every, some = held(sample_facts, turn)
            assert turn.answer == ("yes" if every else "no")
            assert some, "a span the value never touches is not asked"
            key = (turn.subject_qid, turn.pid)
            assert turn.asked_qid not in sample_facts.timeless_values.get(key, set())
            assert turn.asked_qid not in sample_facts.unstarted_values.get(key, set())
            if turn.answer == "no" and turn.pid in sample_facts.functional:
                assert sample_facts.covers_years(*key, turn.scope_year, turn.scope_end_year)


def test_the_question_names_the_asked_value_unless_it_asks_the_same_value_again(
    chains, sample_facts
):
    templates = default_templates()
    for chain in chains:
        name = chain.turns[0].subject_label
        for before, turn in zip(chain.turns, chain.turns[1:], strict=False):
            years = {"year": turn.scope_year, "year2": turn.scope_end_year}
            named = renderings(
                templates, turn.pid, "interval_yes_no", subject=name,
                value=sample_facts.labels[turn.asked_qid].label, **years,
            )  # fmt: skip
            if turn.question not in named:
                assert turn.asked_qid == before.asked_qid
                assert turn.question in renderings(templates, None, "throughout_switch", **years)


def test_yes_and_no_are_even_at_every_turn_position(chains):
    by_position: dict[int, Counter[str]] = {}
    for chain in chains:
        for position, turn in enumerate(chain.turns[1:], start=1):
            by_position.setdefault(position, Counter())[turn.answer] += 1
    assert set(by_position) == {1, 2, 3, 4}
    for position, counts in by_position.items():
        share = counts["yes"] / sum(counts.values())
        assert 0.35 <= share <= 0.65, (position, counts)


def test_exact_chains_on_a_hand_built_snapshot():
    years = heads_by_year()
    answers = Counter()
    for seed in range(20):
        facts = small_facts(years)
        (chain,) = interval_reasoning.generate(facts, default_templates(), seed)
        anchor, *spans = chain.turns
        assert anchor.gold_qids == tuple(years[anchor.scope_year])
        for turn in spans:
            span = range(turn.scope_year, turn.scope_end_year + 1)
            every_year = all(years.get(year) == [turn.asked_qid] for year in span)
            assert turn.answer == ("yes" if every_year else "no")
            assert turn.asked_qid in held_over_span(facts, "Q1", "P6", span[0], span[-1])
            answers[turn.answer] += 1
    assert answers["yes"] and answers["no"]


def test_a_value_that_held_for_part_of_the_span_is_no_and_every_day_is_yes():
    """Handovers mid-year: a head in office on some day of every year of a span, but not on
    every day of it, did not hold the office throughout."""
    terms = [("Q10", "2000-01-01", "2003-06-30"), ("Q11", "2003-07-01", "2007-03-31"),
             ("Q12", "2007-04-01", "2011-09-30"), ("Q10", "2011-10-01", "2016-12-31")]  # fmt: skip
    by_year = {
        year: [head for head, first, last in terms if first[:4] <= str(year) <= last[:4]]
        for year in range(2000, 2017)
    }
    rows = [(str(year), "Q1", "P6", heads) for year, heads in by_year.items()]
    intervals = intervals_table([("Q1", "P6", head, first, last) for head, first, last in terms])

    def facts() -> SnapshotFacts:
        return facts_from_rows(rows, NAMES, intervals=intervals)

    in_every_year = Counter()
    for chain in chains_over_seeds(facts, range(30)):
        for turn in chain.turns[1:]:
            start, end = anchor_span(turn.scope_anchor, 2025)
            every_day = any(
                head == turn.asked_qid and day(first) <= start and end <= day(last)
                for head, first, last in terms
            )
            assert turn.answer == ("yes" if every_day else "no")
            span = range(turn.scope_year, turn.scope_end_year + 1)
            if all(turn.asked_qid in by_year[year] for year in span):
                in_every_year[turn.answer] += 1
    assert in_every_year["no"], "a value of every year's gold, not held every day, is 'no'"
    assert in_every_year["yes"]


def day(iso: str) -> int:
    return anchor_span(iso, 2025)[0]


def test_no_option_follows_from_an_earlier_turn():
    """A value is not asked again over a span overlapping one it was asked over; of a
    single-holder property, no other value than the anchor's answer over a span holding the
    anchor year, nor another value over a span overlapping one answered "yes"."""
    years = heads_by_year()
    checked = 0
    for chain in chains_over_seeds(lambda: small_facts(years), range(40)):
        anchor, *spans = chain.turns
        for index, turn in enumerate(spans):
            if turn.asked_qid != anchor.canonical_qid:
                assert not turn.scope_year <= anchor.scope_year <= turn.scope_end_year
            for earlier in spans[:index]:
                overlap = (
                    earlier.scope_year <= turn.scope_end_year
                    and turn.scope_year <= earlier.scope_end_year
                )
                if overlap:
                    assert earlier.asked_qid != turn.asked_qid
                    assert earlier.answer == "no"
                checked += 1
    assert checked >= 40 * 3


def test_a_statement_that_ended_at_an_unknown_date_decides_no_no_after_its_start():
    """An employer whose statement from 2009 ended at an unknown date may have employed them
    on every day since: "no" is asked of it only over a span reaching before 2009."""
    names = {"Q2": "Rudolf Rassendyll", "Q20": "Strelsau Bank", "Q21": "Zenda Castle",
             "Q22": "Hentzau Estates"}  # fmt: skip
    bank, castle, estates = "Q20", "Q21", "Q22"
    spans = [("Q2", "P108", bank, "2000-01-01", "2008-12-31"),
             ("Q2", "P108", estates, "2003-01-01", "2006-12-31"),
             ("Q2", "P108", castle, "2009-01-01", None)]  # fmt: skip
    rows = [
        (str(year), "Q2", "P108", [bank, *([estates] if 2003 <= year <= 2006 else [])])
        for year in range(2000, 2009)
    ]
    rows.append(("2009", "Q2", "P108", [castle]))
    intervals = intervals_table(spans, ended_unknown={("Q2", "P108", castle)})
    uncertain = {(str(year), "Q2", "P108"): [castle] for year in range(2010, 2026)}

    def facts() -> SnapshotFacts:
        return facts_from_rows(rows, names, intervals=intervals, uncertain=uncertain)

    asked = [
        turn
        for chain in chains_over_seeds(facts, range(40))
        for turn in chain.turns[1:]
        if turn.asked_qid == castle
    ]
    assert asked
    assert all(turn.answer == "no" and turn.scope_year < 2009 for turn in asked), [
        (turn.scope_anchor, turn.answer) for turn in asked
    ]


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


def test_a_shard_asks_what_the_whole_snapshot_asks_of_a_value_known_only_from_its_statements():
    """Zenda Castle employed Rudolf from 2009 to 2011, years in which another employer may or
    may not have (no gold): the castle is a value of no gold, named because it is a subject
    of its own. The index of the shard holding Rudolf but not the castle names it too."""
    names = {"Q2": "Rudolf Rassendyll", "Q20": "Strelsau Bank", "Q21": "Zenda Castle",
             "Q22": "Hentzau Estates", "Q50": "Ruritania"}  # fmt: skip
    spans = [("Q2", "P108", "Q20", "2000-01-01", "2008-12-31"),
             ("Q2", "P108", "Q21", "2009-01-01", "2011-12-31"),
             ("Q2", "P108", "Q22", None, "2012-12-31"), ("Q21", "P17", "Q50", None, None)]  # fmt: skip
    rows = [(str(year), "Q2", "P108", ["Q20"]) for year in range(2000, 2009)]
    rows.append((None, "Q21", "P17", ["Q50"]))
    uncertain = {(str(year), "Q2", "P108"): ["Q22"] for year in range(2009, 2013)}

    def facts(shard: Shard | None = None) -> SnapshotFacts:
        return facts_from_rows(
            rows, names, intervals=intervals_table(spans), uncertain=uncertain, shard=shard
        )

    part = shard_apart(facts, "Q2", "Q21")
    assert "Q21" in facts(part).labels
    templates = default_templates()
    asked = set()
    for seed in range(10):
        whole = list(interval_reasoning.generate(facts(), templates, seed))
        assert whole == list(interval_reasoning.generate(facts(part), templates, seed))
        asked |= {turn.asked_qid for chain in whole for turn in chain.turns[1:]}
    assert "Q21" in asked
