"""The embedded sample: curated facts and lifespans (TSV) rendered as official-layout
Wikidata dumps.

The format of the TSV files and the snapshot rule are in ``data/sample/README.md``.
Rendering is deterministic: the same files give byte-identical dumps (statement
ids and snak hashes are content hashes, gzip carries no timestamp).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from chronoscope_dagster.data import SAMPLE_DIR, SNAPSHOT_YEARS, sample_dump_path
from chronoscope_dagster.files import atomic_write
from chronoscope_dagster.wikidata.properties import default_catalog
from chronoscope_dagster.wikidata.times import GREGORIAN

ENTITY_HEADER = ["qid", "label", "description", "aliases"]
FACT_HEADER = ["subject", "pid", "value", "start", "end", "point", "rank", "qualifiers", "note"]
LIFESPAN_HEADER = ["qid", "pid", "date", "rank", "note"]
QID = re.compile(r"Q[1-9][0-9]*")
PID = re.compile(r"P[1-9][0-9]*")
DATE = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")
RANKS = {"": "normal", "preferred": "preferred", "deprecated": "deprecated"}
SPECIAL_VALUES = ("somevalue", "novalue")
ENTITY_BASE = "http://www.wikidata.org/entity/"
# English labels of the time-valued lifespan properties, for their property documents.
LIFESPAN_LABELS = {
    "P569": "date of birth",
    "P570": "date of death",
    "P571": "inception",
    "P576": "dissolved, abolished or demolished date",
}


class SampleError(ValueError):
    """The curated files are inconsistent; the message lists every problem."""


@dataclass(frozen=True)
class Date:
    """A curated date: the literal fields and the precision they imply."""

    year: int
    month: int
    day: int

    @classmethod
    def parse(cls, text: str) -> Date:
        match = DATE.fullmatch(text)
        if match is None:
            raise ValueError(f"bad date {text!r} (want YYYY, YYYY-MM or YYYY-MM-DD)")
        year, month, day = (int(part) if part else 0 for part in match.groups())
        if not 1 <= year <= 9999 or month > 12 or day > 31 or (month == 0 and day):
            raise ValueError(f"bad date {text!r}")
        if match.group(2) and month == 0:
            raise ValueError(f"bad date {text!r}")
        return cls(year, month, day)

    @property
    def precision(self) -> int:
        return 11 if self.day else 10 if self.month else 9

    @property
    def first_day(self) -> tuple[int, int, int]:
        return (self.year, self.month or 1, self.day or 1)

    @property
    def last_day(self) -> tuple[int, int, int]:
        return (self.year, self.month or 12, self.day or 31)

    def wikidata(self) -> str:
        return f"+{self.year:04d}-{self.month:02d}-{self.day:02d}T00:00:00Z"


@dataclass(frozen=True)
class Fact:
    source: str
    subject: str
    pid: str
    value: str
    start: Date | None
    end: Date | None
    end_unknown: bool
    point: Date | None
    rank: str
    qualifiers: tuple[tuple[str, str], ...]

    @property
    def is_time_qualified(self) -> bool:
        return bool(self.start or self.end or self.end_unknown or self.point)


@dataclass(frozen=True)
class Lifespan:
    """A time-valued statement of an entity itself: birth, death, inception, dissolution."""

    source: str
    qid: str
    pid: str
    date: Date
    rank: str


@dataclass
class Entity:
    qid: str
    label: str
    description: str = ""
    aliases: list[str] = field(default_factory=list)


@dataclass
class Sample:
    entities: dict[str, Entity]
    facts: list[Fact]
    lifespans: list[Lifespan] = field(default_factory=list)

    def stats(self) -> dict[str, object]:
        subjects = {fact.subject for fact in self.facts}
        return {
            "entities": len(self.entities),
            "subject_entities": len(subjects),
            "statements": len(self.facts),
            "time_qualified": sum(fact.is_time_qualified for fact in self.facts),
            "by_pid": dict(sorted(Counter(fact.pid for fact in self.facts).items())),
            "ranks": dict(Counter(fact.rank for fact in self.facts)),
            "special_values": dict(
                Counter(f.value for f in self.facts if f.value in SPECIAL_VALUES)
            ),
            "unknown_ends": sum(fact.end_unknown for fact in self.facts),
            "precisions": dict(
                Counter(
                    date.precision
                    for fact in self.facts
                    for date in (fact.start, fact.end, fact.point)
                    if date
                )
            ),
            "shared_labels": _shared_labels(self.entities, subjects),
            "lifespans": {
                "statements": len(self.lifespans),
                "entities": len({life.qid for life in self.lifespans}),
                "subjects_with_start": _with_role(self.lifespans, subjects, "start"),
                "subjects_with_end": _with_role(self.lifespans, subjects, "end"),
                "by_pid": dict(sorted(Counter(life.pid for life in self.lifespans).items())),
                "precisions": dict(
                    sorted(Counter(life.date.precision for life in self.lifespans).items())
                ),
            },
        }


def load_sample(directory: Path = SAMPLE_DIR) -> Sample:
    """Read and validate every TSV file; raise ``SampleError`` listing all problems."""
    problems: list[str] = []
    entities: dict[str, Entity] = {}
    for path in sorted((directory / "entities").glob("*.tsv")):
        for line_no, row in _rows(path, ENTITY_HEADER, problems):
            where = f"{path.name}:{line_no}"
            qid, label = row["qid"].strip(), row["label"].strip()
            if not QID.fullmatch(qid):
                problems.append(f"{where}: bad QID {qid!r}")
                continue
            if not label:
                problems.append(f"{where}: {qid} has no label")
                continue
            aliases = [a.strip() for a in row["aliases"].split("|") if a.strip()]
            known = entities.get(qid)
            if known is None:
                entities[qid] = Entity(qid, label, row["description"].strip(), aliases)
            elif known.label != label:
                problems.append(
                    f"{where}: {qid} labelled {label!r} here, {known.label!r} elsewhere"
                )
            else:
                known.description = known.description or row["description"].strip()
                known.aliases += [a for a in aliases if a not in known.aliases]
    facts: list[Fact] = []
    for path in sorted((directory / "facts").glob("*.tsv")):
        for line_no, row in _rows(path, FACT_HEADER, problems):
            where = f"{path.name}:{line_no}"
            try:
                fact = _fact(path.stem, row)
            except ValueError as error:
                problems.append(f"{where}: {error}")
                continue
            missing = [
                q
                for q in (
                    fact.subject,
                    fact.value,
                    *(v for p, v in fact.qualifiers if p != "P1545"),
                )
                if QID.fullmatch(q) and q not in entities
            ]
            if missing:
                problems.append(f"{where}: no entity row for {', '.join(missing)}")
                continue
            facts.append(fact)
    unknown_pids = sorted({f.pid for f in facts} - set(default_catalog().pids))
    if unknown_pids:
        problems.append(f"properties not in properties.yaml: {', '.join(unknown_pids)}")
    lifespans = _load_lifespans(directory / "lifespans", entities, problems)
    if problems:
        raise SampleError(f"{len(problems)} problem(s) in the sample:\n" + "\n".join(problems))
    return Sample(entities, facts, lifespans)


def _load_lifespans(
    directory: Path, entities: dict[str, Entity], problems: list[str]
) -> list[Lifespan]:
    lifespan_pids = default_catalog().lifespan_properties
    lifespans: list[Lifespan] = []
    seen: dict[tuple[str, str, Date], str] = {}
    for path in sorted(directory.glob("*.tsv")):
        for line_no, row in _rows(path, LIFESPAN_HEADER, problems):
            where = f"{path.name}:{line_no}"
            qid, pid, rank = row["qid"].strip(), row["pid"].strip(), row["rank"].strip()
            if not QID.fullmatch(qid):
                problems.append(f"{where}: bad QID {qid!r}")
                continue
            if qid not in entities:
                problems.append(f"{where}: no entity row for {qid}")
                continue
            if pid not in lifespan_pids:
                problems.append(
                    f"{where}: {pid!r} is not a lifespan property ({', '.join(lifespan_pids)})"
                )
                continue
            if rank not in RANKS:
                problems.append(f"{where}: bad rank {rank!r}")
                continue
            try:
                date = Date.parse(row["date"].strip())
            except ValueError as error:
                problems.append(f"{where}: {error}")
                continue
            key = (qid, pid, date)
            if key in seen:
                problems.append(f"{where}: {qid} {pid} {row['date'].strip()} repeats {seen[key]}")
                continue
            seen[key] = where
            lifespans.append(Lifespan(path.stem, qid, pid, date, RANKS[rank]))
    return lifespans


def _with_role(lifespans: list[Lifespan], subjects: set[str], role: str) -> int:
    roles = default_catalog().lifespan_properties
    return len({life.qid for life in lifespans if roles[life.pid] == role} & subjects)


def _rows(path: Path, header: list[str], problems: list[str]):
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        first = next(reader, None)
        if first != header:
            problems.append(f"{path.name}: header {first} != {header}")
            return
        for line_no, cells in enumerate(reader, start=2):
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                problems.append(f"{path.name}:{line_no}: {len(cells)} columns, want {len(header)}")
                continue
            yield line_no, dict(zip(header, cells, strict=True))


def _fact(source: str, row: dict[str, str]) -> Fact:
    subject, pid, value = row["subject"].strip(), row["pid"].strip(), row["value"].strip()
    if not QID.fullmatch(subject):
        raise ValueError(f"bad subject {subject!r}")
    if not PID.fullmatch(pid):
        raise ValueError(f"bad property {pid!r}")
    if not (QID.fullmatch(value) or value in SPECIAL_VALUES):
        raise ValueError(f"bad value {value!r}")
    if value == subject:
        raise ValueError(f"self-loop {subject} {pid}")
    rank = row["rank"].strip()
    if rank not in RANKS:
        raise ValueError(f"bad rank {rank!r}")
    start = Date.parse(row["start"].strip()) if row["start"].strip() else None
    end_text = row["end"].strip()
    end = Date.parse(end_text) if end_text and end_text != "?" else None
    point = Date.parse(row["point"].strip()) if row["point"].strip() else None
    if start and end and end.last_day < start.first_day:
        raise ValueError(f"end {end_text} before start {row['start']}")
    qualifiers = []
    for pair in filter(None, (p.strip() for p in row["qualifiers"].split(";"))):
        qualifier_pid, _, qualifier_value = pair.partition("=")
        qualifier_pid, qualifier_value = qualifier_pid.strip(), qualifier_value.strip()
        if qualifier_pid == "P1545":
            if not qualifier_value:
                raise ValueError(f"empty ordinal in {pair!r}")
        elif qualifier_pid not in default_catalog().entity_qualifiers or not QID.fullmatch(
            qualifier_value
        ):
            raise ValueError(f"bad qualifier {pair!r}")
        qualifiers.append((qualifier_pid, qualifier_value))
    return Fact(
        source,
        subject,
        pid,
        value,
        start,
        end,
        end_text == "?",
        point,
        RANKS[rank],
        tuple(qualifiers),
    )


def _shared_labels(entities: dict[str, Entity], subjects: set[str]) -> dict[str, list[str]]:
    by_label: dict[str, list[str]] = defaultdict(list)
    for qid in sorted(subjects, key=_qid_number):
        by_label[entities[qid].label].append(qid)
    return {label: qids for label, qids in sorted(by_label.items()) if len(qids) > 1}


def _qid_number(qid: str) -> int:
    return int(qid[1:])


# Rendering ----------------------------------------------------------------------------------


def snapshot_facts(sample: Sample, snapshot_year: str) -> list[Fact]:
    """The statements as Wikidata knew them on 31 December of the snapshot year."""
    cutoff = (int(snapshot_year), 12, 31)
    known = []
    for fact in sample.facts:
        if fact.start and fact.start.first_day > cutoff:
            continue
        if fact.point and fact.point.first_day > cutoff:
            continue
        if fact.end and fact.end.first_day > cutoff:
            fact = replace(fact, end=None)
        known.append(fact)
    return known


def snapshot_lifespans(sample: Sample, snapshot_year: str) -> list[Lifespan]:
    """The lifespan statements known on 31 December of the snapshot year: a date is
    known once its first day has come."""
    cutoff = (int(snapshot_year), 12, 31)
    return [life for life in sample.lifespans if life.date.first_day <= cutoff]


def render_dump(sample: Sample, snapshot_year: str) -> bytes:
    """The gzipped dump of one snapshot: a JSON array, one entity per line."""
    by_subject: dict[str, list[Fact]] = defaultdict(list)
    for fact in snapshot_facts(sample, snapshot_year):
        by_subject[fact.subject].append(fact)
    lives: dict[str, list[Lifespan]] = defaultdict(list)
    for life in snapshot_lifespans(sample, snapshot_year):
        lives[life.qid].append(life)
    modified = f"{snapshot_year}-12-31T00:00:00Z"
    documents = [
        _item_document(entity, by_subject.get(qid, []), modified, lives.get(qid, []))
        for qid, entity in sorted(sample.entities.items(), key=lambda item: _qid_number(item[0]))
    ]
    catalog = default_catalog()
    documents += [
        _property_document(pid, catalog.labels[pid], modified)
        for pid in sorted({fact.pid for fact in sample.facts}, key=lambda p: int(p[1:]))
    ]
    documents += [
        _property_document(pid, LIFESPAN_LABELS.get(pid, pid), modified, datatype="time")
        for pid in sorted({life.pid for life in sample.lifespans}, key=lambda p: int(p[1:]))
    ]
    lines = [orjson.dumps(document) for document in documents]
    text = b"[\n" + b",\n".join(lines) + b"\n]\n"
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(text)
    return buffer.getvalue()


def render_all(sample: Sample, years: tuple[str, ...] = SNAPSHOT_YEARS) -> dict[str, bytes]:
    return {year: render_dump(sample, year) for year in years}


def _terms(language_values: dict[str, str]) -> dict:
    return {lang: {"language": lang, "value": value} for lang, value in language_values.items()}


def _item_document(
    entity: Entity, facts: list[Fact], modified: str, lifespans: list[Lifespan] | None = None
) -> dict:
    claims: dict[str, list] = {}
    for fact in facts:
        claims.setdefault(fact.pid, []).append(_statement(fact))
    for life in lifespans or ():
        claims.setdefault(life.pid, []).append(_time_statement(life))
    return {
        "type": "item",
        "id": entity.qid,
        "labels": _terms({"en": entity.label}),
        "descriptions": _terms({"en": entity.description}) if entity.description else {},
        "aliases": {"en": [{"language": "en", "value": a} for a in entity.aliases]}
        if entity.aliases
        else {},
        "claims": claims,
        "sitelinks": {},
        "lastrevid": _number(entity.qid, modified) % 2_000_000_000 + 100_000_000,
        "modified": modified,
    }


def _property_document(
    pid: str, label: str, modified: str, datatype: str = "wikibase-item"
) -> dict:
    return {
        "type": "property",
        "datatype": datatype,
        "id": pid,
        "labels": _terms({"en": label}),
        "descriptions": {},
        "aliases": {},
        "claims": {},
        "lastrevid": _number(pid, modified) % 2_000_000_000 + 100_000_000,
        "modified": modified,
    }


def _statement(fact: Fact) -> dict:
    statement_key = "|".join(
        [fact.subject, fact.pid, fact.value, str(fact.start), str(fact.point), str(fact.qualifiers)]
    )
    statement_uuid = uuid.UUID(bytes=hashlib.sha1(statement_key.encode()).digest()[:16], version=4)
    qualifiers: dict[str, list] = {}
    for pid, date in (("P580", fact.start), ("P582", fact.end), ("P585", fact.point)):
        if date:
            qualifiers.setdefault(pid, []).append(_snak(pid, _time_value(date), "time"))
    if fact.end_unknown:
        qualifiers.setdefault("P582", []).append(_special_snak("P582", "somevalue", "time"))
    for pid, value in fact.qualifiers:
        if pid == "P1545":
            qualifiers.setdefault(pid, []).append(_snak(pid, value, "string"))
        else:
            qualifiers.setdefault(pid, []).append(_snak(pid, _item(value), "wikibase-item"))
    if fact.value in SPECIAL_VALUES:
        mainsnak = _special_snak(fact.pid, fact.value, "wikibase-item")
    else:
        mainsnak = _snak(fact.pid, _item(fact.value), "wikibase-item")
    statement: dict = {"mainsnak": mainsnak, "type": "statement"}
    if qualifiers:
        statement["qualifiers"] = qualifiers
        statement["qualifiers-order"] = list(qualifiers)
    statement["id"] = f"{fact.subject}${str(statement_uuid).upper()}"
    statement["rank"] = fact.rank
    return statement


def _time_statement(life: Lifespan) -> dict:
    """A time-valued statement (no qualifiers); its id is a hash of its content."""
    statement_key = "|".join(
        ["time", life.qid, life.pid, life.date.wikidata(), str(life.date.precision)]
    )
    statement_uuid = uuid.UUID(bytes=hashlib.sha1(statement_key.encode()).digest()[:16], version=4)
    return {
        "mainsnak": _snak(life.pid, _time_value(life.date), "time"),
        "type": "statement",
        "id": f"{life.qid}${str(statement_uuid).upper()}",
        "rank": life.rank,
    }


def _item(qid: str) -> dict:
    return {"entity-type": "item", "numeric-id": _qid_number(qid), "id": qid}


def _time_value(date: Date) -> dict:
    return {
        "time": date.wikidata(),
        "timezone": 0,
        "before": 0,
        "after": 0,
        "precision": date.precision,
        "calendarmodel": ENTITY_BASE + GREGORIAN,
    }


_DATAVALUE_TYPES = {"wikibase-item": "wikibase-entityid", "time": "time", "string": "string"}


def _snak(pid: str, value: object, datatype: str) -> dict:
    datavalue = {"value": value, "type": _DATAVALUE_TYPES[datatype]}
    return {
        "snaktype": "value",
        "property": pid,
        "hash": _hash(pid, datavalue),
        "datavalue": datavalue,
        "datatype": datatype,
    }


def _special_snak(pid: str, snaktype: str, datatype: str) -> dict:
    return {
        "snaktype": snaktype,
        "property": pid,
        "hash": _hash(pid, snaktype),
        "datatype": datatype,
    }


def _hash(*parts: object) -> str:
    return hashlib.sha1(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _number(*parts: str) -> int:
    return int.from_bytes(hashlib.sha1("|".join(parts).encode()).digest()[:8], "big")


def write_dumps(sample: Sample, years: tuple[str, ...] = SNAPSHOT_YEARS) -> list[Path]:
    written = []
    for year, data in render_all(sample, years).items():
        path = sample_dump_path(year)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as temporary:
            temporary.write_bytes(data)
        written.append(path)
    return written
