"""The lazy simdjson path of the extractor gives exactly what a full orjson parse gives."""

from __future__ import annotations

import copy
import gc
import gzip
import random

import orjson
import pytest

from chronoscope_dagster.wikidata.extract import Extractor
from tests.wikidata.test_fuzz import _paths

WEIRD_VALUES: list[object] = [
    None,
    True,
    0,
    -7,
    3.5,
    11.0,
    2**64 - 1,
    "",
    "Q0",
    "P31",
    "deprecated",
    "somevalue",
    "+2020-02-30T00:00:00Z",
    [],
    [1, "a", None],
    {},
    {"en": 5},
    {"snaktype": "value", "datavalue": 17},
]


def _full_parse_extractor() -> Extractor:
    extractor = Extractor()
    extractor._lazy_entity = lambda line: None  # type: ignore[method-assign]
    return extractor


def _assert_same_as_full_parse(lines: list[bytes]) -> Extractor:
    lazy = Extractor()
    got = lazy.extract_lines(lines)
    expected = _full_parse_extractor().extract_lines(lines)
    assert got.counts == expected.counts
    assert got.claims.equals(expected.claims)
    assert got.labels.equals(expected.labels)
    assert got.lifespans.equals(expected.lifespans)
    return lazy


def _dump_line(entity: object) -> bytes:
    return orjson.dumps(entity) + b","


@pytest.fixture(scope="module")
def real_entities(real_data) -> list[dict]:
    with gzip.open(real_data / "entities.jsonl.gz") as handle:
        entities = [orjson.loads(line) for line in handle if line.strip()]
    with gzip.open(real_data / "revisions.jsonl.gz") as handle:
        entities += [orjson.loads(line)["entity"] for line in handle if line.strip()]
    return entities


def test_real_entities_read_lazily_match_a_full_parse(real_entities):
    lines = [b"[", *(_dump_line(entity) for entity in real_entities), b"]"]
    lazy = _assert_same_as_full_parse(lines)
    assert lazy.full_parses == 0
    result = lazy.extract_lines(lines)
    assert result.counts["items"] > 2000
    assert result.claims.num_rows > 10_000
    assert result.labels.num_rows > 1000


def _item(**fields: object) -> dict:
    statement = {
        "mainsnak": {
            "snaktype": "value",
            "property": "P39",
            "datavalue": {
                "value": {"entity-type": "item", "numeric-id": 30185, "id": "Q30185"},
                "type": "wikibase-entityid",
            },
        },
        "type": "statement",
        "id": "Q1$A",
        "rank": "normal",
        "qualifiers": {
            "P580": [
                {
                    "snaktype": "value",
                    "property": "P580",
                    "datavalue": {
                        "value": {
                            "time": "+2001-01-20T00:00:00Z",
                            "precision": 11,
                            "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
                        },
                        "type": "time",
                    },
                }
            ]
        },
    }
    entity = {
        "type": "item",
        "id": "Q1",
        "labels": {"en": {"language": "en", "value": "One"}, "de": {"value": "Eins"}},
        "descriptions": {"en": {"language": "en", "value": "first"}},
        "aliases": {"en": [{"language": "en", "value": "Uno"}]},
        "claims": {"P39": [statement], "P18": [{"mainsnak": {}}]},
    }
    entity.update(fields)
    return entity


