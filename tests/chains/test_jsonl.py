"""The authors' JSON-lines chain format: export, import, and the round trip."""

import orjson

from chronoscope_dagster.chains.jsonl import export_chains, import_chains, write_jsonl

RELEASED_FIELDS = {
    "chain_id", "family", "snapshot_year", "anchor_date", "truth_type", "difficulty",
    "present_day_answer", "turns",
}  # fmt: skip
RELEASED_TURN_FIELDS = {
    "turn_id", "turn_index", "question", "answer", "year", "pid", "subject_label", "subject_qid",
    "value_label", "value_qid", "present_day_answer", "present_day_value_qid", "drift_eligible",
}  # fmt: skip


def test_round_trip_keeps_every_turn(sample_turns, tmp_path):
    turns = sample_turns
    path = tmp_path / "merged_scope_benchmark.jsonl"
    chains = write_jsonl(export_chains(turns), path)
    assert chains == len(set(turns["chain_id"].to_pylist()))
    first = orjson.loads(path.read_bytes().split(b"\n")[0])
    assert set(first) >= RELEASED_FIELDS
    assert set(first["turns"][0]) >= RELEASED_TURN_FIELDS
    imported, counts = import_chains(path)
    assert counts["chains"] == chains and counts["lines"] == chains
    assert imported.select(turns.column_names).to_pylist() == turns.to_pylist()


def test_reads_the_authors_records_and_counts_bad_lines(tmp_path):
    released = {
        "chain_id": "6f1c", "family": "carryover", "snapshot_year": 2022,
        "anchor_date": "2022-04-01", "truth_type": "temporal",
        "difficulty": {"hops": 2, "temporal": True, "analytic": False},
        "present_day_answer": {"P35": "Charles III"},
        "turns": [
            {"turn_id": "a", "turn_index": 0, "question": "In 2022, who was the head of government "
             "of the United Kingdom?", "answer": "Boris Johnson", "year": 2022, "pid": "P6",
             "subject_label": "United Kingdom", "subject_qid": "Q145", "value_label": "Boris Johnson",
             "value_qid": "Q180589", "present_day_answer": "Keir Starmer",
             "present_day_value_qid": "Q6383803", "drift_eligible": True},
            {"turn_id": "b", "turn_index": 1, "question": "Who was the head of state?",
             "answer": "Elizabeth II", "year": 2022, "pid": "P35", "subject_label": "United Kingdom",
             "subject_qid": None, "value_label": "Elizabeth II", "value_qid": None,
             "present_day_answer": None, "present_day_value_qid": None, "drift_eligible": True},
        ],
    }  # fmt: skip
    path = tmp_path / "released.jsonl"
    path.write_bytes(orjson.dumps(released) + b"\n{not json}\n" + b'{"chain_id": "x"}\n')
    table, counts = import_chains(path)
    assert counts == {
        "lines": 3,
        "chains": 1,
        "rejected:bad_json": 1,
        "rejected:missing_field:family": 1,
    }
    first, second = table.to_pylist()
    assert (
        first["gold_qids"] == ["Q180589"] and first["is_explicit"] and first["scope_year"] == 2022
    )
    assert first["present_labels"] == ["Keir Starmer"]
    assert second["gold_qids"] == [] and second["gold_labels"] == ["Elizabeth II"]
    assert not second["is_explicit"]
    assert second["present_labels"] == ["Charles III"]  # chain-level value, by property
