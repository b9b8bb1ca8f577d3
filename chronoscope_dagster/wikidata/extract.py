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
qualifiers of the property list.

The time-valued statements that bound an item's existence (the property
list's ``lifespan_properties``: birth, inception, death, dissolution) become
``lifespans`` rows: the date with its precision and calendar, of the best rank
of each property (preferred where any is, else normal; deprecated never). The
others are counted under ``lifespan_dropped:<reason>`` (``deprecated``,
``not_best_rank``, ``somevalue``, ``novalue``, ``non_time_value``,
``invalid_time``, ``malformed``), so ``lifespan_seen = lifespan_kept +
dropped``. A ``somevalue`` end ("ended, date unknown")
sets ``end_unknown``; it is not the same as no end. Self-loops are kept here
and dropped, counted, by the truth stage. Statements are kept whether or not
their items have English labels: labels are joined downstream.
"""

from __future__ import annotations

import gc
import re
from collections import Counter
from dataclasses import dataclass, field

import orjson
import pyarrow as pa
import simdjson

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
_OPEN_BRACE = ord("{")
_ENTITY_KEYS = ("id", "labels", "descriptions", "aliases", "claims")
_TERM_KEYS = frozenset(("labels", "descriptions", "aliases"))
_QUALIFIER_CACHE_SIZE = 1 << 14


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


LIFESPAN_DROPS = (
    "deprecated",
    "not_best_rank",
    "somevalue",
    "novalue",
    "non_time_value",
    "invalid_time",
    "malformed",
)
LIFESPANS_SCHEMA = pa.schema(
    [
        pa.field("qid", pa.string(), nullable=False),
        pa.field("pid", pa.string(), nullable=False),
        pa.field("bound", pa.string(), nullable=False),
        pa.field("date", pa.date32(), nullable=False),
        pa.field("precision", pa.int8(), nullable=False),
        pa.field("calendar", pa.string()),
        pa.field("rank", pa.string(), nullable=False),
    ]
)

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
    lifespans: pa.Table
    counts: Counter[str] = field(default_factory=Counter)


_RANKS = frozenset(("preferred", "normal", "deprecated"))
_SPECIAL_SNAK = {"somevalue": "dropped:somevalue_value", "novalue": "dropped:novalue_value"}


class _Rejected(Exception):
    def __init__(self, reason: str):
        self.reason = reason


class _NeedsFullParse(Exception):
    """A key the extractor reads appears twice: only a full parse resolves it as orjson does."""


@dataclass(frozen=True, slots=True)
class _QualifierOutcome:
    """The qualifier columns of a statement, or its rejection, with the counts they add."""

    columns: tuple
    counts: tuple[tuple[str, int], ...]
    rejection: str | None

    def apply(self, counts: Counter) -> tuple:
        for key, count in self.counts:
            counts[key] += count
        if self.rejection is not None:
            raise _Rejected(self.rejection)
        return self.columns


class Extractor:
    """Turns dump lines into claim and label rows, counting everything it sees.

    ``full_parses`` counts the lines that were not read lazily but parsed whole by orjson
    (malformed lines and the few shapes the lazy reader leaves to it).
    """

    def __init__(self, catalog: PropertyCatalog | None = None):
        self.catalog = catalog or default_catalog()
        self.schema = claims_schema(self.catalog)
        self._row_type = pa.struct(list(self.schema))
        self._pids = self.catalog.pids
        self._time_slots = {pid: i for i, pid in enumerate(self.catalog.time_qualifiers)}
        self._end_slot = list(self.catalog.time_qualifiers.values()).index("end")
        list_pids = [*self.catalog.entity_qualifiers, *self.catalog.ordinal_qualifiers]
        self._list_slots = {pid: i for i, pid in enumerate(list_pids)}
        self._no_qualifiers = (None,) * (3 * len(self._time_slots)) + (False,)
        self._no_qualifiers += (None,) * len(self._list_slots)
        self._time_cache: dict[tuple, WikidataTime | InvalidTime] = {}
        self._lifespan_bounds = dict(self.catalog.lifespan_properties)
        self._pid_set = frozenset((*self._pids, *self._lifespan_bounds))
        self._parser = simdjson.Parser()
        self._qualifier_cache: dict[bytes, _QualifierOutcome] = {}
        self.full_parses = 0

    def extract_lines(self, lines: list[bytes]) -> ChunkResult:
        """Rows and counts of the lines, with the cyclic garbage collector paused.

        Parsing allocates millions of short-lived containers and no reference cycles, so
        the collector's passes would only cost time (5 to 15% of it).
        """
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._extract_lines(lines)
        finally:
            if collecting:
                gc.enable()

    def _extract_lines(self, lines: list[bytes]) -> ChunkResult:
        counts: Counter[str] = Counter()
        rows: list[tuple] = []
        labels: dict[str, list] = {name: [] for name in LABELS_SCHEMA.names}
        lifespans: list[tuple] = []
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
            entity = self._lazy_entity(line)
            if entity is None:
                self.full_parses += 1
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
            self._lifespans(entity_id, entity.get("claims"), lifespans, counts)
        return ChunkResult(
            claims=pa.Table.from_struct_array(pa.array(rows, type=self._row_type)),
            labels=pa.table(labels, schema=LABELS_SCHEMA),
            lifespans=pa.Table.from_pylist(
                [dict(zip(LIFESPANS_SCHEMA.names, row, strict=True)) for row in lifespans],
                schema=LIFESPANS_SCHEMA,
            ),
            counts=counts,
        )

    def _lazy_entity(self, line: memoryview) -> dict | None:
        """What the extractor reads of an entity, or None where only orjson can say.

        simdjson validates the whole line but only the id, the English terms and the
        statements of extracted properties become Python objects, as orjson would make
        them. Lines that simdjson rejects or could read otherwise than orjson (a
        byte-order mark, integers beyond 64 bits, a key read here that appears twice)
        return None, so the caller parses them with orjson: rows, counts and rejection
        reasons stay those of a full parse.
        """
        if not line or line[0] != _OPEN_BRACE:
            return None
        try:
            document = self._parser.parse(line)
            return {
                key: self._lazy_field(key, value)
                for key, value in _unique_fields(document, _ENTITY_KEYS).items()
            }
        except (ValueError, RuntimeError, RecursionError, _NeedsFullParse):
            return None

    def _lazy_field(self, key: str, value: object) -> object:
        if type(value) is simdjson.Object:
            if key == "claims":
                return self._lazy_claims(value)
            if key in _TERM_KEYS:
                return {k: _plain(v) for k, v in _unique_fields(value, ("en",)).items()}
        return _plain(value)

    def _lazy_claims(self, claims: simdjson.Object) -> dict:
        out = {}
        for pid in list(claims):
            if pid not in self._pid_set:
                continue
            if pid in out:
                raise _NeedsFullParse
            statements = claims[pid]
            if type(statements) is simdjson.Array:
                out[pid] = [self._lazy_statement(statement) for statement in statements]
            else:
                out[pid] = _plain(statements)
        return out

    def _lazy_statement(self, statement: object) -> object:
        """``(mainsnak, rank, id, qualifiers)``, with qualifiers already interpreted."""
        if type(statement) is not simdjson.Object:
            return _plain(statement)
        names = list(statement)
        if len(set(names)) != len(names):
            raise _NeedsFullParse
        mainsnak = statement["mainsnak"] if "mainsnak" in names else None
        mainsnak = mainsnak.as_dict() if type(mainsnak) is simdjson.Object else _plain(mainsnak)
        rank = statement["rank"] if "rank" in names else None
        if type(rank) is not str:
            rank = _plain(rank)
        statement_id = statement["id"] if "id" in names else None
        if type(statement_id) is not str:
            statement_id = _plain(statement_id)
        if "qualifiers" not in names:
            return mainsnak, rank, statement_id, None
        qualifiers = statement["qualifiers"]
        if type(qualifiers) is simdjson.Object:
            return mainsnak, rank, statement_id, self._qualifier_outcome(qualifiers)
        return mainsnak, rank, statement_id, _plain(qualifiers)

    def _qualifier_outcome(self, qualifiers: simdjson.Object) -> _QualifierOutcome:
        """Memoized on the minified JSON, which tells apart every value (1 and 1.0 too)."""
        key = qualifiers.mini
        outcome = self._qualifier_cache.get(key)
        if outcome is None:
            counts: Counter[str] = Counter()
            try:
                columns, rejection = self._qualifier_columns(qualifiers.as_dict(), counts), None
            except _Rejected as rejected:
                columns, rejection = (), rejected.reason
            outcome = _QualifierOutcome(columns, tuple(counts.items()), rejection)
            if len(self._qualifier_cache) >= _QUALIFIER_CACHE_SIZE:
                self._qualifier_cache.clear()
            self._qualifier_cache[key] = outcome
        return outcome

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
                    rows.append(self._statement(qid, pid, statement, counts))
                except _Rejected as rejected:
                    counts[rejected.reason] += 1
                    continue
                kept += 1
        counts["statements_seen"] += seen
        counts["statements_kept"] += kept

    def _lifespans(self, qid: str, claims: object, rows: list[tuple], counts: Counter) -> None:
        if not isinstance(claims, dict):
            return
        for pid, bound in self._lifespan_bounds.items():
            statements = claims.get(pid)
            if not statements:
                continue
            if not isinstance(statements, list):
                statements = [None]
            kept: list[tuple] = []
            for statement in statements:
                counts["lifespan_seen"] += 1
                try:
                    kept.append((qid, pid, bound, *self._lifespan_date(statement)))
                except _Rejected as rejected:
                    counts[f"lifespan_dropped:{rejected.reason}"] += 1
            best = "preferred" if any(row[-1] == "preferred" for row in kept) else "normal"
            for row in kept:
                if row[-1] == best:
                    rows.append(row)
                    counts["lifespan_kept"] += 1
                else:
                    counts["lifespan_dropped:not_best_rank"] += 1

    def _lifespan_date(self, statement: object) -> tuple:
        """``(date, precision, calendar, rank)`` of a time-valued statement, or ``_Rejected``."""
        if type(statement) is tuple:
            mainsnak, rank = statement[0], statement[1]
        elif isinstance(statement, dict):
            mainsnak, rank = statement.get("mainsnak"), statement.get("rank")
        else:
            raise _Rejected("malformed")
        rank = rank or "normal"
        if not isinstance(mainsnak, dict) or rank not in _RANKS:
            raise _Rejected("malformed")
        if rank == "deprecated":
            raise _Rejected("deprecated")
        snaktype = mainsnak.get("snaktype", "value")
        if snaktype in ("somevalue", "novalue"):
            raise _Rejected(snaktype)
        datavalue = mainsnak.get("datavalue")
        if snaktype != "value" or not isinstance(datavalue, dict):
            raise _Rejected("malformed")
        if datavalue.get("type") != "time":
            raise _Rejected("non_time_value")
        try:
            time = self._time(datavalue.get("value"))
        except _Rejected:
            raise _Rejected("invalid_time") from None
        return time.epoch_day, time.precision, time.calendar, rank

    def _statement(self, qid: str, pid: str, statement: object, counts: Counter) -> tuple:
        """The row of a statement (parsed, or as ``_lazy_statement`` read it), or ``_Rejected``."""
        if type(statement) is tuple:
            mainsnak, rank, statement_id, qualifiers = statement
        elif isinstance(statement, dict):
            mainsnak, rank = statement.get("mainsnak"), statement.get("rank")
            statement_id, qualifiers = statement.get("id"), statement.get("qualifiers")
        else:
            raise _Rejected("dropped:malformed_statement")
        rank = rank or "normal"
        if not isinstance(mainsnak, dict) or not isinstance(rank, str) or rank not in _RANKS:
            raise _Rejected("dropped:malformed_statement")
        if rank == "deprecated":
            raise _Rejected("dropped:deprecated")
        snaktype = mainsnak.get("snaktype", "value")
        if snaktype != "value":
            special = _SPECIAL_SNAK.get(snaktype) if isinstance(snaktype, str) else None
            raise _Rejected(special or "dropped:malformed_statement")
        head = (qid, pid, _item_value(mainsnak), rank, _string_or_none(statement_id))
        if type(qualifiers) is _QualifierOutcome:
            return head + qualifiers.apply(counts)
        if not qualifiers or not isinstance(qualifiers, dict):
            return head + self._no_qualifiers
        return head + self._qualifier_columns(qualifiers, counts)

    def _qualifier_columns(self, qualifiers: dict, counts: Counter) -> tuple:
        """The time, ``end_unknown`` and list columns, or ``_Rejected`` (an invalid time)."""
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
        return (*times, end_unknown, *lists)

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


def _unique_fields(obj: simdjson.Object, keys: tuple[str, ...]) -> dict[str, object]:
    """The values of ``keys`` present in ``obj``; ``_NeedsFullParse`` if one appears twice."""
    names = list(obj)
    fields = {}
    for key in keys:
        found = names.count(key)
        if found == 1:
            fields[key] = obj[key]
        elif found:
            raise _NeedsFullParse
    return fields


def _plain(value: object) -> object:
    if type(value) is simdjson.Object:
        return value.as_dict()
    if type(value) is simdjson.Array:
        return value.as_list()
    return value


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
