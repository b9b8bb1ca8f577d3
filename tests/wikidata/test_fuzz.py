"""Seeded fuzzing of dump content: the extractor never crashes and every line is accounted for."""

from __future__ import annotations

import copy
import gzip
import random
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.wikidata.extract import LINE_REJECTS, STATEMENT_DROPS
from chronoscope_dagster.wikidata.reader import ExtractionReport, extract_dump
from chronoscope_dagster.wikidata.sample import Date, Entity, Fact, Sample, render_dump

SEEDS = range(20)
BLOCK = 2048


def _base_lines() -> list[bytes]:
    entities = {
        f"Q{n}": Entity(f"Q{n}", f"Entity {n}", f"about {n}", [f"alias {n}"] if n % 2 else [])
        for n in range(1, 25)
    }
    facts = []
    for n in range(1, 21):
        for k, pid in enumerate(("P39", "P108", "P26")):
            facts.append(
                Fact(
                    "fuzz",
                    f"Q{n}",
                    pid,
                    "somevalue" if (n + k) % 9 == 0 else f"Q{(n + k) % 24 + 1}",
                    Date(1990 + n, (n + k) % 13, 0) if (n + k) % 3 else None,
                    Date(2010 + n % 10, 6, 1 + k) if n % 4 == 0 else None,
                    n % 4 == 1,
                    Date(2001, 2, 3) if (n + k) % 3 == 0 else None,
                    ("normal", "preferred", "deprecated")[(n * k) % 3],
                    (("P1365", f"Q{n % 24 + 1}"), ("P1545", str(k))) if n % 3 == 0 else (),
                )
            )
    text = gzip.decompress(render_dump(Sample(entities, facts), "2025"))
    return [line.rstrip(b",") for line in text.split(b"\n") if line not in (b"", b"[", b"]")]


BASE_LINES = _base_lines()
WEIRD_VALUES: list[object] = [
    None,
    True,
    False,
    0,
    -7,
    3.5,
    9223372036854775807,
    1e300,
    "",
    "Q",
    "Q0",
    "Q12x",
    "P31",
    "+2020-13-45T00:00:00Z",
    "not a date",
    [],
    [1, "a", None],
    [[{}]],
    {},
    {"x": 1},
    {"en": 5},
    {"value": ["Q1"]},
    {"snaktype": "value", "datavalue": 17},
]
BAD_TIMES = [
    "+2020-02-30T00:00:00Z",
    "+0000-01-01T00:00:00Z",
    "2020-01-01",
    "+2020-1-01T00:00:00Z",
    "-99999999999-01-01T00:00:00Z",
    "+2020-00-05T00:00:00Z",
    "+٢٠٢٠-01-01T00:00:00Z",
    "",
    5,
    None,
]


def _paths(node: object, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*path, index))
    return found


def _set(node: object, path: tuple, value: object) -> object:
    if not path:
        return value
    parent = node
    for key in path[:-1]:
        parent = parent[key]  # type: ignore[index]
    parent[path[-1]] = value  # type: ignore[index]
    return node


def _statements(entity: dict) -> list[dict]:
    claims = entity.get("claims")
    if not isinstance(claims, dict):
        return []
    return [s for group in claims.values() if isinstance(group, list) for s in group if s]


def _mutate_document(rng: random.Random, line: bytes) -> bytes:
    entity = orjson.loads(line)
    statements = _statements(entity)
    choice = rng.randrange(9)
    if choice == 0 or not statements:
        paths = _paths(entity)
        _set(entity, rng.choice(paths), copy.deepcopy(rng.choice(WEIRD_VALUES)))
        return orjson.dumps(entity)
    statement = rng.choice(statements)
    if choice == 1:
        value = statement["mainsnak"].get("datavalue", {}).get("value")
        if isinstance(value, dict):
            value["numeric-id"] = str(value.get("numeric-id"))
        else:
            statement["mainsnak"] = [statement["mainsnak"]]
    elif choice == 2:
        statement["mainsnak"] = [statement["mainsnak"]]
    elif choice == 3:
        entity["claims"] = list(entity["claims"].values())
    elif choice == 4:
        statement["qualifiers"] = rng.choice(
            [
                [1, 2],
                "P580",
                {"P580": 5},
                {"P580": {"snaktype": "value"}},
                {"P580": [[]], "P582": [None, 3]},
                {"P1365": [{"snaktype": "value", "datavalue": "Q5"}]},
                {"P1545": [{"snaktype": "value", "datavalue": [1]}]},
                {"P580": [{"snaktype": ["value"], "datavalue": {"value": {}}}]},
            ]
        )
    elif choice == 5:
        times = [
            snak["datavalue"]["value"]
            for snaks in (statement.get("qualifiers") or {}).values()
            for snak in snaks
            if isinstance(snak.get("datavalue", {}).get("value"), dict)
            and "time" in snak["datavalue"]["value"]
        ]
        if times:
            target = rng.choice(times)
            target[rng.choice(["time", "time", "precision", "calendarmodel"])] = rng.choice(
                BAD_TIMES
            )
        else:
            statement["rank"] = rng.choice(WEIRD_VALUES)
    elif choice == 6:
        statement[rng.choice(["rank", "id", "type"])] = copy.deepcopy(rng.choice(WEIRD_VALUES))
    elif choice == 7:
        entity["claims"][rng.choice(list(entity["claims"]))] = rng.choice(WEIRD_VALUES)
    else:
        _set(statement, rng.choice(_paths(statement)[1:]), copy.deepcopy(rng.choice(WEIRD_VALUES)))
    return orjson.dumps(entity)


