"""Every real entity of ../shared/wikidata-real, wrapped as an official dump, is parsed."""

import calendar
import gzip
import re
from collections import Counter

import orjson
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.wikidata.properties import default_catalog
from chronoscope_dagster.wikidata.reader import extract_dump

TIME = re.compile(r"([+-]?)(\d+)-(\d\d)-(\d\d)T")


@pytest.fixture(scope="module")
def entities(real_data):
    with gzip.open(real_data / "entities.jsonl.gz") as handle:
        return [orjson.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def extracted(entities, tmp_path_factory):
    directory = tmp_path_factory.mktemp("real")
    dump = directory / "wikidata-real-all.json.gz"
    with gzip.open(dump, "wb") as out:
        out.write(b"[\n" + b",\n".join(orjson.dumps(e) for e in entities) + b"\n]\n")
    report = extract_dump(
        dump, directory / "claims.parquet", directory / "labels.parquet", workers=2
    )
    return (
        report,
        pq.read_table(directory / "claims.parquet"),
        pq.read_table(directory / "labels.parquet"),
    )


def _valid_time(snak: dict) -> bool:
    """An independent reading of a time qualifier: does it name a real calendar day?"""
    value = (snak.get("datavalue") or {}).get("value") or {}
    match = TIME.match(value.get("time") or "")
    if not match:
        return False
    year, month, day = int(match.group(2)), int(match.group(3)), int(match.group(4))
    if year == 0 or year > 5_000_000 or month > 12:
        return False
    if month == 0 or day == 0:
        return True
    astronomical = 1 - year if match.group(1) == "-" else year
    julian = str(value.get("calendarmodel", "")).endswith("Q1985786")
    leap = astronomical % 4 == 0 if julian else calendar.isleap(astronomical)
    return day <= [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]


def _independent_counts(entities: list[dict]) -> tuple[Counter, Counter]:
    seen: Counter = Counter()
    kept: Counter = Counter()
    pids = set(default_catalog().pids)
    for entity in entities:
        if not str(entity.get("id", "")).startswith("Q"):
            continue
        for pid, statements in (entity.get("claims") or {}).items():
            if pid not in pids:
                continue
            for st in statements:
                seen[pid] += 1
                snak = st["mainsnak"]
                value = (snak.get("datavalue") or {}).get("value")
                if st.get("rank") == "deprecated" or snak.get("snaktype") != "value":
                    continue
                if not isinstance(value, dict) or value.get("entity-type", "item") != "item":
                    continue
                times = [
                    q
                    for qpid in ("P580", "P582", "P585")
                    for q in (st.get("qualifiers") or {}).get(qpid, [])
                    if q.get("snaktype") == "value"
                ]
                if all(_valid_time(q) for q in times):
                    kept[pid] += 1
    return seen, kept


def test_every_entity_is_parsed(entities, extracted):
    report, _, _ = extracted
    assert report.reconciles, report.reconciliation_errors
    assert report.get("entities_seen") == len(entities)
    assert sum(report.line_rejects.values()) == 0
    assert report.get("items") == sum(1 for e in entities if e["id"].startswith("Q"))


def test_statement_counts_per_property_match_an_independent_count(entities, extracted):
    report, claims, _ = extracted
    seen, kept = _independent_counts(entities)
    assert report.get("statements_seen") == sum(seen.values())
    by_pid = {row["values"]: row["counts"] for row in pc.value_counts(claims["pid"]).to_pylist()}
    assert by_pid == dict(kept)
    assert sum(kept.values()) > 1000


def test_real_shapes_are_present_and_read(entities, extracted):
    report, claims, labels = extracted
    assert report.get("dropped:deprecated") > 0
    assert report.get("dropped:somevalue_value") + report.get("dropped:novalue_value") > 0
    assert pc.sum(claims["end_unknown"]).as_py() > 0 or report.get("qualifier_somevalue:P582") == 0
    precisions = set(pc.unique(claims["start_precision"].drop_null()).to_pylist())
    assert {9, 10, 11} <= precisions
    old_shape = sum(
        1
        for e in entities
        for statements in (e.get("claims") or {}).values()
        for st in statements
        if isinstance((st["mainsnak"].get("datavalue") or {}).get("value"), dict)
        and "numeric-id" in st["mainsnak"]["datavalue"]["value"]
        and "id" not in st["mainsnak"]["datavalue"]["value"]
    )
    assert old_shape > 0  # values without `id` exist in the real data and are kept
    qids = set(labels["qid"].to_pylist())
    assert "Q42" in qids or len(qids) > 1000
