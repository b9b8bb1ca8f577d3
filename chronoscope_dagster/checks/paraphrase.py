"""The paraphrased subset's gate: every accepted paraphrase passes the answer-equivalence
filter when it is recomputed from the stored turns and labels, and the kept chains are
exactly those with every turn accepted."""

import dagster as dg
import pyarrow.parquet as pq

from chronoscope_dagster.paraphrase.filter import turn_problems
from chronoscope_dagster.paraphrase.tables import entity_names, turns_for_paraphrase
from chronoscope_dagster.storage.paraphrase import turns_and_labels
from chronoscope_dagster.warehouse import Warehouse, parquet_source


@dg.asset_check(
    asset="paraphrased_subset",
    blocking=True,
    description="Recomputed from turns and labels: every turn of every chosen chain has one "
    "row whose original is the turn's question; every accepted paraphrase passes the filter "
    "(keeps the years, entities, subject and property words, adds no year to an implicit turn, "
    "no present-time word, entity, meta-text or answer, differs from the original and is a "
    "question); kept chains are those with every turn accepted.",
)
def paraphrases_pass_filter(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    path = warehouse.data_path("paraphrased_subset")
    rows = pq.read_table(path).to_pylist()
    turns, labels = turns_and_labels(warehouse, f"SELECT chain_id FROM {parquet_source(path)}")
    inputs = {
        (t.chain_id, t.turn_index): t for t in turns_for_paraphrase(turns, entity_names(labels))
    }
    problems: list[str] = []
    seen: set[tuple[str, int]] = set()
    all_accepted: dict[str, bool] = {}
    kept: dict[str, bool] = {}
    for row in rows:
        key = (row["chain_id"], row["turn_index"])
        where = f"turn {key[1]} of {key[0]}"
        if key in seen:
            problems.append(f"{where}: more than one row")
        seen.add(key)
        turn = inputs.get(key)
        if turn is None:
            problems.append(f"{where}: no such turn")
            continue
        if row["original_question"] != turn.question:
            problems.append(f"{where}: original {row['original_question']!r} is not the question")
        accepted = row["status"] == "accepted"
        if accepted != (row["paraphrase"] is not None):
            problems.append(
                f"{where}: status {row['status']} with paraphrase {row['paraphrase']!r}"
            )
        if accepted and row["paraphrase"] is not None:
            failed = turn_problems(turn, row["paraphrase"])
            if failed:
                problems.append(f"{where}: {row['paraphrase']!r} fails {', '.join(failed)}")
        all_accepted[key[0]] = all_accepted.get(key[0], True) and accepted
        kept[key[0]] = kept.get(key[0], True) and row["chain_kept"]
    problems += [f"turn {i} of {c}: no row" for c, i in sorted(inputs.keys() - seen)]
    problems += [
        f"chain {chain_id}: kept is {kept[chain_id]}, every turn accepted is {ok}"
        for chain_id, ok in sorted(all_accepted.items())
        if kept[chain_id] != ok
    ]
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={
            "turns": len(rows),
            "accepted_rechecked": sum(r["status"] == "accepted" for r in rows),
            "kept_chains": sum(kept.values()),
            "problems": dg.MetadataValue.json(problems[:50]),
        },
    )
