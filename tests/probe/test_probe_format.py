"""LongMemEval's file shape and its dates: upstream files load, our files round-trip."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chronoscope_dagster.probe.grounding import (
    GroundingMode,
    delivered_record,
    text_episode,
    timestamped_episode,
)
from chronoscope_dagster.probe.longmemeval import (
    FormatError,
    UnparseableDate,
    check_dates,
    dump_items,
    format_date,
    items_to_json,
    load_items,
    parse_date,
)

UPSTREAM_SHAPED = [
    {
        "question_id": "gpt4_2655b836",
        "question_type": "temporal-reasoning",
        "question": "What was the first issue I had with my new car after its first service?",
        "answer": "GPS system not functioning correctly",
        "question_date": "2023/04/10 (Mon) 23:07",
        "haystack_session_ids": ["answer_4be1b6b4_2", "answer_4be1b6b4_3", "answer_4be1b6b4_1"],
        "haystack_dates": [
            "2023/04/10 (Mon) 17:50",
            "2023/04/10 (Mon) 14:47",
            "2023/04/10 (Mon) 22:18",
        ],
        "haystack_sessions": [
            [
                {"role": "user", "content": "The GPS stopped working.", "has_answer": True},
                {"role": "assistant", "content": "Sorry to hear that."},
            ],
            [{"role": "user", "content": "It had its first service on 3/15."}],
            [],
        ],
        "answer_session_ids": ["answer_4be1b6b4_2", "answer_4be1b6b4_3"],
    },
    {
        "question_id": "6a1eabeb_abs",
        "question_type": "knowledge-update",
        "question": "How many times did I go hiking?",
        "answer": 7,
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [[{"role": "user", "content": "I went hiking again."}]],
        "answer_session_ids": ["s1"],
        "extra_field": {"kept": True},
    },
]


@pytest.fixture
def upstream_file(tmp_path: Path) -> Path:
    path = tmp_path / "longmemeval_oracle.json"
    path.write_text(json.dumps(UPSTREAM_SHAPED), encoding="utf-8")
    return path


def test_an_upstream_shaped_file_loads_and_round_trips(upstream_file, tmp_path):
    items = load_items(upstream_file)
    assert [item.question_id for item in items] == ["gpt4_2655b836", "6a1eabeb_abs"]
    first, second = items
    assert first.haystack_sessions[0][0].has_answer is True
    assert first.haystack_sessions[0][1].has_answer is None
    assert first.haystack_sessions[2] == ()
    assert second.answer == 7 and second.is_abstention
    again = load_items(dump_items(items, tmp_path / "copy.json"))
    assert again == items
    assert json.loads(items_to_json(again)) == UPSTREAM_SHAPED


def test_modes_apply_to_an_upstream_file(upstream_file):
    items = load_items(upstream_file)
    episode = timestamped_episode(items[0], GroundingMode.TIMESTAMPS_ONLY)
    assert episode.history.query_time == datetime(2023, 4, 10, 23, 7, tzinfo=UTC)
    assert {t.session_index for t in episode.history.turns} == {0, 1, 2}
    record = delivered_record(GroundingMode.TIMESTAMPS_ONLY, items, [episode])
    assert record.sessions_with_date_like_content == 1
    assert record.turns_timestamped == 3
    assert record.earliest == "2023-04-10T14:47:00+00:00"
    assert "Current Date: 2023/04/10 (Mon) 23:07" in text_episode(items[0]).query


def test_malformed_files_are_refused_with_the_place(tmp_path):
    path = tmp_path / "bad.json"
    broken = [dict(UPSTREAM_SHAPED[0])]
    del broken[0]["answer_session_ids"]
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(FormatError, match=r"item #1 \(gpt4_2655b836\): missing field"):
        load_items(path)
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(FormatError, match="JSON array"):
        load_items(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023/05/20 (Mon) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023/05/20 (Saturday) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023/05/20 02:21:09", datetime(2023, 5, 20, 2, 21, 9, tzinfo=UTC)),
        ("2023/05/20", datetime(2023, 5, 20, tzinfo=UTC)),
        ("2023-05-20 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2023-05-20T02:21Z", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
        ("2024/02/29 (Thu) 10:00", datetime(2024, 2, 29, 10, 0, tzinfo=UTC)),
    ],
)
def test_dates_are_read_as_utc_and_a_wrong_weekday_is_tolerated(text, expected):
    assert parse_date(text) == expected


@pytest.mark.parametrize(
    "text", ["", "yesterday", "2023/02/30 (Thu) 10:00", "20/05/2023", "May 20"]
)
def test_unreadable_dates_give_none(text):
    assert parse_date(text) is None


def test_an_unparseable_date_names_question_field_and_value(upstream_file):
    items = load_items(upstream_file)
    broken = items[0].__class__(
        **{**items[0].__dict__, "haystack_dates": ("2023/04/10 (Mon) 17:50", "soon", "x")}
    )
    with pytest.raises(UnparseableDate) as caught:
        check_dates([broken])
    error = caught.value
    assert (error.question_id, error.field, error.value) == (
        "gpt4_2655b836",
        "haystack_dates[1]",
        "soon",
    )
    assert (
        "gpt4_2655b836" in str(error)
        and "haystack_dates[1]" in str(error)
        and "'soon'" in str(error)
    )
    text_episode(broken)


def test_format_date_is_locale_free():
    assert format_date(datetime(2026, 3, 2, 18, 30, tzinfo=UTC)) == "2026/03/02 (Mon) 18:30"


@pytest.mark.skipif(
    not os.environ.get("LONGMEMEVAL_FILE"), reason="set LONGMEMEVAL_FILE to a real LongMemEval file"
)
def test_a_real_longmemeval_file_loads_and_is_delivered():
    items = load_items(os.environ["LONGMEMEVAL_FILE"])
    assert len(items) >= 500
    episodes = [timestamped_episode(item, GroundingMode.TIMESTAMPS_ONLY) for item in items]
    record = delivered_record(GroundingMode.TIMESTAMPS_ONLY, items, episodes)
    assert record.questions == len(items) and record.sessions_with_date_like_content > 0
