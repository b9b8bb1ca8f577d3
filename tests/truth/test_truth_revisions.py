"""Real data: truth built from each real revision of an entity matches an independent reading.

For every item of ../shared/wikidata-real/revisions.jsonl.gz, each revision becomes its own
snapshot; its truth at every anchor must equal what a straightforward Python reading of the
revision's dated statements says, so the truth changes between revisions exactly where the
revisions' dated facts do.
"""

import calendar
import gzip
import re
from collections import defaultdict
from datetime import date, timedelta

import orjson
import pytest

from chronoscope_dagster.wikidata.extract import Extractor
from chronoscope_dagster.wikidata.properties import default_catalog
from tests.truth_helpers import compute, day, year

TIME = re.compile(r"([+-]?)(\d+)-(\d\d)-(\d\d)T")
ANCHORS = [year(y) for y in range(1950, 2026)] + [
    day(f"{y}-{md}")
    for y in (2022, 2023, 2024, 2025)
    for md in ("01-01", "04-01", "07-01", "10-01")
]


class Skip(Exception):
    """A statement outside what the reading below covers (Julian days, years outside 1-9999)."""


def _span(snak: dict) -> tuple[date, date]:
    value = snak["datavalue"]["value"]
    match = TIME.match(value["time"])
    if match is None:
        raise ValueError("malformed")
    sign, y, m, d = match.group(1), int(match.group(2)), int(match.group(3)), int(match.group(4))
    precision = value.get("precision", 11)
    if (
        sign == "-"
        or not 1 <= y <= 9999
        or str(value.get("calendarmodel", "")).endswith("Q1985786")
    ):
        raise Skip
    if m == 0:
        precision = min(precision, 9)
    elif d == 0:
        precision = min(precision, 10)
    if m > 12 or (d and d > calendar.monthrange(y, m)[1]):
        raise ValueError("invalid")
    if precision >= 11:
        return date(y, m, d), date(y, m, d)
    if precision == 10:
        return date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1])
    if precision == 9:
        return date(y, 1, 1), date(y, 12, 31)
    unit = 10 ** (9 - precision)
    first = y // unit * unit
    if first < 1 or first + unit - 1 > 9999:
        raise Skip
    return date(first, 1, 1), date(first + unit - 1, 12, 31)


def _last_valid_day(end: tuple[date, date], starts: list[tuple[date, date]]) -> date:
    """A day-precision end is the first day the statement no longer holds, but for a
    one-day term (the end equals a day-precision start)."""
    first, last = end
    if first != last:
        return last
    start = min(starts) if starts else None
    if start is not None and start[0] == start[1] == first:
        return first
    return first - timedelta(days=1)


