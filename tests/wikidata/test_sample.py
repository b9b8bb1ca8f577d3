"""The embedded sample: what the curated files hold, and that the dumps are rendered from them."""

import gzip

import orjson
import pytest

from chronoscope_dagster.data import SNAPSHOT_YEARS, sample_dump_path
from chronoscope_dagster.wikidata.properties import default_catalog
from chronoscope_dagster.wikidata.sample import (
    FACT_HEADER,
    Date,
    Lifespan,
    Sample,
    SampleError,
    load_sample,
    render_dump,
    snapshot_facts,
    snapshot_lifespans,
)


@pytest.fixture(scope="module")
def sample():
    return load_sample()


def test_volume_and_coverage(sample):
    stats = sample.stats()
    assert stats["subject_entities"] >= 400
    assert stats["statements"] >= 3000
    assert stats["time_qualified"] >= 1500
    assert set(default_catalog().chain_pids) <= set(stats["by_pid"])
    assert stats["ranks"].get("preferred", 0) > 0 and stats["ranks"].get("deprecated", 0) > 0
    assert stats["special_values"].get("somevalue", 0) > 0
    assert stats["special_values"].get("novalue", 0) > 0
    assert stats["unknown_ends"] > 0
    assert {9, 10, 11} <= set(stats["precisions"])
    assert stats["shared_labels"], "two subjects must share an English label"
    assert any(not entity.label.isascii() for entity in sample.entities.values())


def test_facts_span_the_years_and_change_over_time(sample):
    years = [d.year for f in sample.facts for d in (f.start, f.end, f.point) if d]
    assert min(years) <= 1990 and max(years) >= 2025
    heads = {(f.subject, f.pid) for f in sample.facts if f.pid in ("P6", "P35")}
    assert len({subject for subject, _ in heads}) >= 40


def test_multi_valued_properties(sample):
    open_values: dict[tuple[str, str], int] = {}
    for fact in sample.facts:
        if fact.end is None and not fact.end_unknown and fact.rank != "deprecated":
            key = (fact.subject, fact.pid)
            open_values[key] = open_values.get(key, 0) + 1
    assert sum(count > 1 for count in open_values.values()) >= 20


@pytest.mark.parametrize("year", SNAPSHOT_YEARS)
def test_committed_dumps_are_rendered_from_the_files(sample, year):
    assert sample_dump_path(year).read_bytes() == render_dump(sample, year), (
        "the committed dump is stale: run `make sample`"
    )


def test_dump_layout_is_official(sample):
    text = gzip.decompress(sample_dump_path("2025").read_bytes()).decode()
    lines = text.split("\n")
    assert lines[0] == "[" and lines[-2] == "]" and lines[-1] == ""
    entity_lines = lines[1:-2]
    assert all(line.endswith(",") for line in entity_lines[:-1])
    assert not entity_lines[-1].endswith(",")
    documents = [orjson.loads(line.rstrip(",")) for line in entity_lines]
    item = next(d for d in documents if d["claims"].get("P39"))
    statement = item["claims"]["P39"][0]
    value = statement["mainsnak"]["datavalue"]["value"]
    assert {"entity-type", "numeric-id", "id"} <= set(value)
    assert statement["id"].startswith(item["id"] + "$")
    times = [s for st in item["claims"]["P39"] for s in st.get("qualifiers", {}).get("P580", [])]
    assert times and {"time", "precision", "calendarmodel"} <= set(times[0]["datavalue"]["value"])


def test_snapshots_hold_what_was_known(sample):
    later_start = next(f for f in sample.facts if f.start and f.start.year == 2024)
    later_end = next(
        f for f in sample.facts if f.end and f.end.year == 2024 and f.start and f.start.year < 2022
    )
    snapshot_2023 = snapshot_facts(sample, "2023")
    assert later_start not in snapshot_2023
    reopened = [f for f in snapshot_2023 if (f.subject, f.pid, f.value, f.start) ==
                (later_end.subject, later_end.pid, later_end.value, later_end.start)]  # fmt: skip
    assert reopened and reopened[0].end is None
    assert later_start in snapshot_facts(sample, "2024")


def _documents(data: bytes) -> dict[str, dict]:
    lines = gzip.decompress(data).decode().split("\n")[1:-2]
    return {d["id"]: d for d in (orjson.loads(line.rstrip(",")) for line in lines)}


def test_lifespans_are_loaded_and_rendered_as_time_statements(sample):
    stats = sample.stats()["lifespans"]
    assert stats["subjects_with_start"] >= 20 and stats["subjects_with_end"] >= 2
    assert {"P569", "P571", "P576"} <= set(stats["by_pid"])
    assert set(default_catalog().lifespan_properties) >= set(stats["by_pid"])
    documents = _documents(sample_dump_path("2022").read_bytes())
    for life in (
        next(f for f in sample.lifespans if f.pid == "P571" and f.date.precision == 11),
        next(f for f in sample.lifespans if f.pid == "P571" and f.date.precision == 10),
        next(f for f in sample.lifespans if f.pid == "P569"),
    ):
        statements = documents[life.qid]["claims"][life.pid]
        assert all(
            s["type"] == "statement" and s["id"].startswith(life.qid + "$") for s in statements
        )
        snaks = [s["mainsnak"] for s in statements]
        assert all(s["datatype"] == "time" and s["datavalue"]["type"] == "time" for s in snaks)
        values = [s["datavalue"]["value"] for s in snaks]
        assert {"time": life.date.wikidata(), "precision": life.date.precision}.items() <= next(
            v for v in values if v["time"] == life.date.wikidata()
        ).items()
        assert values[0]["calendarmodel"] == "http://www.wikidata.org/entity/Q1985727"
    assert documents[next(iter(default_catalog().lifespan_properties))]["datatype"] == "time"


def test_a_lifespan_date_later_than_the_snapshot_is_absent(sample):
    # Hand-made: no real lifespan date of the sample is later than 2022.
    qid = sample.lifespans[0].qid
    later = Lifespan("test", qid, "P576", Date.parse("2024-05-01"), "normal")
    made = Sample(sample.entities, [], [later])
    assert later not in snapshot_lifespans(made, "2023")
    assert "P576" not in _documents(render_dump(made, "2023"))[qid]["claims"]
    claims = _documents(render_dump(made, "2024"))[qid]["claims"]
    assert claims["P576"][0]["mainsnak"]["datavalue"]["value"]["time"] == "+2024-05-01T00:00:00Z"


def test_lifespan_problems_are_listed(tmp_path):
    for folder, header in (("entities", "qid\tlabel\tdescription\taliases"),
                           ("facts", "\t".join(FACT_HEADER))):  # fmt: skip
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.tsv").write_text(
            header + ("\nQ1\tuniverse\t\t\n" if folder == "entities" else "\n")
        )
    (tmp_path / "lifespans").mkdir()
    (tmp_path / "lifespans" / "a.tsv").write_text(
        "qid\tpid\tdate\trank\tnote\n"
        "Q1\tP571\t1900\t\t\nQ2\tP571\t1900\t\t\nQ1\tP580\t1900\t\t\nQ1\tP576\t19x\t\t\n"
    )
    with pytest.raises(SampleError) as raised:
        load_sample(tmp_path)
    message = str(raised.value)
    assert message.startswith("3 problem(s)")
    assert "no entity row for Q2" in message and "'P580' is not a lifespan property" in message
    assert "bad date '19x'" in message
