from datetime import date

import orjson
import pytest

from chronoscope_dagster.wikidata.extract import Extractor


def item_snak(pid: str, qid: str, *, with_id: bool = True) -> dict:
    value = {"entity-type": "item", "numeric-id": int(qid[1:])}
    if with_id:
        value["id"] = qid
    return {
        "snaktype": "value",
        "property": pid,
        "datavalue": {"value": value, "type": "wikibase-entityid"},
        "datatype": "wikibase-item",
    }


def time_snak(pid: str, time: str, precision: int = 11) -> dict:
    return {
        "snaktype": "value",
        "property": pid,
        "datavalue": {
            "value": {
                "time": time,
                "timezone": 0,
                "before": 0,
                "after": 0,
                "precision": precision,
                "calendarmodel": "http://www.wikidata.org/entity/Q1985727",
            },
            "type": "time",
        },
        "datatype": "time",
    }


def statement(
    mainsnak: dict, rank: str = "normal", qualifiers: dict | None = None, sid: str = ""
) -> dict:
    out = {"mainsnak": mainsnak, "type": "statement", "rank": rank, "id": sid or "Q1$X"}
    if qualifiers:
        out["qualifiers"] = qualifiers
    return out


def line(entity: dict) -> bytes:
    return orjson.dumps(entity) + b","


def extract(*lines: bytes):
    result = Extractor().extract_lines(list(lines))
    return result.claims.to_pylist(), result.labels.to_pylist(), result.counts


def test_statement_reasons_are_counted_and_reconcile():
    entity = {
        "id": "Q30",
        "type": "item",
        "labels": {"en": {"language": "en", "value": "United States"}},
        "claims": {
            "P6": [
                statement(
                    item_snak("P6", "Q6279"),
                    "preferred",
                    {"P580": [time_snak("P580", "+2021-01-20T00:00:00Z")]},
                ),
                statement(item_snak("P6", "Q22686"), "deprecated"),
                statement({"snaktype": "somevalue", "property": "P6"}),
                statement({"snaktype": "novalue", "property": "P6"}),
                statement(item_snak("P6", "Q76", with_id=False)),
            ],
            "P31": [
                statement({"snaktype": "value", "property": "P31",
                           "datavalue": {"value": "text", "type": "string"}}),
                statement({"snaktype": "value", "property": "P31",
                           "datavalue": {"value": {"entity-type": "property", "numeric-id": 31},
                                         "type": "wikibase-entityid"}}),
                statement({"snaktype": "value", "property": "P31",
                           "datavalue": {"value": {"entity-type": "item", "numeric-id": 5, "id": "Q6"},
                                         "type": "wikibase-entityid"}}),
                statement(item_snak("P31", "Q6256"), qualifiers={
                    "P580": [time_snak("P580", "+2010-02-30T00:00:00Z")]}),
                "not a statement",
            ],
            "P18": [statement({"snaktype": "value", "property": "P18",
                               "datavalue": {"value": "a.jpg", "type": "string"}})],
        },
    }  # fmt: skip
    claims, labels, counts = extract(line(entity))
    assert [(c["pid"], c["value_qid"], c["rank"]) for c in claims] == [
        ("P6", "Q6279", "preferred"),
        ("P6", "Q76", "normal"),
    ]
    assert counts["statements_seen"] == 10  # P18 is not an extracted property
    assert counts["statements_kept"] == 2
    assert counts["dropped:deprecated"] == 1
    assert counts["dropped:somevalue_value"] == 1
    assert counts["dropped:novalue_value"] == 1
    assert counts["dropped:non_item_value"] == 2
    assert counts["dropped:malformed_value"] == 1
    assert counts["dropped:invalid_time"] == 1
    assert counts["dropped:malformed_statement"] == 1
    assert labels == [{"qid": "Q30", "label": "United States", "description": None, "aliases": []}]


def test_time_qualifiers_collapse_and_unknown_end():
    qualifiers = {
        "P580": [
            time_snak("P580", "+2001-00-00T00:00:00Z", 9),
            time_snak("P580", "+1999-06-00T00:00:00Z", 10),
        ],
        "P582": [
            {"snaktype": "somevalue", "property": "P582"},
        ],
        "P1365": [item_snak("P1365", "Q100")],
        "P1545": [{"snaktype": "value", "property": "P1545",
                   "datavalue": {"value": "44", "type": "string"}}],
    }  # fmt: skip
    entity = {
        "id": "Q1",
        "claims": {"P39": [statement(item_snak("P39", "Q11696"), qualifiers=qualifiers)]},
    }
    claims, _, counts = extract(line(entity))
    (claim,) = claims
    assert str(claim["start_date"]) == "1999-06-01"
    assert claim["start_precision"] == 10
    assert claim["end_date"] is None and claim["end_unknown"] is True
    assert claim["q_replaces"] == ["Q100"]
    assert claim["q_series_ordinal"] == ["44"]
    assert counts["several_values:P580"] == 1
    assert counts["qualifier_somevalue:P582"] == 1