def test_corrupted_lines_are_counted_as_by_a_full_parse():
    valid = orjson.dumps(_item())
    corrupted = {
        "bad_json": [
            valid[: len(valid) // 2],
            valid[:-1],
            valid + b" x",
            b'{"id": "Q1", "x": NaN}',
            b'{"id": "Q1", "x": "a\x01b"}',
            b"\xef\xbb\xbf" + valid,
            b"{",
        ],
        "bad_encoding": [
            valid.replace(b"Eins", b"Ei\xffns"),
            valid.replace(b"Eins", b"Ei\xed\xa0\x80ns"),
            valid.replace(b"first", b"fir\xc3"),
        ],
        "not_an_entity": [b"[1, 2]", b"null", b'"Q1"', b"5", b'{"id": 5}', b"{}"],
        "malformed_id": [_dump_line(_item(id=qid)) for qid in ("Q0", "Q12x", "Q", "Q-1")],
    }
    lines = [line for group in corrupted.values() for line in group]
    lines += [_dump_line(_item()), b"", b"]"]
    lazy = _assert_same_as_full_parse(lines)
    counts = lazy.extract_lines(lines).counts
    for reason, group in corrupted.items():
        assert counts[f"rejected:{reason}"] == len(group), reason
    assert counts["items"] == 1
    assert counts["statements_kept"] == 1


def test_lines_only_orjson_reads_right_fall_back_to_it():
    valid = orjson.dumps(_item())
    statement = _item()["claims"]["P39"][0]
    mainsnak = orjson.dumps(statement["mainsnak"])
    tricky = [
        valid.replace(b'"id":"Q1"', b'"id":"Q2","id":"Q1"'),
        valid.replace(b'"id":"Q1"', b'"id":"Q1","\\u0069d":"Q2"'),
        valid.replace(b'"labels":{', b'"labels":{"en":{"value":"Other"},'),
        valid.replace(b'"claims":{', b'"claims":{"P39":[],'),
        valid.replace(b'"rank":"normal"', b'"rank":"deprecated","rank":"normal"'),
        valid.replace(b'"mainsnak":', b'"mainsnak":' + mainsnak + b',"mainsnak":'),
        valid.replace(b'"numeric-id":30185', b'"numeric-id":' + b"9" * 30),
        valid.replace(b'"precision":11', b'"precision":-9223372036854775809'),
        b" " + valid,
    ]
    ordinary = [
        valid.replace(b'"qualifiers":{', b'"qualifiers":{"P580":[],'),
        valid.replace(b'"datavalue"', b'"x":1,"datavalue":{},"datavalue"', 1),
        valid.replace(b'"P18"', b'"P1082":[1],"P1082"'),
    ]
    lazy = _assert_same_as_full_parse([*tricky, *ordinary])
    assert lazy.full_parses == len(tricky)


def test_cached_qualifiers_tell_equal_looking_values_apart():
    precision, time = b'"precision":11', b'"time":"+2001-01-20T00:00:00Z"'
    variants = [
        (precision, precision),
        (precision, b'"precision":11.0'),
        (precision, b'"precision":true'),
        (precision, b'"precision":9'),
        (time, b'"time":"\\u002B2001-01-20T00:00:00Z"'),
        (time, time + b',"time":"+2001-02-30T00:00:00Z"'),
        (time, b'"time":"+2001-13-20T00:00:00Z"'),
    ]
    valid = orjson.dumps(_item())
    lines = [valid.replace(old, new) for old, new in variants for _ in range(2)]
    somevalue_then_invalid = _item()
    qualifiers = somevalue_then_invalid["claims"]["P39"][0]["qualifiers"]
    qualifiers["P582"] = [{"snaktype": "somevalue"}]
    qualifiers["P585"] = copy.deepcopy(qualifiers.pop("P580"))
    qualifiers["P585"][0]["datavalue"]["value"]["time"] = "+2001-02-30T00:00:00Z"
    lines += [_dump_line(somevalue_then_invalid)] * 3
    _assert_same_as_full_parse(lines)


def _statements(entity: dict) -> list[dict]:
    claims = entity.get("claims")
    if not isinstance(claims, dict):
        return []
    return [s for group in claims.values() if isinstance(group, list) for s in group]


def _replace(node: object, path: tuple, value: object) -> None:
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]


@pytest.mark.parametrize("seed", range(4))
def test_mutated_real_entities_match_a_full_parse(real_entities, seed):
    rng = random.Random(seed)
    small = [e for e in real_entities if _statements(e) and len(orjson.dumps(e)) < 30_000]
    lines = []
    for entity in rng.sample(small, 300):
        entity = copy.deepcopy(entity)
        statement = rng.choice(_statements(entity))
        target = statement if rng.random() < 0.7 and isinstance(statement, dict) else entity
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(_paths(target)[1:] or [("id",)])
            _replace(target, path, copy.deepcopy(rng.choice(WEIRD_VALUES)))
        lines.append(_dump_line(entity))
    _assert_same_as_full_parse(lines)


def test_the_garbage_collector_is_left_as_it_was():
    lines = [_dump_line(_item()), b"{"]
    assert gc.isenabled()
    Extractor().extract_lines(lines)
    assert gc.isenabled()
    gc.disable()
    try:
        Extractor().extract_lines(lines)
        assert not gc.isenabled()
    finally:
        gc.enable()
