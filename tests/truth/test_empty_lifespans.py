"""A dump with no lifespan statement (a legitimate subset) still gives a lifespans partition, an
empty Parquet table with the full schema, which passes its blocking check and which
fact_intervals reads like any other."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from chronoscope_dagster.orchestration import run_selection
from chronoscope_dagster.warehouse import Warehouse
from chronoscope_dagster.wikidata.extract import LIFESPANS_SCHEMA
from chronoscope_dagster.wikidata.sample import Date, Entity, Fact, Sample, render_dump

YEAR = "2025"


def _dump_without_lifespans(tmp_path: Path) -> Path:
    """Two items, one position held since 2010, and no birth, death, inception or dissolution."""
    sample = Sample(
        {"Q1": Entity("Q1", "One", "", []), "Q2": Entity("Q2", "Two", "", [])},
        [Fact("t", "Q1", "P39", "Q2", Date(2010, 1, 1), None, False, None, "normal", ())],
    )
    assert not sample.lifespans
    path = tmp_path / "no-lifespans.json.gz"
    path.write_bytes(render_dump(sample, YEAR))
    return path


def test_lifespans_of_a_dump_without_lifespan_statements_is_an_empty_table_that_passes(tmp_path):
    home = tmp_path / "home"
    results = run_selection(
        home=str(home),
        selection="key:fact_intervals",
        dumps={YEAR: str(_dump_without_lifespans(tmp_path))},
        instance=dg.DagsterInstance.ephemeral(),
        echo=lambda _: None,
    )
    warehouse = Warehouse(home)
    path = warehouse.data_path("lifespans", snapshot_year=YEAR)
    assert path.exists()
    table = pq.read_table(path)
    assert table.num_rows == 0
    assert table.schema.equals(LIFESPANS_SCHEMA, check_metadata=False)
    checks = [
        evaluation
        for result in results
        for evaluation in result.get_asset_check_evaluations()
        if evaluation.check_name == "lifespans_well_formed"
    ]
    assert checks and all(evaluation.passed for evaluation in checks)
    with warehouse.connect() as connection:
        intervals = connection.execute(
            "SELECT subject_qid, pid, value_qid FROM read_parquet(?)",
            [str(warehouse.data_path("fact_intervals", snapshot_year=YEAR))],
        ).fetchall()
    assert intervals == [("Q1", "P39", "Q2")]
