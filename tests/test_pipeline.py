"""The ingest stage end to end on the embedded sample, through Dagster, in process."""

import json
import shutil

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.orchestration import RunFailed, run_selection
from chronoscope_dagster.resources import BenchmarkSettings
from chronoscope_dagster.warehouse import Warehouse
from tests.conftest import (
    MODEL_THREADS,
    REFERENCE_MODELS,
    SAMPLE_SETTINGS,
    TEST_MODELS,
)
from tests.pipeline_helpers import (
    FULL_REBUILD_CHECK,
    TEST_MODEL_NAMES,
    copy_home,
    failed_checks,
    home_instance,
    run_ci_checks,
)


def test_every_run_and_check_passes(sample_home):
    _, results = sample_home
    models = TEST_MODEL_NAMES
    partitions = {r.partition for r in results} - {None}
    assert partitions == {
        *SNAPSHOT_YEARS,
        *models,
        *(f"{model}|{setting}" for model in models for setting in SETTINGS),
    }
    assert all(result.success for result in results)
    evaluations = [e for result in results for e in result.checks]
    checks = {key.name for key in build_definitions().resolve_asset_graph().asset_check_keys}
    assert {e.check_name for e in evaluations} == checks
    assert all(e.passed for e in evaluations)


def test_views_reflect_the_snapshots(sample_home):
    home, _ = sample_home
    warehouse = Warehouse(home)
    rows = warehouse.query("SELECT snapshot_year, count(*) AS n FROM claims GROUP BY 1").to_pylist()
    per_year = {row["snapshot_year"]: row["n"] for row in rows}
    assert sorted(per_year) == [int(y) for y in SNAPSHOT_YEARS]
    # facts only accumulate: a later snapshot knows at least as many statements
    counts = [per_year[int(y)] for y in SNAPSHOT_YEARS]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    # an end after the snapshot date is still open in that snapshot
    closed_later = warehouse.query(
        """
        SELECT count(*) AS n FROM claims a JOIN claims b USING (statement_id)
        WHERE a.snapshot_year = 2022 AND b.snapshot_year = 2025
          AND a.end_date IS NULL AND NOT a.end_unknown AND b.end_date > DATE '2022-12-31'
        """
    ).to_pylist()[0]["n"]
    assert closed_later > 0
    unlabelled_values = warehouse.query(
        "SELECT count(*) AS n FROM claims c ANTI JOIN labels l "
        "ON c.value_qid = l.qid AND c.snapshot_year = l.snapshot_year"
    ).to_pylist()[0]["n"]
    assert unlabelled_values == 0


def test_a_second_run_with_the_same_settings_finds_every_asset_up_to_date(sample_home, tmp_path):
    """Every asset, exports and the report included, is where a rerun looks for it."""
    home = copy_home(sample_home[0], tmp_path)
    log: list[str] = []
    run_selection(
        home=str(home),
        models=str(TEST_MODELS),
        settings=BenchmarkSettings(**SAMPLE_SETTINGS),
        instance=home_instance(home),
        echo=log.append,
    )
    assert log[-1] == "nothing to do: every asset of the selection is up to date", log


def test_rematerializing_gives_identical_files(sample_home, sample_truth_home, tmp_path):
    """Two homes built from scratch hold the same bytes, the paraphrased subset's template
    variants included: the sample home, and the session's other build of the facts taken on
    to the predictions. The second starts with the first's response cache, so no model is
    asked again: a model's own determinism is ``test_local_backend``'s."""
    home, _ = sample_home
    second_home = copy_home(sample_truth_home, tmp_path)
    shutil.copytree(home / "cache", second_home / "cache")
    run_selection(
        home=str(second_home),
        models=str(REFERENCE_MODELS),
        model_threads=MODEL_THREADS,
        settings=BenchmarkSettings(**SAMPLE_SETTINGS),
        instance=home_instance(second_home),
        echo=lambda _: None,
    )
    first, second = Warehouse(home), Warehouse(second_home)
    for asset in ("claims", "labels", "fact_intervals", "truth"):
        for year in SNAPSHOT_YEARS:
            assert (
                first.data_path(asset, snapshot_year=year).read_bytes()
                == second.data_path(asset, snapshot_year=year).read_bytes()
            ), f"{asset} {year} differs between two runs"
    for asset in ("present_day", "turns", "chains", "eval_sample", "paraphrased_subset"):
        assert first.data_path(asset).read_bytes() == second.data_path(asset).read_bytes(), asset
    for model in ("oracle", "present_day", "copy_previous"):
        for setting in SETTINGS:
            assert (
                first.data_path("predictions", model=model, setting=setting).read_bytes()
                == second.data_path("predictions", model=model, setting=setting).read_bytes()
            ), f"predictions {model}/{setting} differ between two runs"


