"""The one Definitions object of the code location."""

import warnings

import dagster as dg
from dagster_duckdb import DuckDBResource

from chronoscope_dagster.assets import chains, evaluation, ingest, paraphrase, probe, truth
from chronoscope_dagster.automation import (
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
from chronoscope_dagster.checks import truth as truth_checks
from chronoscope_dagster.resources import (
    AnchorCalendar,
    DumpSources,
    ModelRegistry,
    WarehouseResource,
)
from chronoscope_dagster.warehouse import Warehouse

warnings.filterwarnings("ignore", category=dg.PreviewWarning)
warnings.filterwarnings("ignore", category=dg.BetaWarning)


def build_definitions(
    home: str | None = None,
    dump_sources: DumpSources | None = None,
    anchor_calendar: AnchorCalendar | None = None,
    models: ModelRegistry | None = None,
) -> dg.Definitions:
    warehouse = Warehouse(home)
    return dg.Definitions(
        assets=dg.load_assets_from_modules([ingest, truth, chains, evaluation, paraphrase, probe]),
        asset_checks=dg.load_asset_checks_from_modules(
            [
                ingest_checks,
                truth_checks,
                chains_checks,
                evaluation_checks,
                paraphrase_checks,
                probe,
            ]
        ),
        jobs=[main_job, ci_checks_job, evaluation_job, probe_job],
        sensors=[model_registry_sensor],
        resources={
            "warehouse": WarehouseResource(home=str(warehouse.home)),
            "duckdb": DuckDBResource(database=str(warehouse.duckdb_path)),
            "dump_sources": dump_sources or DumpSources(),
            "anchor_calendar": anchor_calendar or AnchorCalendar(),
            "models": models or ModelRegistry(),
        },
        executor=dg.in_process_executor,
    )


defs = build_definitions()
