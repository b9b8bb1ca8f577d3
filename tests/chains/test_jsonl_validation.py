"""A malformed line of an imported chains file is rejected and counted by a named reason; the
rest of the file imports, and every line is accounted for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from chronoscope_dagster.chains.jsonl import import_chains

GOOD_TURN = {
    "turn_id": "t0", "turn_index": 0, "question": "In 2012, who was the head of government "
    "of the United Kingdom?", "answer": "David Cameron", "year": 2012, "pid": "P6",
    "subject_label": "United Kingdom", "subject_qid": "Q145", "value_label": "David Cameron",
    "value_qid": "Q192", "present_day_answer": "Keir Starmer",
    "present_day_value_qid": "Q6383803", "drift_eligible": True,
}  # fmt: skip
GOOD = {"chain_id": "good", "family": "carryover", "snapshot_year": 2022, "turns": [GOOD_TURN]}


def _without(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != key}


def _with_turn(**changes: Any) -> dict[str, Any]:
    return {**GOOD, "chain_id": "bad", "turns": [{**GOOD_TURN, **changes}]}


def _import(tmp_path: Path, *lines: bytes):
    path = tmp_path / "chains.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return import_chains(path)


def _rejected(counts) -> dict[str, int]:
    return {key: n for key, n in counts.items() if key.startswith("rejected:")}


def _assert_only_good_kept(tmp_path: Path, bad: bytes, reason: str) -> None:
    table, counts = _import(tmp_path, orjson.dumps(GOOD), bad)
    assert _rejected(counts) == {f"rejected:{reason}": 1}
    assert counts["lines"] == 2 and counts["chains"] == 1
    assert set(table.column("chain_id").to_pylist()) == {"good"}


def test_import_line_missing_chain_id_is_rejected_and_counted(tmp_path):
    bad = orjson.dumps(_without(GOOD, "chain_id"))
    _assert_only_good_kept(tmp_path, bad, "missing_field:chain_id")


def test_import_line_missing_family_is_rejected_and_counted(tmp_path):
    bad = orjson.dumps({**_without(GOOD, "family"), "chain_id": "bad"})
    _assert_only_good_kept(tmp_path, bad, "missing_field:family")


def test_import_line_with_numeric_subject_qid_is_rejected_and_counted(tmp_path):
    _assert_only_good_kept(
        tmp_path, orjson.dumps(_with_turn(subject_qid=5)), "bad_type:subject_qid"
    )


def test_import_line_with_text_scope_end_year_is_rejected_and_counted(tmp_path):
    bad = orjson.dumps(_with_turn(scope_end_year="x"))
    _assert_only_good_kept(tmp_path, bad, "bad_type:scope_end_year")


def test_import_line_with_year_1e30_is_rejected_as_out_of_range_and_counted(tmp_path):
    _assert_only_good_kept(tmp_path, b'{"chain_id": "bad", "family": "carryover", "turns": ['
        + orjson.dumps(GOOD_TURN).replace(b'"year":2012', b'"year":1e30') + b"]}",
        "out_of_range:year",
    )  # fmt: skip


WRONG = [
    (_with_turn(year=2012.5), "bad_type:year"),
    (_with_turn(year=True), "bad_type:year"),
    (_with_turn(year=99999), "out_of_range:year"),
    (_with_turn(scope_end_year=-100000), "out_of_range:scope_end_year"),
    ({**GOOD, "snapshot_year": "twenty"}, "bad_type:snapshot_year"),
    ({**GOOD, "snapshot_year": 10**12}, "out_of_range:snapshot_year"),
    ({**GOOD, "chain_id": 7}, "bad_type:chain_id"),
    ({**GOOD, "chain_id": ""}, "empty:chain_id"),
    ({**GOOD, "family": None}, "bad_type:family"),
    ({**GOOD, "anchor_date": 20220401}, "bad_type:anchor_date"),
    ({**GOOD, "present_day_answer": ["Keir Starmer"]}, "bad_type:present_day_answer"),
    ({**GOOD, "turns": {"0": GOOD_TURN}}, "bad_type:turns"),
    ({**GOOD, "turns": ["not a turn"]}, "bad_type:turns"),
    ({**GOOD, "turns": [GOOD_TURN] * 1001}, "out_of_range:turns"),
    (_without(GOOD, "turns"), "missing_field:turns"),
    ({**GOOD, "turns": [_without(GOOD_TURN, "question")]}, "missing_field:question"),
    ({**GOOD, "turns": [_without(GOOD_TURN, "answer")]}, "missing_field:answer"),
    ({**GOOD, "turns": [_without(GOOD_TURN, "pid")]}, "missing_field:pid"),
    (_with_turn(question=["In 2012?"]), "bad_type:question"),
    (_with_turn(answer=3), "bad_type:answer"),
    (_with_turn(pid=6), "bad_type:pid"),
    (_with_turn(subject_label={"en": "UK"}), "bad_type:subject_label"),
    (_with_turn(value_qid=192), "bad_type:value_qid"),
    (_with_turn(value_label=1), "bad_type:value_label"),
    (_with_turn(present_day_answer=1), "bad_type:present_day_answer"),
    (_with_turn(present_day_value_qid=1), "bad_type:present_day_value_qid"),
    (_with_turn(drift_eligible="maybe"), "bad_type:drift_eligible"),
    (_with_turn(is_explicit=[]), "bad_type:is_explicit"),
    (_with_turn(scope_dependent="perhaps"), "bad_type:scope_dependent"),
    (_with_turn(gold_qids="Q192"), "bad_type:gold_qids"),
    (_with_turn(gold_labels=[None]), "bad_type:gold_labels"),
    (_with_turn(gold_aliases=[1]), "bad_type:gold_aliases"),
    (_with_turn(present_day_value_qids=[1]), "bad_type:present_day_value_qids"),
    (_with_turn(present_day_answers="Keir Starmer"), "bad_type:present_day_answers"),
    (_with_turn(rival_labels=[{"x": 1}]), "bad_type:rival_labels"),
    (_with_turn(answer_kind="essay"), "bad_value:answer_kind"),
    (_with_turn(answer_kind=1), "bad_value:answer_kind"),
    (_with_turn(asked_qid=1), "bad_type:asked_qid"),
    (_with_turn(asked_label=1), "bad_type:asked_label"),
    (_with_turn(scope_anchor=2012), "bad_type:scope_anchor"),
    (_with_turn(scope_anchor="2012-13-45"), "bad_value:scope_anchor"),
    (_with_turn(explicit_question=1), "bad_type:explicit_question"),
]


@pytest.mark.parametrize(("record", "reason"), WRONG, ids=[reason for _, reason in WRONG])
def test_import_line_with_a_field_of_the_wrong_type_or_range_is_rejected_and_counted(
    tmp_path, record, reason
):
    _assert_only_good_kept(tmp_path, orjson.dumps(record), reason)


def test_every_import_line_is_accounted_for(tmp_path):
    lines = [
        orjson.dumps(GOOD),
        b"{not json}",
        b"[1, 2]",
        b"17",
        orjson.dumps({**GOOD, "chain_id": "no-turns", "turns": []}),
        *(orjson.dumps(record) for record, _ in WRONG),
        orjson.dumps({**GOOD, "chain_id": "good-2", "extra_field": {"kept": "ignored"}}),
    ]
    table, counts = _import(tmp_path, *lines)
    rejected = _rejected(counts)
    assert counts["lines"] == len(lines)
    assert counts["chains"] + sum(rejected.values()) == counts["lines"]
    assert counts["chains"] == 2 and set(table.column("chain_id").to_pylist()) == {"good", "good-2"}
    assert rejected["rejected:bad_json"] == 1
    assert rejected["rejected:not_an_object"] == 2
    assert rejected["rejected:no_turns"] == 1
