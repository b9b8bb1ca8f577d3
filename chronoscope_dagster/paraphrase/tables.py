"""The paraphrase stage's tables: the filter's inputs from turns and labels, and one row per
paraphrased turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from chronoscope_dagster.paraphrase.filter import ParaphraseTurn
from chronoscope_dagster.paraphrase.rewrite import ParaphraseResult, kept_chains


def turns_for_paraphrase(
    turns: pa.Table, names: Mapping[str, Sequence[str]]
) -> list[ParaphraseTurn]:
    """Rows of a turns table as paraphrase inputs. ``names`` maps a QID to its label and
    aliases; the subject, the asked value, the gold and present-day values are candidate
    entities (only those the question names are checked), and an entity answer's gold labels
    and aliases must not appear. The subject's names are also the turn's ``subject``."""
    columns = [
        "chain_id", "turn_index", "question", "is_explicit", "answer_kind", "subject_qid",
        "subject_label", "asked_qid", "gold_qids", "gold_labels", "gold_aliases", "present_qids",
        "pid",
    ]  # fmt: skip
    items = []
    for row in turns.select(columns).to_pylist():
        entities: list[tuple[str, ...]] = [
            tuple(names.get(row["subject_qid"], ())) or (row["subject_label"],)
        ]
        for qid in [row["asked_qid"], *row["gold_qids"], *row["present_qids"]]:
            if qid and names.get(qid):
                entities.append(tuple(names[qid]))
        answers = (
            (*row["gold_labels"], *row["gold_aliases"]) if row["answer_kind"] == "entity" else ()
        )
        items.append(
            ParaphraseTurn(
                row["chain_id"],
                row["turn_index"],
                row["question"],
                tuple(entities),
                row["is_explicit"],
                answers,
                row["pid"],
                entities[0],
            )
        )
    return items


PARAPHRASES_SCHEMA = pa.schema(
    [
        pa.field("chain_id", pa.string(), nullable=False),
        pa.field("turn_index", pa.int16(), nullable=False),
        pa.field("original_question", pa.string(), nullable=False),
        pa.field("paraphrase", pa.string()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("reasons", pa.list_(pa.string()), nullable=False),
        pa.field("attempts", pa.int16(), nullable=False),
        pa.field("last_reply", pa.string()),
        pa.field("error", pa.string()),
        pa.field("chain_kept", pa.bool_(), nullable=False),
    ]
)


def paraphrases_table(results: Sequence[ParaphraseResult]) -> pa.Table:
    """One row per paraphrased turn, in (chain_id, turn_index) order; ``chain_kept`` marks the
    turns of chains every turn of which was accepted (``kept_chains``)."""
    kept = set(kept_chains(results))
    rows = [
        {
            "chain_id": r.chain_id,
            "turn_index": r.turn_index,
            "original_question": r.original,
            "paraphrase": r.paraphrase,
            "status": r.status,
            "reasons": list(r.reasons),
            "attempts": r.attempts,
            "last_reply": r.last_reply,
            "error": r.error,
            "chain_kept": r.chain_id in kept,
        }
        for r in sorted(results, key=lambda r: (r.chain_id, r.turn_index))
    ]
    return pa.Table.from_pylist(rows, schema=PARAPHRASES_SCHEMA)


def entity_names(labels: pa.Table) -> dict[str, tuple[str, ...]]:
    """QID -> its names for the filter: the label of the latest snapshot first, then the other
    snapshots' labels and every alias, without repeats. ``labels`` has the columns of the
    ``labels`` view (``qid``, ``label``, ``aliases``, ``snapshot_year``)."""
    names: dict[str, list[str]] = {}
    rows = labels.select(["qid", "snapshot_year", "label", "aliases"]).to_pylist()
    rows.sort(key=lambda row: (row["qid"], -int(row["snapshot_year"])))
    for row in rows:
        known = names.setdefault(row["qid"], [])
        for name in [row["label"], *(row["aliases"] or ())]:
            if name and name not in known:
                known.append(name)
    return {qid: tuple(found) for qid, found in names.items() if found}
