"""Explicit questions: every turn asked alone with its subject and scope stated."""

from collections import Counter

import orjson
import pytest

from chronoscope_dagster.chains.explicit import explicit_by_chain, explicit_questions
from chronoscope_dagster.chains.jsonl import import_chains
from chronoscope_dagster.chains.model import Chain, Turn
from chronoscope_dagster.chains.templates import default_templates

TEMPLATES = default_templates()


def turn(anchor: str | None, kind: str = "entity", asked: str | None = None, **extra) -> Turn:
    end = int(anchor[5:]) if anchor and kind != "entity" else None
    return Turn(
        question="Who was the head of government then?", pid="P6", subject_qid="Q145",
        subject_label="United Kingdom", gold_qids=("Q192",) if kind == "entity" else (),
        gold_labels=(), gold_aliases=(), answer="David Cameron", canonical_qid=None,
        scope_year=int(anchor[:4]) if anchor else None, scope_anchor=anchor, is_explicit=False,
        answer_kind=kind, scope_end_year=end, asked_qid=asked, **extra,
    )  # fmt: skip


def phrasings(slot: str, **values: object) -> set[str]:
    return {
        TEMPLATES.render("P6", slot, index, **values)
        for index in range(len(TEMPLATES.phrasings("P6", slot)))
    }


CASES = [
    (turn("2012"), phrasings("explicit_year", subject="United Kingdom", year="2012")),
    (turn("2012-04-01"), phrasings("explicit_date", subject="United Kingdom", date="1 April 2012")),
    (turn(None), phrasings("timeless", subject="United Kingdom")),
    (
        turn("2010-2016", "yes_no", asked="Q192"),
        phrasings(
            "interval_yes_no",
            subject="United Kingdom",
            value="David Cameron",
            year="2010",
            year2="2016",
        ),
    ),
    (
        turn("2010-2016", "yes_no"),
        phrasings("interval_change", subject="United Kingdom", year="2010", year2="2016"),
    ),
    (
        turn("2010-2016", "count"),
        phrasings("count", subject="United Kingdom", year="2010", year2="2016"),
    ),
]


@pytest.mark.parametrize(("asked", "expected"), CASES)
def test_each_anchor_and_answer_kind_has_its_slot(asked, expected):
    chain = Chain("scope_switch", 2022, "2012", (asked,))
    (question,) = explicit_questions(chain, TEMPLATES, {"Q192": "David Cameron"}, seed=42)
    assert question in expected
    assert "the United Kingdom" in question


def test_phrasing_is_drawn_per_chain_and_turn_whatever_the_order():
    chains = [Chain("scope_switch", 2022, str(y), (turn(str(y)), turn(str(y + 1)))) for y in
              range(1990, 2020)]  # fmt: skip
    forward, _ = explicit_by_chain(chains, TEMPLATES, {}, seed=42)
    backward, _ = explicit_by_chain(chains[::-1], TEMPLATES, {}, seed=42)
    assert forward == backward
    drawn = {q.replace(c.anchor, "{year}") for c in chains for q in forward[c.chain_id][:1]}
    assert len(drawn) > 1
    other, _ = explicit_by_chain(chains, TEMPLATES, {}, seed=7)
    assert other != forward


def test_a_turn_that_cannot_be_rendered_is_null_and_counted():
    turns = (turn("2012"), turn("2010-2016", "yes_no", asked="Q9"), turn("2012 or so"))
    chain = Chain("interval_reasoning", 2022, "2012", turns)
    missing: Counter[str] = Counter()
    questions = explicit_questions(chain, TEMPLATES, {}, seed=42, missing=missing)
    assert questions[0] is not None and questions[1:] == (None, None)
    assert missing == {"no_value_label": 1, "unknown_scope": 1}


def test_import_renders_what_the_file_lacks_and_keeps_what_it_has(tmp_path):
    base = {
        "turn_index": 0, "answer": "David Cameron", "year": 2012, "pid": "P6",
        "subject_label": "United Kingdom", "subject_qid": "Q145", "value_qid": "Q192",
    }  # fmt: skip
    record = {
        "chain_id": "c1",
        "family": "carryover",
        "snapshot_year": 2022,
        "turns": [
            {**base, "question": "In 2012, who was the head of government of the UK?"},
            {**base, "turn_index": 1, "question": "Who was it then?",
             "explicit_question": "Kept as exported?"},
            {**base, "turn_index": 2, "question": "Who was it then?", "pid": "P999999"},
        ],
    }  # fmt: skip
    path = tmp_path / "chains.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n")
    table, counts = import_chains(path)
    rendered, kept, unknown = table.column("explicit_question").to_pylist()
    assert rendered in phrasings("explicit_year", subject="United Kingdom", year="2012")
    assert kept == "Kept as exported?" and unknown is None
    assert counts["no_explicit_question:no_templates"] == 1
