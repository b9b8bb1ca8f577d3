"""Jobs, sensors and schedules."""

import dagster as dg

from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.partitions import model_partitions
from chronoscope_dagster.resources import ModelRegistry

EVALUATION = dg.AssetSelection.assets(
    "predictions", "metrics", "paraphrase_predictions", "paraphrase_metrics"
)
PROBE = dg.AssetSelection.assets("probe_runs")
PER_MODEL = EVALUATION | PROBE

main_job = dg.define_asset_job(
    "chronoscope_main",
    selection=dg.AssetSelection.all() - PER_MODEL,
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