def _mutate_bytes(rng: random.Random, line: bytes) -> list[bytes]:
    choice = rng.randrange(6)
    data = bytearray(line)
    if choice == 0:
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice == 1:
        at = rng.randrange(len(data))
        data[at:at] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\x80\x80"])
    elif choice == 2:
        del data[rng.randrange(len(data)) :]
    elif choice == 3:
        return [line, line]
    elif choice == 4:
        braces = [i for i, byte in enumerate(data) if byte == ord("}")]
        for i in sorted(rng.sample(braces, min(len(braces), rng.randint(1, 2))), reverse=True):
            del data[i]
    else:
        data = bytearray(rng.choice([b"", b"[", b"]", b",", b"null", b"[1,2]", b'{"id":5}']))
    return [bytes(data)]


def _fuzzed_lines(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    lines: list[bytes] = []
    for line in BASE_LINES:
        roll = rng.random()
        if roll < 0.3:
            lines += _mutate_bytes(rng, line)
        elif roll < 0.75:
            lines.append(_mutate_document(rng, line))
        else:
            lines.append(line)
    return lines


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (not data.endswith(b"\n") and bool(data))


def _check(path: Path, expected_lines: int, tmp_path: Path) -> ExtractionReport:
    claims, labels = tmp_path / f"{path.name}.claims.parquet", tmp_path / f"{path.name}.labels.pq"
    report = extract_dump(path, claims, labels, workers=1, block_bytes=BLOCK)
    assert report.reconciles, report.reconciliation_errors
    assert report.get("lines") == expected_lines
    assert report.get("statements_kept") == pq.read_table(claims).num_rows
    assert pq.read_table(labels).num_rows == report.get("items") - report.get(
        "items_without_english_label"
    )
    for key in report.counts:
        if key.startswith("rejected:"):
            assert key.removeprefix("rejected:") in LINE_REJECTS, key
        if key.startswith("dropped:"):
            assert key.removeprefix("dropped:") in STATEMENT_DROPS, key
    return report


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_dump_is_fully_accounted_for(seed, tmp_path):
    lines = _fuzzed_lines(seed)
    jsonl = b"\n".join(lines) + b"\n"
    array = b"[\n" + b",\n".join(lines) + b"\n]\n"
    assert jsonl != b"\n".join(BASE_LINES) + b"\n"
    (tmp_path / "fuzz.jsonl").write_bytes(jsonl)
    (tmp_path / "fuzz.json.gz").write_bytes(gzip.compress(array))
    from_jsonl = _check(tmp_path / "fuzz.jsonl", _line_count(jsonl), tmp_path)
    from_gzip = _check(tmp_path / "fuzz.json.gz", _line_count(array), tmp_path)
    assert from_jsonl.get("statements_seen") == from_gzip.get("statements_seen")
    assert from_jsonl.get("statements_kept") == from_gzip.get("statements_kept")
    assert from_jsonl.get("entities_seen") == from_gzip.get("entities_seen")
    assert sum(from_jsonl.line_rejects.values()) + sum(from_jsonl.statement_drops.values()) > 0


def test_fuzzed_dump_without_final_newline(tmp_path):
    lines = _fuzzed_lines(99)
    data = b"\n".join(lines)
    (tmp_path / "tail.jsonl").write_bytes(data)
    _check(tmp_path / "tail.jsonl", _line_count(data), tmp_path)


def _single(tmp_path: Path, lines: list[bytes]) -> tuple[ExtractionReport, Path]:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    claims = tmp_path / "claims.parquet"
    report = extract_dump(path, claims, tmp_path / "labels.parquet", workers=1)
    assert report.reconciles, report.reconciliation_errors
    return report, claims


def test_bad_encoding_and_bad_json_are_named(tmp_path):
    good = BASE_LINES[0]
    at = good.index(b"Entity")
    invalid_utf8 = good[:at] + b"\xff\xfe" + good[at:]
    broken_json = good[: len(good) // 2]
    lone_surrogate = b'{"id":"Q1","labels":{"en":{"language":"en","value":"\\ud800"}}}'
    report, _ = _single(tmp_path, [invalid_utf8, broken_json, lone_surrogate, good])
    assert report.get("lines") == 4
    assert report.get("rejected:bad_encoding") == 1
    assert report.get("rejected:bad_json") == 2
    assert report.get("entities_seen") == 1


def test_wrong_types_are_dropped_with_reasons(tmp_path):
    item = {"entity-type": "item", "numeric-id": 5, "id": "Q5"}
    start = {"time": "+2001-02-03T00:00:00Z", "precision": 11, "calendarmodel": "Q1985727"}
    statement = {
        "mainsnak": {
            "snaktype": "value",
            "datavalue": {"value": item, "type": "wikibase-entityid"},
        },
        "qualifiers": {"P580": [{"snaktype": "value", "datavalue": {"value": start}}]},
        "id": "Q1$abc",
        "rank": "normal",
    }
    variants = [statement]
    for change in (
        lambda s: s.update(rank=5),
        lambda s: s.update(rank=["deprecated"]),
        lambda s: s.update(id=12),
        lambda s: s.update(qualifiers={"P580": 7, "P1365": 3.5, "P1545": True}),
        lambda s: s.update(qualifiers={"P580": [{"snaktype": "value", "datavalue": [1]}]}),
        lambda s: s["qualifiers"].update(P1545=[{"snaktype": "value", "datavalue": "x"}]),
        lambda s: s["mainsnak"].update(datavalue="Q5"),
    ):
        changed = copy.deepcopy(statement)
        change(changed)
        variants.append(changed)
    entity = {
        "id": "Q1",
        "labels": {"en": {"value": "One"}},
        "aliases": {"en": 3},
        "claims": {"P39": variants, "P26": 17, "P108": "abc"},
    }
    report, claims = _single(tmp_path, [orjson.dumps(entity)])
    assert report.get("items") == 1
    assert report.get("statements_kept") == 4
    assert report.get("dropped:malformed_statement") >= 2
    assert report.get("dropped:invalid_time") == 1
    assert report.get("dropped:malformed_value") == 1
    rows = pq.read_table(claims).to_pylist()
    assert [row["rank"] for row in rows] == ["normal"] * 4
    assert [row["statement_id"] for row in rows] == ["Q1$abc", None, "Q1$abc", "Q1$abc"]
    assert rows[0]["start_date"] is not None
    assert [row["start_date"] for row in rows[2:]] == [None, rows[0]["start_date"]]
    assert all(row["q_series_ordinal"] is None for row in rows)


def test_time_values_of_other_types_are_not_confused(tmp_path):
    def entity(qid: str, precision: object, calendar: object) -> bytes:
        time = {"time": "+2001-02-03T00:00:00Z", "precision": precision}
        time["calendarmodel"] = calendar
        item = {"entity-type": "item", "numeric-id": 5}
        snak = {"snaktype": "value", "datavalue": {"value": item, "type": "wikibase-entityid"}}
        qualifiers = {"P580": [{"snaktype": "value", "datavalue": {"value": time}}]}
        claims = {"P39": [{"mainsnak": snak, "qualifiers": qualifiers, "rank": "normal"}]}
        return orjson.dumps({"id": qid, "claims": claims})

    lines = [
        entity("Q1", 11, 1),
        entity("Q2", True, 1),
        entity("Q3", 11.0, True),
        entity("Q4", 11, True),
        entity("Q5", 1, 1),
    ]
    report, claims = _single(tmp_path, lines)
    assert report.get("dropped:invalid_time") == 2
    rows = pq.read_table(claims).to_pylist()
    assert [(r["subject_qid"], r["start_precision"], r["start_calendar"]) for r in rows] == [
        ("Q1", 11, "1"),
        ("Q4", 11, "True"),
        ("Q5", 1, "1"),
    ]


def test_malformed_snaktype_and_rank(tmp_path):
    item = {"entity-type": "item", "numeric-id": 5}
    good = {"snaktype": "value", "datavalue": {"value": item, "type": "wikibase-entityid"}}
    statements = [
        {"mainsnak": {**good, "snaktype": ["somevalue"]}},
        {"mainsnak": {**good, "snaktype": {"x": 1}}},
        {"mainsnak": good, "rank": {"deprecated": True}},
        {"mainsnak": good, "rank": "unknown-rank"},
        {"mainsnak": {**good, "snaktype": "somevalue"}},
        {"mainsnak": good},
    ]
    report, claims = _single(tmp_path, [orjson.dumps({"id": "Q1", "claims": {"P39": statements}})])
    assert report.get("statements_seen") == 6
    assert report.get("dropped:malformed_statement") == 4
    assert report.get("dropped:somevalue_value") == 1
    assert pq.read_table(claims).num_rows == 1


def test_fuzzed_dump_gives_the_same_result_with_workers(tmp_path):
    lines = [line for seed in range(3) for line in _fuzzed_lines(1000 + seed)]
    data = b"[\n" + b",\n".join(lines) + b"\n]\n"
    path = tmp_path / "fuzz.json.gz"
    path.write_bytes(gzip.compress(data))
    results = []
    for workers in (1, 2):
        out = tmp_path / str(workers)
        out.mkdir()
        report = extract_dump(
            path, out / "c.parquet", out / "l.parquet", workers=workers, block_bytes=BLOCK
        )
        assert report.reconciles, report.reconciliation_errors
        assert report.get("lines") == _line_count(data)
        results.append((report.counts, pq.read_table(out / "c.parquet")))
    assert results[0][0] == results[1][0]
    assert results[0][1].equals(results[1][1])
