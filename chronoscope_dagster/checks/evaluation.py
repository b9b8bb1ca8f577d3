"""Checks of the evaluation stage: every scored turn has exactly one prediction; the
reference systems score what they must; every metric is in range and agrees with its strata."""

from functools import partial

import dagster as dg
import pyarrow.compute as pc
import pyarrow.parquet as pq

from chronoscope_dagster.checks.partitions import checked_partitions
from chronoscope_dagster.evaluation.consistency import consistency_problems
from chronoscope_dagster.evaluation.prompts import Setting
from chronoscope_dagster.evaluation.queries import sample_turns_sql
from chronoscope_dagster.evaluation.reference_systems import reference_problems
from chronoscope_dagster.paraphrase.queries import VARIANTS, variant_turns_sql
from chronoscope_dagster.sql import sql_list
from chronoscope_dagster.storage.evaluation import (
    copy_previous_mismatches,
    match_modes,
    prediction_backend,
    scored_turns,
)
from chronoscope_dagster.warehouse import Warehouse, parquet_source


def checked_model_partitions(
    context: dg.AssetCheckExecutionContext, warehouse: Warehouse, asset: str = "predictions"
) -> list[tuple[str, Setting]]:
    """The (model, setting) partition the run materialized, else every materialized one."""
    return [
        (p["model"], Setting(p["setting"])) for p in checked_partitions(context, warehouse, asset)
    ]


def _expected_turns_sql(warehouse: Warehouse, asset: str, setting: Setting) -> str:
    """(variant, chain_id, turn_index) of every turn the asset's partition must answer."""
    turns = parquet_source(warehouse.data_path("turns"))
    if asset == "predictions":
        sample = parquet_source(warehouse.data_path("eval_sample"))
        return f"""SELECT 'original' AS variant, chain_id, turn_index
                   FROM ({sample_turns_sql(turns, sample, setting)})"""
    paraphrases = parquet_source(warehouse.data_path("paraphrased_subset"))
    return " UNION ALL ".join(
        f"SELECT '{variant}' AS variant, chain_id, turn_index "
        f"FROM ({variant_turns_sql(turns, paraphrases, variant)})"
        for variant in VARIANTS
    )


def _coverage(warehouse: Warehouse, asset: str, model: str, setting: Setting) -> dict[str, int]:
    first = int(warehouse.read_report(asset, model=model, setting=setting)["first_scored_turn"])
    needs_context = setting is Setting.SELF_CONDITIONED
    path = parquet_source(warehouse.data_path(asset, model=model, setting=setting))
    got = (
        f"SELECT * FROM {path}"
        if asset != "predictions"
        else (f"SELECT *, 'original' AS variant FROM {path}")
    )
    keys = "variant, chain_id, turn_index"
    with warehouse.connect() as connection:
        row = connection.execute(
            f"""WITH expected AS (
                    SELECT {keys}, turn_index >= {first} AS scored
                    FROM ({_expected_turns_sql(warehouse, asset, setting)})
                    WHERE turn_index >= {first} OR {str(needs_context).lower()}),
                got AS ({got}),
                counted AS (SELECT {keys}, count(*) AS n FROM got GROUP BY ALL)
            SELECT
                (SELECT count(*) FROM expected e ANTI JOIN got g USING ({keys})),
                (SELECT count(*) FROM got g ANTI JOIN expected e USING ({keys})),
                (SELECT coalesce(sum(n - 1), 0) FROM counted WHERE n > 1),
                (SELECT count(*) FROM got g JOIN expected e USING ({keys})
                 WHERE g.scored <> e.scored),
                (SELECT count_if((prediction IS NULL) = (error IS NULL)
                                 OR (prediction IS NOT NULL AND len(candidates) = 0)) FROM got),
                (SELECT count_if(scored) FROM got),
                (SELECT count_if(error IS NOT NULL) FROM got)"""
        ).fetchone()
    names = (
        "missing",
        "unexpected",
        "duplicates",
        "wrongly_scored",
        "malformed",
        "scored",
        "errors",
    )
    return dict(zip(names, (int(v or 0) for v in row), strict=True))


