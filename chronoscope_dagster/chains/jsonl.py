"""The authors' JSON-lines chain format, both ways.

Export writes one chain per line with the fields of the released
``merged_scope_benchmark.jsonl`` (spec 3.9-3.10: chain_id, family,
snapshot_year, anchor_date, truth_type, difficulty, a chain-level
present_day_answer keyed by property, and per turn turn_id, turn_index,
question, answer, year, pid, subject/value label and QID, present-day answer
and QID, drift_eligible), plus this project's fields (gold sets, aliases,
scope, explicitness, answer kind), so nothing is lost on a round trip.

Import reads such a file, ours or the authors', into the ``turns`` table
layout. Fields the authors' file lacks are derived: the gold set is the
turn's value (QID and label), a turn is explicit when its question holds its
year, the scope is the turn's year; present-day values are read per turn
first and from the chain second; a turn without ``scope_dependent`` depends on its scope
when it is implicit and drift-eligible, and one without ``rival_labels`` has none. A line that is not a chain is counted by
reason, never dropped silently. A turn's explicit question (the ``explicit_scope``
setting's) is read from the file when it holds one (this project's export), else rendered
from the templates as for generated chains (``chains.explicit``, seeded by ``seed`` and the
chain id); where it cannot be (a property without templates, a yes/no turn whose asked
value has no label in the file) it is null and counted as ``no_explicit_question:<reason>``.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson
import pyarrow as pa

from chronoscope_dagster.chains.explicit import explicit_question, slot_and_values
from chronoscope_dagster.chains.model import Turn
from chronoscope_dagster.chains.records import MERGED_TURNS_SCHEMA
from chronoscope_dagster.chains.templates import Templates, default_templates

YEAR = re.compile(r"\b(1[0-9]|20)\d\d\b")


def export_chains(turns: pa.Table) -> Iterator[bytes]:
    """One JSON line per chain from a ``turns`` table (rows of a chain are consecutive)."""
    current: list[dict] = []
    for row in turns.to_pylist():
        if current and row["chain_id"] != current[0]["chain_id"]:
            yield _chain_line(current)
            current = []
        current.append(row)
    if current:
        yield _chain_line(current)


def _chain_line(rows: list[dict]) -> bytes:
    head = rows[0]
    record = {
        "chain_id": head["chain_id"],
        "family": head["family"],
        "snapshot_year": head.get("snapshot_year"),
        "anchor_date": head["anchor"],
        "truth_type": "timeless" if all(r["scope_year"] is None for r in rows) else "temporal",
        "difficulty": {
            "hops": len(rows),
            "temporal": any(r["scope_year"] is not None for r in rows),
            "analytic": any(r["answer_kind"] != "entity" for r in rows),
        },
        "present_day_answer": {
            r["pid"]: r["present_labels"][0] for r in rows if r["present_labels"]
        },
        "turns": [
            {
                "turn_id": f"{r['chain_id']}-{r['turn_index']}",
                "turn_index": r["turn_index"],
                "question": r["question"],
                "answer": r["answer"],
                "year": r["scope_year"],
                "pid": r["pid"],
                "subject_label": r["subject_label"],
                "subject_qid": r["subject_qid"],
                "value_label": r["answer"],
                "value_qid": r["canonical_qid"],
                "present_day_answer": r["present_labels"][0] if r["present_labels"] else None,
                "present_day_value_qid": r["present_qids"][0] if r["present_qids"] else None,
                "drift_eligible": r["drift_eligible"],
                "gold_qids": r["gold_qids"],
                "gold_labels": r["gold_labels"],
                "gold_aliases": r["gold_aliases"],
                "present_day_value_qids": r["present_qids"],
                "present_day_answers": r["present_labels"],
                "is_explicit": r["is_explicit"],
                "scope_anchor": r["scope_anchor"],
                "scope_end_year": r["scope_end_year"],
                "answer_kind": r["answer_kind"],
                "asked_qid": r["asked_qid"],
                "asked_label": r["asked_label"],
                "explicit_question": r.get("explicit_question"),
                "rival_labels": r["rival_labels"],
                "scope_dependent": r["scope_dependent"],
            }
            for r in rows
        ],
    }
    return orjson.dumps(record)


def write_jsonl(lines: Iterable[bytes], path: Path) -> int:
    count = 0
    with path.open("wb") as out:
        for line in lines:
            out.write(line + b"\n")
            count += 1
    return count


def import_chains(
    path: Path, templates: Templates | None = None, seed: int = 42
) -> tuple[pa.Table, Counter[str]]:
    """Read a chains JSON-lines file into the turns layout; return it and the counts.
    ``templates`` (default: English) render the explicit questions the file lacks."""
    templates = templates or default_templates()
    counts: Counter[str] = Counter()
    rows: list[dict] = []
    with path.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            counts["lines"] += 1
            try:
                record = orjson.loads(line)
                turns = [_turn(record, turn) for turn in record["turns"]]
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                counts[f"rejected:{type(error).__name__}"] += 1
                continue
            if not turns:
                counts["rejected:no_turns"] += 1
                continue
            counts["chains"] += 1
            anchors = [t["scope_anchor"] for t in turns]
            head = {
                "snapshot_year": record.get("snapshot_year"),
                "chain_id": str(record["chain_id"]),
                "family": str(record["family"]),
                "anchor": str(record.get("anchor_date") or anchors[0] or "timeless"),
                "chain_length": len(turns),
                "scope_shifts": sum(a != b for a, b in itertools.pairwise(anchors)),
                "implicit_share": sum(not t["is_explicit"] for t in turns) / len(turns),
                "span_years": max(
                    (
                        abs(int(record.get("snapshot_year") or y) - y)
                        for y in (t["scope_year"] for t in turns)
                        if y is not None
                    ),
                    default=0,
                ),
            }
            for index, turn in enumerate(turns):
                if turn["explicit_question"] is None:
                    turn["explicit_question"] = _explicit(
                        turn, templates, seed, head["chain_id"], index, counts
                    )
            rows += [{**head, "turn_index": index, **turn} for index, turn in enumerate(turns)]
    return pa.Table.from_pylist(rows, schema=MERGED_TURNS_SCHEMA), counts


def _turn(record: dict, turn: dict) -> dict:
    question, answer = str(turn["question"]), str(turn["answer"])
    year = turn.get("year")
    kind = turn.get("answer_kind") or "entity"
    value_qid = turn.get("value_qid")
    present_qid = turn.get("present_day_value_qid")
    gold_qids = turn.get("gold_qids", [value_qid] if value_qid else [])
    present_qids = turn.get("present_day_value_qids", [present_qid] if present_qid else [])
    present_labels = turn.get("present_day_answers")  # this project's export, even empty
    if present_labels is None:
        present_labels = _present_label(record, turn)
    is_explicit = (
        bool(turn["is_explicit"])
        if "is_explicit" in turn
        else bool(year is not None and YEAR.search(question))
    )
    return {
        "question": question,
        "answer": answer,
        "answer_kind": kind,
        "pid": str(turn["pid"]),
        "subject_qid": turn.get("subject_qid") or "",
        "subject_label": str(turn.get("subject_label") or ""),
        "gold_qids": gold_qids,
        "gold_labels": turn.get("gold_labels", [str(turn.get("value_label") or answer)]),
        "gold_aliases": turn.get("gold_aliases", []),
        "canonical_qid": turn.get("value_qid"),
        "asked_qid": turn.get("asked_qid"),
        "asked_label": turn.get("asked_label"),
        "scope_year": int(year) if year is not None else None,
        "scope_end_year": turn.get("scope_end_year"),
        "scope_anchor": turn.get("scope_anchor") or (str(year) if year is not None else None),
        "is_explicit": is_explicit,
        "present_qids": present_qids,
        "present_labels": present_labels,
        "drift_eligible": bool(turn.get("drift_eligible", False)),
        "explicit_question": turn.get("explicit_question"),
        "rival_labels": [str(label) for label in turn.get("rival_labels") or ()],
        "scope_dependent": bool(turn["scope_dependent"]) if "scope_dependent" in turn
        else bool(turn.get("drift_eligible", False)) and not is_explicit,
    }  # fmt: skip


def _explicit(
    row: dict, templates: Templates, seed: int, chain_id: str, index: int, counts: Counter[str]
) -> str | None:
    turn = Turn(
        question=row["question"], pid=row["pid"], subject_qid=row["subject_qid"],
        subject_label=row["subject_label"], gold_qids=tuple(row["gold_qids"]),
        gold_labels=tuple(row["gold_labels"]), gold_aliases=tuple(row["gold_aliases"]),
        answer=row["answer"], canonical_qid=row["canonical_qid"], scope_year=row["scope_year"],
        scope_anchor=row["scope_anchor"], is_explicit=row["is_explicit"],
        answer_kind=row["answer_kind"], scope_end_year=row["scope_end_year"],
        asked_qid=row["asked_qid"],
    )  # fmt: skip
    if turn.pid not in templates.properties:
        counts["no_explicit_question:no_templates"] += 1
        return None
    found = slot_and_values(turn, {})
    if isinstance(found, str):
        counts[f"no_explicit_question:{found}"] += 1
        return None
    return explicit_question(turn, templates, {}, seed=seed, chain_id=chain_id, turn_index=index)


def _present_label(record: dict, turn: dict) -> list[str]:
    if turn.get("present_day_answer"):
        return [str(turn["present_day_answer"])]
    chain_level = record.get("present_day_answer")
    if isinstance(chain_level, str) and chain_level:
        return [chain_level]
    if isinstance(chain_level, dict) and chain_level.get(turn.get("pid")):
        return [str(chain_level[turn["pid"]])]
    return []
