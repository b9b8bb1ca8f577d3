"""Claims and labels from the lines of a Wikidata JSON dump.

Every line is accounted for. A line is structural (the array's brackets or a
blank line), an entity, or rejected (``bad_encoding``, ``bad_json``,
``not_an_entity``: valid JSON without a string ``id``, ``malformed_id``).
Entities that are not items (properties, lexemes) are counted and skipped.

For an item, each statement of an extracted property is kept or dropped with a
reason: ``deprecated`` (rank), ``somevalue_value`` / ``novalue_value`` (no
item as main value), ``non_item_value`` (a string, time, quantity, property or
lexeme value), ``malformed_value`` (an item value without a usable numeric id,
or whose ``id`` and ``numeric-id`` disagree), ``malformed_statement`` (no
main snak), ``invalid_time`` (a time qualifier that is not a real date, see
``times``). So ``statements_seen = statements_kept + statements_dropped``.

A kept statement keeps its rank, its id, the earliest start (P580), the latest
end (P582), the earliest point in time (P585) and the entity and ordinal
qualifiers of the property list. A ``somevalue`` end ("ended, date unknown")
sets ``end_unknown``; it is not the same as no end. Self-loops are kept here
and dropped, counted, by the truth stage. Statements are kept whether or not
their items have English labels: labels are joined downstream.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import orjson
import pyarrow as pa

from chronoscope_dagster.wikidata.properties import PropertyCatalog, default_catalog
from chronoscope_dagster.wikidata.times import InvalidTime, WikidataTime, parse_time

QID = re.compile(r"Q[1-9][0-9]*")
LINE_REJECTS = ("bad_encoding", "bad_json", "not_an_entity", "malformed_id")
STATEMENT_DROPS = (
    "deprecated",
    "somevalue_value",
    "novalue_value",
    "non_item_value",
    "malformed_value",
    "malformed_statement",
    "invalid_time",
)
STRUCTURAL = (b"", b"[", b"]")
_TRAILING_SPACE = frozenset(b" \t\r\n")
_COMMA = ord(",")
_TIME_FIELDS = ("date", "precision", "calendar")


def claims_schema(catalog: PropertyCatalog) -> pa.Schema:
    fields = [
        pa.field("subject_qid", pa.string(), nullable=False),
        pa.field("pid", pa.string(), nullable=False),
        pa.field("value_qid", pa.string(), nullable=False),
        pa.field("rank", pa.string(), nullable=False),
        pa.field("statement_id", pa.string()),
    ]
    for name in ("start", "end", "point_in_time"):
        fields += [
            pa.field(f"{name}_date", pa.date32()),
            pa.field(f"{name}_precision", pa.int8()),
            pa.field(f"{name}_calendar", pa.string()),
        ]
    fields.append(pa.field("end_unknown", pa.bool_(), nullable=False))
    fields += [pa.field(column, pa.list_(pa.string())) for column in catalog.list_columns]
    return pa.schema(fields)


LABELS_SCHEMA = pa.schema(
    [
        pa.field("qid", pa.string(), nullable=False),
        pa.field("label", pa.string()),
        pa.field("description", pa.string()),
        pa.field("aliases", pa.list_(pa.string())),
    ]
)


@dataclass
class ChunkResult:
    """What one chunk of lines produced: the rows and the counts."""

    claims: pa.Table
    labels: pa.Table
    counts: Counter[str] = field(default_factory=Counter)


_RANKS = frozenset(("preferred", "normal", "deprecated"))
_SPECIAL_SNAK = {"somevalue": "dropped:somevalue_value", "novalue": "dropped:novalue_value"}


class _Rejected(Exception):
    def __init__(self, reason: str):
        self.reason = reason


class Extractor:
    """Turns dump lines into claim and label rows, counting everything it sees."""

    def __init__(self, catalog: PropertyCatalog | None = None):
        self.catalog = catalog or default_catalog()
        self.schema = claims_schema(self.catalog)
        self._pids = self.catalog.pids
        self._time_slots = {pid: i for i, pid in enumerate(self.catalog.time_qualifiers)}
        self._end_slot = list(self.catalog.time_qualifiers.values()).index("end")
        list_pids = [*self.catalog.entity_qualifiers, *self.catalog.ordinal_qualifiers]
        self._list_slots = {pid: i for i, pid in enumerate(list_pids)}
        self._no_qualifiers = (None,) * (3 * len(self._time_slots)) + (False,)
        self._no_qualifiers += (None,) * len(self._list_slots)
        self._time_cache: dict[tuple, WikidataTime | InvalidTime] = {}

    def extract_lines(self, lines: list[bytes]) -> ChunkResult:
        counts: Counter[str] = Counter()
        rows: list[tuple] = []
        labels: dict[str, list] = {name: [] for name in LABELS_SCHEMA.names}
        counts["lines"] += len(lines)
        for raw in lines:
            end = len(raw)
            while end and raw[end - 1] in _TRAILING_SPACE:
                end -= 1
            if end <= 2 and raw.strip() in STRUCTURAL:
                counts["lines_structural"] += 1
                continue
            if raw[end - 1] == _COMMA:
                end -= 1
            line = memoryview(raw)[:end]  # no copy of a multi-kilobyte line
            try:
                entity = orjson.loads(line)
            except orjson.JSONDecodeError:
                counts[f"rejected:{_decode_failure(bytes(line))}"] += 1
                continue
            entity_id = entity.get("id") if isinstance(entity, dict) else None
            if not isinstance(entity_id, str):
                counts["rejected:not_an_entity"] += 1
                continue
            is_item = entity_id.startswith("Q")
            if is_item and QID.fullmatch(entity_id) is None:
                counts["rejected:malformed_id"] += 1
                continue
            counts["entities_seen"] += 1
            if not is_item:
                counts["entities_skipped_non_item"] += 1
                continue
            counts["items"] += 1
            self._labels(entity_id, entity, labels, counts)
            self._statements(entity_id, entity.get("claims"), rows, counts)
        columns = list(zip(*rows, strict=True)) if rows else [[] for _ in self.schema.names]
        return ChunkResult(
            claims=pa.Table.from_arrays(
                [
                    pa.array(column, type=f.type)
                    for column, f in zip(columns, self.schema, strict=True)
                ],
                schema=self.schema,
            ),
            labels=pa.table(labels, schema=LABELS_SCHEMA),
            counts=counts,
        )

    def _labels(self, qid: str, entity: dict, out: dict[str, list], counts: Counter) -> None:
        label = _english(entity.get("labels"))
        aliases = entity.get("aliases")
        alias_list = aliases.get("en") if isinstance(aliases, dict) else None
        alias_values = [
            alias["value"]
            for alias in (alias_list if isinstance(alias_list, list) else ())
            if isinstance(alias, dict) and isinstance(alias.get("value"), str)
        ]
        if label is None and not alias_values:
            counts["items_without_english_label"] += 1
            return
        out["qid"].append(qid)
        out["label"].append(label)
        out["description"].append(_english(entity.get("descriptions")))
        out["aliases"].append(alias_values)

    def _statements(self, qid: str, claims: object, rows: list[tuple], counts: Counter) -> None:
        if not isinstance(claims, dict):
            if claims:  # old dumps write an empty claims object as []
                counts["items_with_malformed_claims"] += 1
            return
        seen = kept = 0
        for pid in self._pids:
            statements = claims.get(pid)
            if not statements:
                continue
            if not isinstance(statements, list):
                seen += 1
                counts["dropped:malformed_statement"] += 1
                continue
            for statement in statements:
                seen += 1
                try:
                    rows.append((qid, pid, *self._statement(statement, counts)))
                except _Rejected as rejected:
                    counts[rejected.reason] += 1
                    continue
                kept += 1
        counts["statements_seen"] += seen
        counts["statements_kept"] += kept

    def _statement(self, statement: object, counts: Counter) -> tuple:
        """The columns after subject and pid, or ``_Rejected`` with the reason."""
        if not isinstance(statement, dict):
            raise _Rejected("dropped:malformed_statement")
        mainsnak = statement.get("mainsnak")
        rank = statement.get("rank") or "normal"
        if not isinstance(mainsnak, dict) or not isinstance(rank, str) or rank not in _RANKS:
            raise _Rejected("dropped:malformed_statement")
        if rank == "deprecated":
            raise _Rejected("dropped:deprecated")
        snaktype = mainsnak.get("snaktype", "value")
        if snaktype != "value":
            special = _SPECIAL_SNAK.get(snaktype) if isinstance(snaktype, str) else None
            raise _Rejected(special or "dropped:malformed_statement")
        head = (_item_value(mainsnak), rank, _string_or_none(statement.get("id")))
        qualifiers = statement.get("qualifiers")
        if not qualifiers or not isinstance(qualifiers, dict):
            return head + self._no_qualifiers
        times = [None] * (3 * len(self._time_slots))
        lists: list[list[str] | None] = [None] * len(self._list_slots)
        unknown_end = False
        for pid, snaks in qualifiers.items():
            if not isinstance(snaks, list):
                continue
            slot = self._time_slots.get(pid)
            if slot is not None:
                parsed: list[WikidataTime] = []
                for snak in snaks:
                    kind = snak.get("snaktype", "value") if isinstance(snak, dict) else None
                    if kind == "value":
                        parsed.append(self._time(_datavalue(snak)))
                    elif kind == "somevalue":
                        unknown_end = unknown_end or slot == self._end_slot
                        counts[f"qualifier_somevalue:{pid}"] += 1
                    elif kind == "novalue":
                        counts[f"qualifier_novalue:{pid}"] += 1
                if parsed:
                    if len(parsed) > 1:
                        counts[f"several_values:{pid}"] += 1
                    chosen = (max if slot == self._end_slot else min)(parsed, key=_epoch)
                    times[3 * slot : 3 * slot + 3] = (
                        chosen.epoch_day, chosen.precision, chosen.calendar,
                    )  # fmt: skip
                continue
            slot = self._list_slots.get(pid)
            if slot is None:
                continue
            values = []
            is_entity = pid in self.catalog.entity_qualifiers
            for snak in snaks:
                if not isinstance(snak, dict) or snak.get("snaktype", "value") != "value":
                    continue
                if is_entity:
                    try:
                        values.append(_item_value(snak))
                    except _Rejected:
                        counts[f"qualifier_not_item:{pid}"] += 1
                else:
                    value = _datavalue(snak)
                    if isinstance(value, str):
                        values.append(value)
            lists[slot] = values or None
        end_unknown = unknown_end and times[3 * self._end_slot] is None
        return (*head, *times, end_unknown, *lists)

    def _time(self, value: object) -> WikidataTime:
        """Parse a time value, memoized: real dumps repeat the same dates constantly."""
        try:
            precision, calendar = value.get("precision"), value.get("calendarmodel")
            key = (value["time"], precision, calendar, type(precision), type(calendar))
            cached = self._time_cache.get(key)
        except (TypeError, KeyError, AttributeError):
            key, cached = None, None
        if cached is None:
            try:
                cached = parse_time(value)
            except InvalidTime as error:
                cached = error
            if key is not None and len(self._time_cache) < 1_000_000:
                self._time_cache[key] = cached
        if isinstance(cached, InvalidTime):
            raise _Rejected("dropped:invalid_time")
        return cached


def _datavalue(snak: dict) -> object:
    datavalue = snak.get("datavalue")
    return datavalue.get("value") if isinstance(datavalue, dict) else None


def _epoch(time: WikidataTime) -> int:
    return time.epoch_day


def _item_value(snak: dict) -> str:
    datavalue = snak.get("datavalue")
    if not isinstance(datavalue, dict):
        raise _Rejected("dropped:malformed_value")
    value = datavalue.get("value")
    if datavalue.get("type") != "wikibase-entityid" or not isinstance(value, dict):
        raise _Rejected("dropped:non_item_value")
    entity_type = value.get("entity-type")
    if entity_type is not None and entity_type != "item":
        raise _Rejected("dropped:non_item_value")
    numeric_id = value.get("numeric-id")
    explicit_id = value.get("id")
    if isinstance(numeric_id, int) and not isinstance(numeric_id, bool) and numeric_id > 0:
        qid = f"Q{numeric_id}"
        if explicit_id is not None and explicit_id != qid:
            raise _Rejected("dropped:malformed_value")
        return qid
    if numeric_id is None and isinstance(explicit_id, str) and QID.fullmatch(explicit_id):
        return explicit_id
    raise _Rejected("dropped:malformed_value")


def _string_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _english(values: object) -> str | None:
    if not isinstance(values, dict):
        return None
    entry = values.get("en")
    if isinstance(entry, dict) and isinstance(entry.get("value"), str) and entry["value"]:
        return entry["value"]
    return None


def _decode_failure(line: bytes) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return "bad_encoding"
    return "bad_json"
