"""The corpus: relative rules, golds derived from timestamps, the generator, the export."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
import yaml

from chronoscope_dagster.probe.assemble import build_corpus
from chronoscope_dagster.probe.corpus import (
    AUTHORED_FILE,
    CorpusError,
    authored_from_document,
    export_corpus,
    load_authored,
    read_corpus,
    specs_path,
    text_sha256,
)
from chronoscope_dagster.probe.dates import date_mentions, format_day
from chronoscope_dagster.probe.generator import generate
from chronoscope_dagster.probe.longmemeval import WEEKDAYS, load_items, parse_date
from chronoscope_dagster.probe.rules import RuleError, add_months, parse_step, whole_months
from chronoscope_dagster.probe.scenario import PROBE_TYPES, gold_for
from chronoscope_dagster.probe.validate import validate_items


@pytest.fixture(scope="module")
def authored():
    return load_authored()


@pytest.fixture(scope="module")
def document():
    return yaml.safe_load(AUTHORED_FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("step", "day", "expected"),
    [
        ({"weeks": 3}, date(2026, 3, 5), date(2026, 3, 26)),
        ({"days": -10}, date(2026, 3, 5), date(2026, 2, 23)),
        ({"months": 6}, date(2025, 8, 31), date(2026, 2, 28)),
        ({"months": 1}, date(2024, 1, 31), date(2024, 2, 29)),
        ({"months": -1}, date(2026, 3, 31), date(2026, 2, 28)),
        ({"next": "friday"}, date(2026, 3, 2), date(2026, 3, 6)),
        ({"next": "friday"}, date(2026, 3, 6), date(2026, 3, 13)),
        ({"first": "monday", "month": 1}, date(2025, 12, 9), date(2026, 1, 5)),
        ({"first": "monday", "month": 1}, date(2026, 5, 20), date(2026, 6, 1)),
        ({"last": "saturday", "month": 1}, date(2025, 10, 14), date(2025, 11, 29)),
        ({"month_start": -1}, date(2026, 1, 19), date(2025, 12, 1)),
        ({"month_start": 1}, date(2025, 12, 31), date(2026, 1, 1)),
    ],
)
def test_relative_steps(step, day, expected):
    assert parse_step(step).apply(day) == expected


@pytest.mark.parametrize(
    "step",
    [{"weeks": "three"}, {"next": "someday"}, {"days": 1, "weeks": 2}, {"fortnights": 1}, []],
)
def test_malformed_steps_are_refused(step):
    with pytest.raises(RuleError):
        parse_step(step)


def test_whole_months_and_month_arithmetic():
    assert whole_months(date(2026, 1, 31), date(2026, 2, 28)) == 0
    assert whole_months(date(2026, 1, 15), date(2026, 3, 15)) == 2
    assert add_months(date(2023, 12, 15), 2) == date(2024, 2, 15)


def test_the_authored_corpus_has_its_types_and_passes_every_rule(authored):
    assert authored.id == "chronoscope-timegrounded-v1"
    assert len(authored.items) >= 12
    counts = Counter(item.question_type for item in authored.items)
    assert set(counts) == set(PROBE_TYPES) and min(counts.values()) >= 4
    assert validate_items(authored.items, authored.specs) == []
    prospective = [i for i in authored.items if i.question_type == "prospective-memory"]
    assert any(str(i.answer).startswith("Yes") for i in prospective), "a moment already passed"
    assert any(str(i.answer).startswith("No") for i in prospective)


def test_the_corpus_file_types_no_answer_and_no_date(document):
    for raw in document["items"]:
        answer = json.dumps(raw["answer"])
        assert not date_mentions(answer), raw["id"]
        assert not any(f" {m} " in answer for m in ("January", "March", "April")), raw["id"]
        assert "question_date" not in raw and "answer_text" not in raw


def test_golds_are_derived_from_the_session_timestamps(authored, document):
    follow_up = next(i for i in authored.items if i.question_id == "tg-prospective-02")
    said = parse_date(follow_up.haystack_dates[0])
    assert follow_up.answer == format_day(said.date() + timedelta(weeks=3)) == "26 March 2026"
    for item in authored.items:
        assert item.answer == gold_for(item, authored.specs[item.question_id]).text

    moved = copy.deepcopy(document)
    raw = next(r for r in moved["items"] if r["id"] == "tg-prospective-02")
    raw["sessions"][0]["at"] = "2026-03-03 09:20"
    rebuilt = authored_from_document(moved)
    item = next(i for i in rebuilt.items if i.question_id == "tg-prospective-02")
    assert item.answer == "24 March 2026"
    assert item.haystack_dates[0] == "2026/03/03 (Tue) 09:20"


def test_yes_no_golds_follow_the_query_time(authored, document):
    moved = copy.deepcopy(document)
    raw = next(r for r in moved["items"] if r["id"] == "tg-prospective-03")
    raw["asked"] = "2026-04-20 18:00"
    item = next(i for i in authored_from_document(moved).items if i.question_id == raw["id"])
    assert str(item.answer).startswith("Yes")
    original = next(i for i in authored.items if i.question_id == raw["id"])
    assert str(original.answer).startswith("No")


def test_a_corpus_file_with_a_bad_rule_is_refused(document):
    broken = copy.deepcopy(document)
    broken["items"][0]["answer"] = {"choice": {"at": {"now": [{"eons": 1}]}, "options": []}}
    with pytest.raises(CorpusError, match="tg-asof-01"):
        authored_from_document(broken)
    broken = copy.deepcopy(document)
    broken["items"][0]["sessions"][1]["distractor"] = "nothing"
    with pytest.raises(CorpusError, match="no distractor 'nothing'"):
        authored_from_document(broken)


def test_a_corpus_breaking_a_rule_is_refused_at_load(tmp_path, document):
    broken = copy.deepcopy(document)
    broken["items"][0]["question"] = "Which gym was I a member of on March 3?"
    path = tmp_path / "corpus.yaml"
    path.write_text(yaml.safe_dump(broken), encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        load_authored(path)
    assert [(p.item_id, p.rule) for p in caught.value.problems] == [("tg-asof-01", "date_like")]


def test_the_generator_makes_valid_balanced_items():
    corpus = generate(120, seed=0)
    assert len(corpus.items) == 120
    assert len({item.question_id for item in corpus.items}) == 120
    assert validate_items(corpus.items, corpus.specs) == []
    assert Counter(i.question_type for i in corpus.items) == {t: 40 for t in PROBE_TYPES}
    sides = Counter(str(i.answer).split(" ")[0] for i in corpus.items if " — " in str(i.answer))
    assert abs(sides["Yes"] - sides["No"]) <= 4
    kinds = Counter(type(spec).__name__ for spec in corpus.specs.values())
    assert set(kinds) == {"ChoiceAnswer", "YesNoAnswer", "DateAnswer", "CountAnswer"}


def test_the_generator_is_deterministic_across_processes():
    first = generate(120, seed=7).text()
    assert generate(120, seed=7).text() == first
    assert generate(120, seed=8).text() != first
    assert generate(30, seed=7).text() == generate(30, seed=7).text()
    script = (
        "from chronoscope_dagster.probe.generator import generate;"
        "print(generate(120, seed=7).sha256())"
    )
    for hash_seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", script],
            env={"PYTHONHASHSEED": hash_seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == text_sha256(first)


def test_the_full_corpus_exports_as_longmemeval_json(tmp_path):
    corpus = build_corpus()
    assert corpus.id == "chronoscope-timegrounded-v1+gen-v1-seed0-n120"
    assert len(corpus.items) == len(load_authored().items) + 120
    path = export_corpus(corpus, tmp_path / "probe.json")
    text = path.read_text(encoding="utf-8")
    assert text.endswith("]\n") and "\r" not in text
    assert text_sha256(text) == corpus.sha256() == text_sha256(text.replace("\n", "\r\n"))
    assert tuple(load_items(path)) == corpus.items
    again = read_corpus(path)
    assert again.id == corpus.id and again.specs == corpus.specs and again.items == corpus.items
    sidecar = json.loads(specs_path(path).read_text(encoding="utf-8"))
    assert sidecar["corpus_sha256"] == corpus.sha256()
    record = json.loads(text)[0]
    assert list(record) == [
        "question_id",
        "question_type",
        "question",
        "question_date",
        "answer",
        "haystack_session_ids",
        "haystack_dates",
        "haystack_sessions",
        "answer_session_ids",
    ]
    assert all("has_answer" in turn for session in record["haystack_sessions"] for turn in session)


def test_corpus_dates_are_utc_and_weekdays_computed(authored):
    for item in authored.items:
        for value in (*item.haystack_dates, item.question_date):
            instant = parse_date(value)
            assert instant.tzinfo == UTC
            assert value[12:15] == WEEKDAYS[instant.weekday()]
    assert authored.items[0].question_date == "2026/03/03 (Tue) 18:00"
    assert parse_date(authored.items[0].question_date) == datetime(2026, 3, 3, 18, 0, tzinfo=UTC)
