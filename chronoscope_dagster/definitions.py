"""The one Definitions object of the code location."""

import os

import dagster as dg
from dagster_duckdb import DuckDBResource

from chronoscope_dagster.assets import chains, evaluation, ingest, paraphrase, probe, sources, truth
from chronoscope_dagster.automation import (
    PER_MODEL_ASSETS,
    REBUILT_ON_CHANGE,
    benchmark_freshness_sensor,
    ci_checks_job,
    evaluation_job,
    main_job,
    model_registry_sensor,
    probe_job,
)
from chronoscope_dagster.checks import chains as chains_checks
from chronoscope_dagster.checks import evaluation as evaluation_checks
from chronoscope_dagster.checks import ingest as ingest_checks
from chronoscope_dagster.checks import paraphrase as paraphrase_checks
from chronoscope_dagster.checks import probe as probe_checks
from chronoscope_dagster.checks import truth as truth_checks
from chronoscope_dagster.code_versions import code_version
from chronoscope_dagster.processes import executor_name
from chronoscope_dagster.resources import (
    AnchorCalendar,
    BenchmarkSettings,
    DumpSources,
    ModelRegistry,
)
from chronoscope_dagster.warehouse import Warehouse

OWNERS = ["team:chronoscope"]
"""Who owns every asset (the UI's owner filter); set here once for all of them."""
EXECUTORS = ("in_process", "multiprocess", "celery")
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"


def executor_from_environment() -> dg.ExecutorDefinition:
    """The executor named by ``CHRONOSCOPE_EXECUTOR``: ``in_process`` (the default: one
    process, as the command line runs), ``multiprocess`` (steps in child processes on this
    machine) or ``celery`` (steps as tasks for the workers of the broker
    ``CHRONOSCOPE_CELERY_BROKER``, on any machine that shares the home and the instance)."""
    name = executor_name()
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    if name == "celery":
        from dagster_celery import celery_executor

        broker = os.environ.get("CHRONOSCOPE_CELERY_BROKER", DEFAULT_BROKER)
        backend = os.environ.get("CHRONOSCOPE_CELERY_BACKEND", broker)
        return celery_executor.configured({"broker": broker, "backend": backend})
    raise ValueError(f"CHRONOSCOPE_EXECUTOR={name!r}: expected one of {', '.join(EXECUTORS)}")


def build_definitions(
    home: str | None = None,
    dump_sources: DumpSources | None = None,
    anchor_calendar: AnchorCalendar | None = None,
    models: ModelRegistry | None = None,
    settings: BenchmarkSettings | None = None,
    executor: dg.ExecutorDefinition | None = None,
) -> dg.Definitions:
    warehouse = Warehouse(home)
    return dg.Definitions(
        assets=[
            _versioned(assets)
            for assets in dg.load_assets_from_modules(
                [sources, ingest, truth, chains, evaluation, paraphrase, probe]
            )
        ],
        asset_checks=dg.load_asset_checks_from_modules(
            [
                ingest_checks,
                truth_checks,
                chains_checks,
                evaluation_checks,
                paraphrase_checks,
                probe_checks,
            ]
        ),
        jobs=[main_job, ci_checks_job, evaluation_job, probe_job],
        sensors=[model_registry_sensor, benchmark_freshness_sensor()],
        resources={
            "warehouse": warehouse,
            "duckdb": DuckDBResource(database=str(warehouse.duckdb_path)),
            "dump_sources": dump_sources or DumpSources.from_environment(),
            "anchor_calendar": anchor_calendar or AnchorCalendar(),
            "models": models or ModelRegistry(models_dir=str(warehouse.home / "models")),
            "benchmark_settings": settings or BenchmarkSettings.from_environment(),
        },
        executor=executor or dg.in_process_executor,
    )


def _versioned(
    assets: dg.AssetsDefinition | dg.SourceAsset,
) -> dg.AssetsDefinition | dg.SourceAsset:
    """``assets`` owned by the team and, when it is materialized, versioned by its source and,
    unless it is a model's, rebuilt by the freshness sensor when its inputs or code change."""
    if isinstance(assets, dg.SourceAsset):
        return assets
    if not assets.is_materializable:
        return assets.map_asset_specs(lambda spec: spec.replace_attributes(owners=OWNERS))
    version = code_version(assets)
    return assets.map_asset_specs(
        lambda spec: spec.replace_attributes(
            owners=OWNERS,
            code_version=version,
            automation_condition=(
                None if spec.key.to_user_string() in PER_MODEL_ASSETS else REBUILT_ON_CHANGE
            ),
        )
    )


defs = build_definitions(executor=executor_from_environment())