def expected_truth(entity: dict) -> tuple[dict, set]:
    """(anchor key, pid) -> set of values, and the pids this reading cannot judge."""
    subject = entity["id"]
    statements, skipped = defaultdict(list), set()
    claims = entity.get("claims") or {}
    for pid in default_catalog().pids:
        for st in claims.get(pid, []) if isinstance(claims, dict) else []:
            snak = st["mainsnak"]
            value = (snak.get("datavalue") or {}).get("value")
            if st.get("rank") == "deprecated" or snak.get("snaktype") != "value":
                continue
            if not isinstance(value, dict) or value.get("entity-type", "item") != "item":
                continue
            qid = f"Q{value['numeric-id']}"
            if qid == subject:
                continue
            qualifiers = st.get("qualifiers") or {}
            try:
                spans = {
                    q: [_span(s) for s in qualifiers.get(q, []) if s.get("snaktype") == "value"]
                    for q in ("P580", "P582", "P585")
                }
            except Skip:
                skipped.add(pid)
                continue
            except ValueError:
                continue  # the extractor drops a statement with an invalid date
            unknown_end = any(s.get("snaktype") == "somevalue" for s in qualifiers.get("P582", []))
            start = min((s[0] for s in spans["P580"]), default=None)
            start_span_end = min(spans["P580"])[1] if spans["P580"] else None
            end = _last_valid_day(max(spans["P582"]), spans["P580"]) if spans["P582"] else None
            if spans["P580"] or spans["P582"]:
                frm, until = start, end
            elif spans["P585"]:
                frm, until = min(spans["P585"])[0], min(spans["P585"])[1]
            else:
                frm = until = None
            if frm and until and until < frm:
                continue
            unknown_end = unknown_end and end is None
            timeless = frm is None and until is None and not unknown_end
            previous = {
                f"Q{(s.get('datavalue') or {}).get('value', {}).get('numeric-id')}"
                for q in ("P1365", "P155")
                for s in qualifiers.get(q, [])
                if s.get("snaktype") == "value"
            }
            row = [qid, frm, until, timeless, unknown_end, start_span_end]
            statements[pid].append((row, bool(spans["P580"] or spans["P582"]), previous))
    functional = default_catalog().functional_pids
    for pid, found in statements.items():
        for row, bounded, previous in found:
            if not bounded or row[1] is not None or row[2] is None:
                continue
            ends = [
                (other[2], other[0])
                for other, _, _ in found
                if other[2] is not None and other[2] < row[2]
            ]
            bounds = [end for end, value in ends if pid in functional or value in previous]
            if bounds:
                row[1] = max(bounds) + timedelta(days=1)
            else:
                row[4] = True  # the start is unknown: uncertain until its end
                row[5] = date.min
    statements = {pid: [tuple(row) for row, _, _ in found] for pid, found in statements.items()}
    truth: dict = {}
    for pid, rows in statements.items():
        if all(row[3] for row in rows):
            truth[(None, pid)] = {row[0] for row in rows}
            continue
        for anchor in ANCHORS:
            lo, hi = anchor.scope_start, anchor.scope_end
            values = set()
            for qid, frm, until, timeless, unknown_end, certain_until in rows:
                overlaps = (frm is None or frm <= hi) and (until is None or until >= lo)
                certain = not unknown_end or (frm is not None and certain_until >= lo)
                if timeless or (overlaps and certain):
                    values.add(qid)
            if values:
                truth[(anchor.key, pid)] = values
    return truth, skipped


@pytest.fixture(scope="module")
def revisions(real_data):
    by_id = defaultdict(list)
    with gzip.open(real_data / "revisions.jsonl.gz") as handle:
        for line in handle:
            record = orjson.loads(line)
            if record["id"].startswith("Q"):
                by_id[record["id"]].append(record["entity"])
    return by_id


def test_truth_of_every_revision_matches_an_independent_reading(revisions):
    # every revision becomes its own subject (a fresh QID), so one truth run covers them all
    entities = {}
    for number, (qid, versions) in enumerate(sorted(revisions.items())):
        for version, entity in enumerate(versions):
            entities[(qid, version)] = dict(entity, id=f"Q9{number:04d}{version:02d}")
    claims = Extractor().extract_lines([orjson.dumps(e) for e in entities.values()]).claims
    _, _, truth = compute(claims, ANCHORS)
    actual_by_subject = defaultdict(dict)
    for (anchor, subject, pid), row in truth.items():
        if row["value_qids"]:
            actual_by_subject[subject][(anchor, pid)] = set(row["value_qids"])
    compared = changed_between_revisions = 0
    previous = {}
    for (qid, version), entity in entities.items():
        expected, skipped = expected_truth(entity)
        actual = {k: v for k, v in actual_by_subject[entity["id"]].items() if k[1] not in skipped}
        expected = {k: v for k, v in expected.items() if k[1] not in skipped}
        assert actual == expected, f"{qid} revision {version}: truth differs from its dated facts"
        compared += len(expected)
        if version and previous[qid] != actual:
            changed_between_revisions += 1
        previous[qid] = actual
    assert compared > 5_000
    assert changed_between_revisions > 20  # the revisions really differ in their dated facts
