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

Every field read is validated first, so one bad line never stops the import: a line is a
chain or is rejected, counted as ``rejected:<reason>`` (``bad_json``, ``not_an_object``,
``no_turns``, ``missing_field:<f>``, ``empty:<f>``, ``bad_type:<f>``, ``bad_value:<f>``,
``out_of_range:<f>``; a turn's field is named without its index), and ``chains`` plus the
rejections equal ``lines`` (the non-blank lines). Years lie in -9999..9999.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Annotated, Literal

import orjson
import pyarrow as pa
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from chronoscope_dagster.chains.explicit import explicit_question, slot_and_values
from chronoscope_dagster.chains.model import Turn
from chronoscope_dagster.chains.records import MERGED_TURNS_SCHEMA
from chronoscope_dagster.chains.templates import Templates, default_templates

YEAR = re.compile(r"\b(1[0-9]|20)\d\d\b")
MAX_YEAR = 9999
MAX_TURNS = 1000
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _not_a_bool(value: object) -> object:
    if isinstance(value, bool):
        raise PydanticCustomError("bool_not_a_year", "a year, not true or false")
    return value


def _real_day(anchor: str) -> str:
    if _DAY.match(anchor):
        try:
            date.fromisoformat(anchor)
        except ValueError:
            raise PydanticCustomError(
                "bad_value", "no such day: {anchor}", {"anchor": anchor}
            ) from None
    return anchor


Year = Annotated[int, BeforeValidator(_not_a_bool), Field(ge=-MAX_YEAR, le=MAX_YEAR)]
Name = Annotated[str, Field(min_length=1)]
Anchor = Annotated[str, AfterValidator(_real_day)]


class _TurnLine(BaseModel):
    """The fields of a turn that import reads (others are ignored); null is absent."""

    model_config = ConfigDict(extra="ignore")

    question: Name
    answer: str
    pid: Name
    year: Year | None = None
    scope_end_year: Year | None = None
    scope_anchor: Anchor | None = None
    answer_kind: Literal["entity", "yes_no", "count"] | None = None
    subject_qid: str | None = None
    subject_label: str | None = None
    value_qid: str | None = None
    value_label: str | None = None
    present_day_answer: str | None = None
    present_day_value_qid: str | None = None
    drift_eligible: bool | None = None
    is_explicit: bool | None = None
    scope_dependent: bool | None = None
    gold_qids: list[str] | None = None
    gold_labels: list[str] | None = None
    gold_aliases: list[str] | None = None
    present_day_value_qids: list[str] | None = None
    present_day_answers: list[str] | None = None
    rival_labels: list[str] | None = None
    asked_qid: str | None = None
    asked_label: str | None = None
    explicit_question: str | None = None


class _ChainLine(BaseModel):
    model_config = ConfigDict(extra="ignore")

    chain_id: Name
    family: Name
    snapshot_year: Year | None = None
    anchor_date: str | None = None
    present_day_answer: str | dict[str, str | None] | None = None
    turns: Annotated[list[_TurnLine], Field(max_length=MAX_TURNS)]


_REASONS = {
    "missing": "missing_field",
    "string_too_short": "empty",
    "greater_than_equal": "out_of_range",
    "less_than_equal": "out_of_range",
    "int_parsing_size": "out_of_range",
    "finite_number": "out_of_range",
    "too_long": "out_of_range",
    "literal_error": "bad_value",
    "bad_value": "bad_value",
}


def _rejection(error: ValidationError) -> str:
    """The reason of a line's first error, named by field (a turn's without its index)."""
    first = error.errors()[0]
    where = first["loc"]
    if not where:
        return "not_an_object"
    field = where[2] if where[0] == "turns" and len(where) > 2 else where[0]
    return f"{_REASONS.get(first['type'], 'bad_type')}:{field}"


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
                record = _ChainLine.model_validate(orjson.loads(line))
            except orjson.JSONDecodeError:
                counts["rejected:bad_json"] += 1
                continue
            except ValidationError as error:
                counts[f"rejected:{_rejection(error)}"] += 1
                continue
            if not record.turns:
                counts["rejected:no_turns"] += 1
                continue
            counts["chains"] += 1
            turns = [_turn(record, turn) for turn in record.turns]
            anchors = [t["scope_anchor"] for t in turns]
            head = {
                "snapshot_year": record.snapshot_year,
                "chain_id": record.chain_id,
                "family": record.family,
                "anchor": record.anchor_date or anchors[0] or "timeless",
                "chain_length": len(turns),
                "scope_shifts": sum(a != b for a, b in itertools.pairwise(anchors)),
                "implicit_share": sum(not t["is_explicit"] for t in turns) / len(turns),
                "span_years": max(
                    (
                        abs((record.snapshot_year or y) - y)
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


def _turn(record: _ChainLine, turn: _TurnLine) -> dict:
    year = turn.year
    value_qid, present_qid = turn.value_qid, turn.present_day_value_qid
    is_explicit = (
        turn.is_explicit
        if turn.is_explicit is not None
        else bool(year is not None and YEAR.search(turn.question))
    )
    return {
        "question": turn.question,
        "answer": turn.answer,
        "answer_kind": turn.answer_kind or "entity",
        "pid": turn.pid,
        "subject_qid": turn.subject_qid or "",
        "subject_label": turn.subject_label or "",
        "gold_qids": turn.gold_qids if turn.gold_qids is not None
        else [value_qid] if value_qid else [],
        "gold_labels": turn.gold_labels if turn.gold_labels is not None
        else [turn.value_label or turn.answer],
        "gold_aliases": turn.gold_aliases or [],
        "canonical_qid": value_qid,
        "asked_qid": turn.asked_qid,
        "asked_label": turn.asked_label,
        "scope_year": year,
        "scope_end_year": turn.scope_end_year,
        "scope_anchor": turn.scope_anchor or (str(year) if year is not None else None),
        "is_explicit": is_explicit,
        "present_qids": turn.present_day_value_qids if turn.present_day_value_qids is not None
        else [present_qid] if present_qid else [],
        # this project's export holds the list, even empty; the authors' a label per turn or chain
        "present_labels": turn.present_day_answers if turn.present_day_answers is not None
        else _present_label(record, turn),
        "drift_eligible": bool(turn.drift_eligible),
        "explicit_question": turn.explicit_question,
        "rival_labels": turn.rival_labels or [],
        "scope_dependent": turn.scope_dependent if turn.scope_dependent is not None
        else bool(turn.drift_eligible) and not is_explicit,
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


def _present_label(record: _ChainLine, turn: _TurnLine) -> list[str]:
    if turn.present_day_answer:
        return [turn.present_day_answer]
    chain_level = record.present_day_answer
    if isinstance(chain_level, str) and chain_level:
        return [chain_level]
    if isinstance(chain_level, dict) and chain_level.get(turn.pid):
        return [str(chain_level[turn.pid])]
    return []
