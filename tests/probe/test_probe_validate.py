"""Each corpus rule catches its violation on a doctored item, and the shipped corpus passes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chronoscope_dagster.probe.corpus import load_authored
from chronoscope_dagster.probe.generator import generate
from chronoscope_dagster.probe.longmemeval import Item, Turn
from chronoscope_dagster.probe.rules import DateAnswer, Event
from chronoscope_dagster.probe.validate import RULES, validate_items


@pytest.fixture(scope="module")
def corpus():
    return load_authored()


def item(corpus, question_id: str) -> Item:
    return next(i for i in corpus.items if i.question_id == question_id)


def with_turn(it: Item, session: int, turn: int, **changes) -> Item:
    sessions = [list(s) for s in it.haystack_sessions]
    sessions[session][turn] = replace(sessions[session][turn], **changes)
    return replace(it, haystack_sessions=tuple(tuple(s) for s in sessions))


def with_date(it: Item, index: int, value: str) -> Item:
    dates = list(it.haystack_dates)
    dates[index] = value
    return replace(it, haystack_dates=tuple(dates))


def doctored(corpus, rule: str) -> list[Item]:
    """Items of the shipped corpus, one of them broken against ``rule``."""
    gym = item(corpus, "tg-asof-01")
    sister = item(corpus, "tg-prospective-03")
    broken = {
        "shape": replace(gym, haystack_dates=gym.haystack_dates[:2]),
        "date_format": replace(gym, question_date="next Tuesday"),
        "weekday": with_date(gym, 0, "2025/10/06 (Sun) 19:20"),
        "chronological": with_date(gym, 1, "2025/09/14 (Sun) 12:10"),
        "before_question": replace(gym, question_date="2026/01/08 (Thu) 08:00"),
        "gold_sessions": replace(
            gym, answer_session_ids=(*gym.answer_session_ids, "tg-asof-01-s9")
        ),
        "evidence_turn": with_turn(gym, 0, 0, has_answer=False),
        "date_like": with_turn(gym, 1, 1, content="Bake it again on the 3rd of March."),
        "question_type": replace(gym, question_type="temporal-reasoning"),
        "derivation": replace(sister, answer="No — it falls on 17 April 2026."),
        "ambiguous": replace(sister, question_date="2026/04/15 (Wed) 09:00"),
    }
    if rule == "unique_id":
        return [*corpus.items, gym]
    return [broken[rule] if i.question_id == broken[rule].question_id else i for i in corpus.items]


@pytest.mark.parametrize("rule", RULES)
def test_each_rule_catches_its_violation(corpus, rule):
    problems = validate_items(doctored(corpus, rule), corpus.specs)
    assert problems, rule
    assert rule in {p.rule for p in problems}
    assert {p.item_id for p in problems} == {
        "tg-prospective-03" if rule in ("derivation", "ambiguous") else "tg-asof-01"
    }
    for problem in problems:
        assert problem.detail and str(problem).startswith(problem.item_id)


def test_more_violations(corpus):
    gym = item(corpus, "tg-asof-01")
    cases = {
        "unique_id": replace(gym, haystack_session_ids=("a", "a", "b")),
        "evidence_turn": with_turn(gym, 1, 0, has_answer=True),
        "gold_sessions": replace(gym, answer_session_ids=()),
        "shape": with_turn(gym, 0, 1, role="bot"),
        "date_like": replace(gym, question="Which gym was I at in 2025?"),
    }
    for rule, broken in cases.items():
        assert rule in {p.rule for p in validate_items([broken])}, rule
    for text in ("See you 05/06.", "It opens March 3.", "Since 2024-05-06.", "On 3/4/26."):
        problems = validate_items([with_turn(gym, 2, 1, content=text)])
        assert [p.rule for p in problems] == ["date_like"], text
        assert "haystack_sessions[2][1]" in problems[0].detail


def test_a_spec_must_name_gold_sessions_only(corpus):
    gym = item(corpus, "tg-asof-01")
    distractor = gym.haystack_session_ids[1]
    specs = {**corpus.specs, gym.question_id: DateAnswer(Event(distractor))}
    problems = validate_items([gym], specs)
    assert any(p.rule == "derivation" and distractor in p.detail for p in problems)
    assert any(
        p.rule == "derivation" and "no answer spec" in p.detail for p in validate_items([gym], {})
    )


def test_upstream_types_pass_when_types_are_open(corpus):
    gym = replace(item(corpus, "tg-asof-01"), question_type="temporal-reasoning")
    assert validate_items([gym], types=None) == []


def test_the_shipped_corpus_and_generated_items_pass(corpus):
    assert validate_items(corpus.items, corpus.specs) == []
    generated = generate(120)
    assert validate_items(generated.items, generated.specs) == []
    assert all(isinstance(t, Turn) for i in generated.items for s in i.haystack_sessions for t in s)