def _prediction_checks(asset: str, turns: str) -> list[dg.AssetChecksDefinition]:
    @dg.asset_check(
        asset=asset,
        name="predictions_one_per_turn",
        blocking=True,
        description=f"Exactly one prediction per scored (chain, turn) of {turns} and setting "
        "(self-conditioned: per turn, context turns included); each row holds either an "
        "answer or the backend's error, never an empty stand-in.",
    )
    def one_per_turn(
        context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
    ) -> dg.AssetCheckResult:
        partitions = checked_model_partitions(context, warehouse, asset)
        report = {f"{m}/{s}": _coverage(warehouse, asset, m, s) for m, s in partitions}
        bad = {
            key: counts
            for key, counts in report.items()
            if any(
                counts[k]
                for k in ("missing", "unexpected", "duplicates", "wrongly_scored", "malformed")
            )
        }
        return dg.AssetCheckResult(
            passed=bool(report) and not bad,
            metadata={
                "partitions": sql_list(report),
                "scored_predictions": sum(c["scored"] for c in report.values()),
                "problems": dg.MetadataValue.json(bad),
            },
        )

    @dg.asset_check(
        asset=asset,
        name="predictions_without_errors",
        blocking=False,
        description="No backend errors (errors are counted rows, never empty answers; rerun "
        "the partition to retry them, cached answers cost nothing).",
    )
    def without_errors(
        context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
    ) -> dg.AssetCheckResult:
        errors: dict[str, int] = {}
        for model, setting in checked_model_partitions(context, warehouse, asset):
            path = parquet_source(warehouse.data_path(asset, model=model, setting=setting))
            with warehouse.connect() as connection:
                for kind, count in connection.execute(
                    f"""SELECT split_part(error, ':', 1), count(*) FROM {path}
                        WHERE error IS NOT NULL GROUP BY 1 ORDER BY 1"""
                ).fetchall():
                    errors[f"{model}/{setting}/{kind}"] = count
        return dg.AssetCheckResult(
            passed=not errors,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"errors": sum(errors.values()), "by_kind": dg.MetadataValue.json(errors)},
        )

    return [one_per_turn, without_errors]


def _metric_checks(asset: str, predictions: str) -> list[dg.AssetChecksDefinition]:
    variants = (None,) if asset == "metrics" else VARIANTS

    @dg.asset_check(
        asset=asset,
        name="metrics_reference_systems_behave",
        blocking=True,
        description="The oracle scores 1.0 on every accuracy and F1 metric in every stratum and "
        "never drifts; the present-day system is wrong and drifts on every drift-eligible turn; "
        "copy_previous answers the previous turn's gold (gold context), nothing questions-only "
        "and explicit-scope, its own previous answer self-conditioned; scope_blind scores 1.0 "
        "under explicit scope; against its explicit-scope run, the oracle knows every turn and "
        "loses none, scope_blind knows every turn and loses (drifts on) every drift-eligible "
        "implicit one, in every paper setting; on the headline scope_acc_at1, in every stratum "
        "where it exists, the oracle scores 1.0 and present_day and scope_blind 0 (scope_blind "
        "1.0 under explicit scope, where every turn states its scope). A reference system with "
        "a knowledge cutoff is held to its own present where the figure depends on the "
        "present: present_day drifts on every turn eligible against its own present and "
        "scores 0 on own_scope_acc_at1.",
    )
    def reference_systems_behave(
        context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
    ) -> dg.AssetCheckResult:
        problems: list[str] = []
        checked = []
        modes = match_modes(warehouse, asset)
        for model, setting in checked_model_partitions(context, warehouse, asset):
            found = reference_problems(
                prediction_backend(warehouse, predictions, model, setting),
                model,
                setting,
                variants,
                metrics=pq.read_table(warehouse.data_path(asset, model=model, setting=setting)),
                modes=modes,
                scored_turns=partial(scored_turns, warehouse, predictions),
                copy_previous=partial(
                    copy_previous_mismatches, warehouse, predictions, model, setting
                ),
            )
            if found is not None:
                checked.append(f"{model}/{setting}")
                problems += found
        return dg.AssetCheckResult(
            passed=not problems,
            metadata={
                "reference_partitions": sql_list(checked),
                "problems": dg.MetadataValue.json(problems[:50]),
            },
        )

    @dg.asset_check(
        asset=asset,
        name="metrics_in_range_and_consistent",
        blocking=True,
        description="Every metric lies in its range and inside its interval, and every overall "
        "value lies between the smallest and largest of its strata where it is their weighted "
        "mean (the paper's own Table 4 breaks this).",
    )
    def in_range_and_consistent(
        context: dg.AssetCheckExecutionContext, warehouse: dg.ResourceParam[Warehouse]
    ) -> dg.AssetCheckResult:
        problems = []
        for model, setting in checked_model_partitions(context, warehouse, asset):
            table = pq.read_table(warehouse.data_path(asset, model=model, setting=setting))
            for variant in variants:
                part = table if variant is None else table.filter(pc.field("variant") == variant)
                problems += [
                    f"{model}/{setting}{'' if variant is None else '/' + variant}: {problem}"
                    for problem in consistency_problems(part)
                ]
        return dg.AssetCheckResult(
            passed=not problems, metadata={"problems": dg.MetadataValue.json(problems[:50])}
        )

    return [reference_systems_behave, in_range_and_consistent]


predictions_checks = _prediction_checks("predictions", "the evaluation sample")
paraphrase_predictions_checks = _prediction_checks(
    "paraphrase_predictions", "the kept paraphrased chains, in both variants"
)
metrics_checks = _metric_checks("metrics", "predictions")
paraphrase_metrics_checks = _metric_checks("paraphrase_metrics", "paraphrase_predictions")
