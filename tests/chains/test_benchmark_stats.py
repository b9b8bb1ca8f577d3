"""benchmark_stats' validity figures on hand-made chains, per family and overall."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from chronoscope_dagster.chains.stats import (
    OVERALL,
    STATS_COLUMNS,
    VALIDITY_COLUMNS,
    balance_misses,
    benchmark_stats_sql,
    missing_defining_kind_sql,
    repeated_questions_sql,
)

# (chain, family, question, answer, kind, explicit, drift-eligible, gold QIDs, canonical QID)
TURNS = [
    ("n1", "narrative", "In 2010, who led France?", "Sarkozy", "entity", True, True, ["Q1"], "Q1"),
    ("n1", "narrative", "Who led it then?", "Sarkozy", "entity", False, True, ["Q1"], "Q1"),
    ("n1", "narrative", "In 2013?", "Hollande", "entity", True, False, ["Q2"], "Q2"),
    (
        "n1",
        "narrative",
        "who led it then? ",
        "Hollande",
        "entity",
        False,
        False,
        ["Q2", "Q1"],
        "Q2",
    ),
    ("y1", "span", "Did X hold 2000-2004?", "yes", "yes_no", True, False, [], None),
    ("y1", "span", "And 2005-2009?", "yes", "yes_no", True, False, [], None),
    ("y2", "span", "Did Y hold 2000-2004?", "no", "yes_no", True, False, [], None),
    ("y2", "span", "And 2010-2014?", "yes", "yes_no", True, False, [], None),
    ("c1", "count", "How many in 2000-2004?", "2", "count", True, False, [], None),
    ("c1", "count", "And 2005-2009?", "3", "count", True, False, [], None),
    ("c1", "count", "And 2010-2014?", "2", "count", True, False, [], None),
]


def _stats() -> dict[str, dict]:
    names = ("chain_id", "family", "question", "answer", "answer_kind", "is_explicit",
             "drift_eligible", "gold_qids", "canonical_qid")  # fmt: skip
    rows = [dict(zip(names, t, strict=True)) for t in TURNS]
    index: dict[str, int] = {}
    for row in rows:
        row["turn_index"] = index[row["chain_id"]] = index.get(row["chain_id"], -1) + 1
        row["gold_labels"] = [row["answer"]] if row["answer_kind"] == "entity" else []
    turns = pa.Table.from_pylist(rows)  # noqa: F841  (read by DuckDB by name)
    lengths = {c: i + 1 for c, i in index.items()}
    chains = pa.Table.from_pylist(  # noqa: F841
        [
            {"chain_id": c, "family": f, "length": lengths[c], "scope_shifts": 1, "span_years": 4}
            for c, f in dict.fromkeys((r["chain_id"], r["family"]) for r in rows)
        ]
    )
    connection = duckdb.connect()
    cursor = connection.execute(benchmark_stats_sql("chains", "turns"))
    columns = [d[0] for d in cursor.description]
    assert columns == ["family", *STATS_COLUMNS, *VALIDITY_COLUMNS]
    stats = {row[0]: dict(zip(columns, row, strict=True)) for row in cursor.fetchall()}
    assert connection.execute(repeated_questions_sql("turns")).fetchall() == [
        ("narrative", "n1", 3, "who led it then? ")
    ]
    return stats


def test_validity_figures_per_family_and_overall():
    stats = _stats()
    assert list(stats) == ["count", "narrative", "span", OVERALL]
    narrative, span, count, overall = (stats[f] for f in ("narrative", "span", "count", OVERALL))
    assert (
        narrative["scored_turns"],
        narrative["scored_entity"],
        narrative["scored_implicit"],
    ) == (
        3,
        3,
        2,
    )
    assert narrative["drift_eligible_implicit_pct"] == 50.0
    # turn 1 copies Sarkozy (its gold), turn 2 does not, turn 3 copies Hollande
    assert narrative["copy_previous_ceiling_pct"] == round(100 * 2 / 3, 1)
    assert narrative["repeated_questions"] == 1, "case and outer spaces aside"
    assert (span["scored_yes_no"], span["yes_no_turns"], span["yes_pct"]) == (2, 4, 75.0)
    assert span["copy_previous_ceiling_pct"] == 50.0, "'yes' after 'yes' is a copy"
    assert span["drift_eligible_implicit_pct"] is None and span["modal_count_pct"] is None
    assert (count["scored_count"], count["count_turns"]) == (2, 3)
    assert count["modal_count_pct"] == round(100 * 2 / 3, 1)
    assert overall["chains"] == 4 and overall["scored_turns"] == 7
    assert overall["scored_entity"] + overall["scored_yes_no"] + overall["scored_count"] == 7
    assert overall["copy_previous_ceiling_pct"] == round(100 * 3 / 7, 1)
    assert overall["yes_pct"] == 75.0 and overall["repeated_questions"] == 1


def test_balance_targets_name_each_figure_outside_its_range():
    stats = _stats()
    misses = balance_misses(list(stats.values()))
    assert misses == [
        "count: modal_count_pct 66.7 outside [None, 50.0]",
        "span: yes_pct 75.0 outside [35.0, 65.0]",
        "overall: drift_eligible_implicit_pct 50.0 outside [70.0, None]",
        "overall: copy_previous_ceiling_pct 42.9 outside [None, 25.0]",
    ]
    balanced = {**stats["span"], "yes_pct": 50.0}
    assert balance_misses([balanced]) == []


def test_a_family_without_a_scored_turn_of_its_kind_is_found():
    turns = pa.Table.from_pylist(  # noqa: F841  (read by DuckDB by name)
        [
            {"family": "distinct_count", "answer_kind": "count", "turn_index": 0},
            {"family": "distinct_count", "answer_kind": "entity", "turn_index": 1},
            {"family": "interval_change", "answer_kind": "yes_no", "turn_index": 3},
            {"family": "carryover", "answer_kind": "entity", "turn_index": 1},
        ]
    )
    families = ("carryover", "distinct_count", "interval_change", "scope_switch")
    found = duckdb.connect().execute(missing_defining_kind_sql("turns", families)).fetchall()
    assert found == [("distinct_count", "count"), ("scope_switch", "entity")]
