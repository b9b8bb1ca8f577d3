from __future__ import annotations

import pyarrow as pa
import pytest

from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.queries import metrics_of
from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.storage.evaluation import scored_turns, write_predictions
from chronoscope_dagster.warehouse import Warehouse

STRINGS = pa.list_(pa.string())
TURNS = pa.schema(
    [
        ("chain_id", pa.string()),
        ("family", pa.string()),
        ("chain_length", pa.int16()),
        ("turn_index", pa.int16()),
        ("answer", pa.string()),
        ("answer_kind", pa.string()),
        ("gold_labels", STRINGS),
        ("gold_aliases", STRINGS),
        ("present_labels", STRINGS),
        ("drift_eligible", pa.bool_()),
        ("is_explicit", pa.bool_()),
        ("rival_labels", STRINGS),
        ("scope_dependent", pa.bool_()),
    ]
)
CHAIN = [  # (answer, kind, rivals, prediction): turn 0 is not scored
    ("Bill Clinton", "entity", ["George H. W. Bush"], "Bill Clinton"),
    ("Bill Clinton", "entity", ["Donald Trump"], "Bill Clinton or Donald Trump"),
    ("yes", "yes_no", [], "yes or no"),
    ("2", "count", [], "2 (from 2005 to 2010)"),
]


@pytest.fixture
def warehouse(tmp_path) -> Warehouse:
    home = Warehouse(tmp_path)
    turns = [
        {
            "chain_id": "c1", "family": "narrative", "chain_length": len(CHAIN), "turn_index": i,
            "answer": answer, "answer_kind": kind,
            "gold_labels": [answer] if kind == "entity" else [], "gold_aliases": [],
            "present_labels": [], "drift_eligible": False, "is_explicit": i == 0,
            "rival_labels": rivals, "scope_dependent": False,
        }
        for i, (answer, kind, rivals, _) in enumerate(CHAIN)
    ]  # fmt: skip
    home.write_table("turns", pa.Table.from_pylist(turns, schema=TURNS))
    predictions = [
        {"chain_id": "c1", "turn_index": i, "scored": i > 0, "prediction": prediction,
         "candidates": [prediction], "error": None}
        for i, (*_, prediction) in enumerate(CHAIN)
    ]  # fmt: skip
    write_predictions(
        home,
        "predictions",
        pa.Table.from_pylist(predictions),
        first_scored_turn=1,
        identity={},
        model="m",
        setting=Setting.GOLD_CONTEXT,
    )
    return home


def test_scored_turns_read_the_rivals_and_metrics_count_the_hedges(warehouse):
    read = scored_turns(warehouse, "predictions", "m", Setting.GOLD_CONTEXT)
    turns = score_turns(read, "relaxed")
    assert turns["answer_kind"].to_pylist() == ["entity", "yes_no", "count"]
    assert turns["correct_at1"].to_pylist() == [False, False, True]
    assert turns["hedged_at1"].to_pylist() == [True, True, False]
    for mode, hedged in (("relaxed", 2), ("exact", 0), ("reference", 0)):
        _, scored, counted = metrics_of(
            read, "m", Setting.GOLD_CONTEXT, match_mode=mode, bootstrap=0, seed=0
        )
        assert (scored, counted) == (3, hedged), mode
