"""Declarative automation keeps the benchmark fresh in a deployment: the freshness sensor's
conditions request what a changed dump feeds, and nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import yaml

from chronoscope_dagster.data import sample_dump_path
from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.orchestration import run_selection
from chronoscope_dagster.resources import DumpSources

DEPLOYED_INSTANCE = Path(__file__).resolve().parents[1] / "deploy" / "dagster.yaml"


def test_a_changed_dump_requests_the_rebuild_of_exactly_what_it_feeds(tmp_path):
    """With the deployment's instance settings (data versions respected), as the daemon runs
    the sensor: a changed dump's extraction, then the intervals its new claims feed."""
    dump = tmp_path / "dump.json.gz"
    shutil.copy(sample_dump_path("2022"), dump)
    home = tmp_path / "home"
    deployed = yaml.safe_load(DEPLOYED_INSTANCE.read_text())["auto_materialize"]
    instance = dg.DagsterInstance.local_temp(
        tempdir=str(tmp_path), overrides={"auto_materialize": deployed}
    )
    run_selection(
        home=str(home), selection="key:claims", dumps={"2025": str(dump)}, instance=instance,
        echo=lambda _: None,
    )  # fmt: skip
    defs = build_definitions(str(home), DumpSources(dumps={"2025": str(dump)}))
    benchmark = dg.AssetSelection.assets("claims", "labels", "lifespans", "fact_intervals")
    first = dg.evaluate_automation_conditions(defs, instance, asset_selection=benchmark)
    assert first.total_requested == 0, "nothing changed since the build"

    shutil.copy(sample_dump_path("2023"), dump)
    observation = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        asset_selection=[dg.AssetKey("wikidata_dump")], instance=instance
    )
    assert observation.success
    second = dg.evaluate_automation_conditions(
        defs, instance, asset_selection=benchmark, cursor=first.cursor
    )
    requested = {
        key.to_user_string(): sorted(second.get_requested_partitions(key))
        for key in (dg.AssetKey(name) for name in ("claims", "labels", "lifespans"))
    }
    assert requested == {"claims": ["2025"], "labels": ["2025"], "lifespans": ["2025"]}
    assert second.get_num_requested(dg.AssetKey("fact_intervals")) == 0, "not before claims"

    run_selection(
        home=str(home), selection="key:claims", dumps={"2025": str(dump)}, instance=instance,
        echo=lambda _: None,
    )  # fmt: skip
    run_selection(
        home=str(home), selection="key:claims", dumps={"2025": str(dump)}, instance=instance,
        force=True, echo=lambda _: None,
    )  # fmt: skip
    third = dg.evaluate_automation_conditions(
        defs, instance, asset_selection=benchmark, cursor=second.cursor
    )
    assert sorted(third.get_requested_partitions(dg.AssetKey("fact_intervals"))) == ["2025"], (
        "claims [2025] has new data; the forced rebuilds of the other years have the same"
    )