def test_latest_end_wins_and_known_end_beats_unknown():
    qualifiers = {
        "P582": [
            time_snak("P582", "+2005-01-01T00:00:00Z"),
            {"snaktype": "somevalue", "property": "P582"},
            time_snak("P582", "+2007-00-00T00:00:00Z", 9),
        ],
        "P585": [time_snak("P585", "+2003-04-05T00:00:00Z")],
    }
    entity = {
        "id": "Q1",
        "claims": {"P108": [statement(item_snak("P108", "Q2"), qualifiers=qualifiers)]},
    }
    (claim,), _, _ = extract(line(entity))
    assert (str(claim["end_date"]), claim["end_precision"], claim["end_unknown"]) == (
        "2007-01-01",
        9,
        False,
    )
    assert str(claim["point_in_time_date"]) == "2003-04-05"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json},", "rejected:bad_json"),
        (b'{"id": "Q1", "labels": {"en": {"value": "\xff\xfe"}}},', "rejected:bad_encoding"),
        (b"[1, 2, 3],", "rejected:not_an_entity"),
        (b'{"labels": {}},', "rejected:not_an_entity"),
        (b'{"id": 42},', "rejected:not_an_entity"),
        (b'{"id": "Q12x"},', "rejected:malformed_id"),
        (b'{"id": "Q0"},', "rejected:malformed_id"),
    ],
)
def test_line_rejects(raw, reason):
    _, _, counts = extract(b"[", raw, b"]")
    assert counts[reason] == 1
    assert counts["lines"] == 3 and counts["lines_structural"] == 2
    assert counts["entities_seen"] == 0


def test_non_items_are_counted_and_skipped():
    _, labels, counts = extract(
        line({"id": "P31", "type": "property", "labels": {"en": {"value": "instance of"}}}),
        line({"id": "L7", "type": "lexeme"}),
        line({"id": "Q5", "labels": {"en": {"language": "en", "value": "human"}}}),
    )
    assert counts["entities_seen"] == 3
    assert counts["entities_skipped_non_item"] == 2
    assert counts["items"] == 1
    assert [row["qid"] for row in labels] == ["Q5"]


def test_labels_aliases_and_missing_english():
    _, labels, counts = extract(
        line({"id": "Q90", "labels": {"en": {"language": "en", "value": "Paris"}},
              "descriptions": {"en": {"language": "en", "value": "capital of France"}},
              "aliases": {"en": [{"language": "en", "value": "City of Light"}]}}),
        line({"id": "Q91", "labels": {"fr": {"language": "fr", "value": "Quelque"}}}),
        line({"id": "Q92", "labels": {}, "aliases": {"en": [{"language": "en", "value": "Alias only"}]}}),
        line({"id": "Q93", "labels": {"en": {"language": "en", "value": "Zürich"}}}),
    )  # fmt: skip
    assert labels == [
        {
            "qid": "Q90",
            "label": "Paris",
            "description": "capital of France",
            "aliases": ["City of Light"],
        },
        {"qid": "Q92", "label": None, "description": None, "aliases": ["Alias only"]},
        {"qid": "Q93", "label": "Zürich", "description": None, "aliases": []},
    ]
    assert counts["items_without_english_label"] == 1


def test_self_loops_and_unlabelled_values_are_kept():
    entity = {"id": "Q7", "claims": {"P361": [statement(item_snak("P361", "Q7"))],
                                     "P31": [statement(item_snak("P31", "Q999999999"))]}}  # fmt: skip
    claims, _, _ = extract(line(entity))
    assert {(c["pid"], c["value_qid"]) for c in claims} == {("P361", "Q7"), ("P31", "Q999999999")}


def test_lifespans_keep_the_best_rank_and_count_every_other_statement():
    entity = {
        "id": "Q95",
        "type": "item",
        "claims": {
            "P571": [
                statement(time_snak("P571", "+1998-09-04T00:00:00Z"), rank="preferred"),
                statement(time_snak("P571", "+1998-00-00T00:00:00Z", 9)),
                statement(time_snak("P571", "+1997-00-00T00:00:00Z", 9), rank="deprecated"),
            ],
            "P576": [
                statement({"snaktype": "somevalue", "property": "P576"}),
                statement(time_snak("P576", "+2019-02-30T00:00:00Z")),
                statement(item_snak("P576", "Q5")),
            ],
            "P570": [statement(time_snak("P570", "+2001-05-00T00:00:00Z", 10))],
        },
    }
    result = Extractor().extract_lines([line(entity)])
    assert result.lifespans.to_pylist() == [
        {"qid": "Q95", "pid": "P571", "bound": "start",
         "date": date(1998, 9, 4), "precision": 11,
         "calendar": "gregorian", "rank": "preferred"},
        {"qid": "Q95", "pid": "P570", "bound": "end",
         "date": date(2001, 5, 1), "precision": 10,
         "calendar": "gregorian", "rank": "normal"},
    ]  # fmt: skip
    drops = {k: v for k, v in result.counts.items() if k.startswith("lifespan_dropped:")}
    assert drops == {
        "lifespan_dropped:not_best_rank": 1,
        "lifespan_dropped:deprecated": 1,
        "lifespan_dropped:somevalue": 1,
        "lifespan_dropped:invalid_time": 1,
        "lifespan_dropped:non_time_value": 1,
    }
    assert result.counts["lifespan_seen"] == 7 and result.counts["lifespan_kept"] == 2
    assert result.counts["statements_seen"] == 0
