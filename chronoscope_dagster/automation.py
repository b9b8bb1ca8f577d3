"""Jobs, sensors, schedules and declarative automation."""

import os

import dagster as dg

from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.partitions import model_partitions
from chronoscope_dagster.resources import ModelRegistry

EVALUATION_ASSETS = ("predictions", "metrics", "paraphrase_predictions", "paraphrase_metrics")
PER_MODEL_ASSETS = (*EVALUATION_ASSETS, "probe_runs")
"""The assets partitioned by model: the registry sensor and backfills run them."""
EVALUATION = dg.AssetSelection.assets(*EVALUATION_ASSETS)
PROBE = dg.AssetSelection.assets("probe_runs")
PER_MODEL = EVALUATION | PROBE

BENCHMARK = dg.AssetSelection.all() - PER_MODEL
"""The benchmark and what is rolled up from the evaluations: what ``chronoscope_main`` runs."""
AUTOMATION_ENV = "CHRONOSCOPE_AUTOMATION"

SOURCES_OBSERVED = dg.AutomationCondition.on_cron("*/15 * * * *")
"""The dumps, settings and registry entries are observed every quarter of an hour."""
REBUILT_ON_CHANGE = (
    (
        dg.AutomationCondition.any_deps_match(dg.AutomationCondition.data_version_changed())
        | dg.AutomationCondition.code_version_changed()
    ).since_last_handled()
    & ~dg.AutomationCondition.any_deps_missing()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("an input's data version or the code changed")
"""A benchmark asset partition is rebuilt once an input's data version changes (a dump, a
setting, an upstream asset rebuilt into other data) or its code version does: Dagster's
staleness, acted upon. An input rebuilt into the same data version triggers nothing."""


def benchmark_freshness_sensor() -> dg.AutomationConditionSensorDefinition:
    """Evaluates the conditions above. Stopped unless ``$CHRONOSCOPE_AUTOMATION`` is ``on``
    (or turned on in the UI): a first build of the whole benchmark is a decision, not a
    side effect of starting the daemon."""
    running = os.environ.get(AUTOMATION_ENV, "").lower() in ("1", "on", "true", "yes")
    return dg.AutomationConditionSensorDefinition(
        "benchmark_freshness",
        target=dg.AssetSelection.all(include_sources=True) - PER_MODEL,
        default_status=(
            dg.DefaultSensorStatus.RUNNING if running else dg.DefaultSensorStatus.STOPPED
        ),
        minimum_interval_seconds=60,
        description="Observes the dumps, settings and registry entries every 15 minutes and "
        "rebuilds the benchmark assets whose inputs got a new data version or whose code "
        "changed (the UI's stale markers).",
    )


main_job = dg.define_asset_job(
    "chronoscope_main",
    selection=BENCHMARK,
    description="The benchmark: every asset but the per-model ones, with its checks. A job "
    "holds one partitions definition besides unpartitioned assets, so model partitions run "
    "in evaluate_model (`chronoscope run` runs both).",
)

ci_checks_job = dg.define_asset_job(
    "ci_checks",
    selection=dg.AssetSelection.all_asset_checks(),
    description="Every asset check against what is materialized; a failing blocking check fails it.",
)

evaluation_job = dg.define_asset_job(
    "evaluate_model",
    selection=EVALUATION,
    description="Evaluate one (model, setting) partition; the model_registry sensor and "
    "backfills of a new model run this.",
)


probe_job = dg.define_asset_job(
    "probe_model",
    selection=PROBE,
    description="The time-grounded probe's four arms for one model partition.",
)


@dg.sensor(
    name="model_registry",
    jobs=[evaluation_job, probe_job],
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a `model` partition for every new entry of the model registry and "
    "requests its evaluation under every setting and its probe run.",
)
def model_registry_sensor(
    context: dg.SensorEvaluationContext, models: ModelRegistry
) -> dg.SensorResult | dg.SkipReason:
    known = set(context.instance.get_dynamic_partitions(model_partitions.name))
    new = [spec.name for spec in models.specs() if spec.name not in known]
    if not new:
        return dg.SkipReason(f"no new model in the registry ({len(known)} known)")
    context.log.info(f"new models: {', '.join(new)}")
    return dg.SensorResult(
        dynamic_partitions_requests=[model_partitions.build_add_request(new)],
        run_requests=[
            *(
                dg.RunRequest(
                    run_key=f"{model}/{setting}",
                    partition_key=dg.MultiPartitionKey({"model": model, "setting": setting}),
                    job_name=evaluation_job.name,
                )
                for model in new
                for setting in SETTINGS
            ),
            *(
                dg.RunRequest(
                    run_key=f"{model}/probe", partition_key=model, job_name=probe_job.name
                )
                for model in new
            ),
        ],
    )