def test_ci_check_job_fails_on_a_corrupted_input(sample_home, tmp_path):
    home, _ = sample_home
    corrupted = copy_home(home, tmp_path)
    report_path = corrupted / "claims" / "snapshot_year=2023" / "report.json"
    report = json.loads(report_path.read_text())
    report["counts"]["statements_seen"] += 1  # one statement no longer accounted for
    report_path.write_text(json.dumps(report))
    result = run_ci_checks(corrupted)
    assert not result.success
    failed = failed_checks(result)
    assert failed == {"claims_reconcile"}


def test_a_failing_blocking_check_stops_the_run(tmp_path):
    only_properties = tmp_path / "properties.jsonl"
    only_properties.write_text('{"id": "P31", "type": "property"}\n')
    with pytest.raises(RunFailed, match="claims_well_formed"):
        run_selection(
            home=str(tmp_path / "h"), dumps={"2022": str(only_properties)}, selection="key:claims",
            instance=dg.DagsterInstance.ephemeral(), echo=lambda _: None,
        )  # fmt: skip


def test_truth_checks_catch_a_wrong_gold_value(sample_home, tmp_path):
    home, _ = sample_home
    corrupted = copy_home(home, tmp_path)
    path = Warehouse(corrupted).data_path("truth", snapshot_year="2024")
    table = pq.read_table(path)
    rows = table.to_pylist()
    victim = next(
        i for i, row in enumerate(rows) if row["anchor"] == "2010" and row["n_values"] == 1
    )
    rows[victim]["value_qids"] = ["Q1"]  # a value that holds nowhere
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    result = run_ci_checks(corrupted)
    assert not result.success
    failed = failed_checks(result)
    assert failed == {
        "truth_values_hold_at_anchor",
        "truth_keys_and_canonical",
        "truth_deterministic",
    }


def test_the_determinism_check_regenerates_one_shard_past_its_bound(sample_home, tmp_path):
    """Past ``subjects_per_check`` root subjects a snapshot's chains are checked one
    shard at a time: a changed chain of that shard fails the check, one of
    another shard is not regenerated."""
    from chronoscope_dagster.chains.facts import Shard
    from chronoscope_dagster.storage.chains import warehouse_facts

    home = copy_home(sample_home[0], tmp_path)
    path = Warehouse(home).data_path("family_scope_switch", snapshot_year="2025")
    stored = pq.read_table(path)
    roots = warehouse_facts(Warehouse(home), "2025", Shard(1, 3)).wide.roots or frozenset()
    firsts = [row for row in stored.to_pylist() if row["turn_index"] == 0]
    inside = next(r["chain_id"] for r in firsts if r["subject_qid"] in roots)
    outside = next(r["chain_id"] for r in firsts if r["subject_qid"] not in roots)
    job = build_definitions(str(home)).resolve_job_def("ci_checks")

    def check(changed: str) -> dg.AssetCheckEvaluation:
        rows = stored.to_pylist()
        for row in rows:
            if row["chain_id"] == changed and row["turn_index"] == 1:
                row["answer"] = "Atlantis"
        pq.write_table(pa.Table.from_pylist(rows, schema=stored.schema), path)
        config = {"subjects_per_check": 400, "shard": 1}
        result = job.execute_in_process(
            instance=dg.DagsterInstance.ephemeral(),
            raise_on_error=False,
            op_selection=[FULL_REBUILD_CHECK],
            run_config={"ops": {FULL_REBUILD_CHECK: {"config": config}}},
        )
        [evaluation] = result.get_asset_check_evaluations()
        return evaluation

    untouched = check(outside)
    assert untouched.passed, untouched.metadata
    assert untouched.metadata["subjects_regenerated"].value["2025"] == "shard 1 of 3"
    changed = check(inside)
    assert not changed.passed
    assert changed.metadata["differing"].value == ["scope_switch[2025]"]
