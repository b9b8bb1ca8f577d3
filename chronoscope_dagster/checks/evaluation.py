"""Checks of the evaluation stage: every scored turn has exactly one prediction; the
reference systems score what they must; every metric is in range and agrees with its strata."""

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from chronoscope_dagster.assets.evaluation import sample_turns_sql, scored_turns
from chronoscope_dagster.assets.paraphrase import VARIANTS, variant_turns_sql
from chronoscope_dagster.checks.partitions import checked_partitions
from chronoscope_dagster.evaluation.knowledge import (
    REFERENCE_EXPLICIT_ACC,
    REFERENCE_KNOWLEDGE,
    knowledge_metrics,
    reference_knowledge_problems,
)
from chronoscope_dagster.evaluation.metrics import OVERALL, consistency_problems
from chronoscope_dagster.evaluation.prompts import PAPER_SETTINGS, Setting
from chronoscope_dagster.resources import WarehouseResource
from chronoscope_dagster.sql import sql_list
from chronoscope_dagster.warehouse import Warehouse, parquet_source


def checked_model_partitions(
    context: dg.AssetCheckExecutionContext, store: Warehouse, asset: str = "predictions"
) -> list[tuple[str, Setting]]:
    """The (model, setting) partition the run materialized, else every materialized one."""
    return [(p["model"], Setting(p["setting"])) for p in checked_partitions(context, store, asset)]


def _expected_turns_sql(store: Warehouse, asset: str, setting: Setting) -> str:
    """(variant, chain_id, turn_index) of every turn the asset's partition must answer."""
    if asset == "predictions":
        return f"""SELECT 'original' AS variant, chain_id, turn_index
                   FROM ({sample_turns_sql(store, setting)})"""
    return " UNION ALL ".join(
        f"SELECT '{variant}' AS variant, chain_id, turn_index FROM ({variant_turns_sql(store, variant)})"
        for variant in VARIANTS
    )


def _coverage(store: Warehouse, asset: str, model: str, setting: Setting) -> dict[str, int]:
    first = int(store.read_report(asset, model=model, setting=setting)["first_scored_turn"])
    needs_context = setting is Setting.SELF_CONDITIONED
    path = parquet_source(store.data_path(asset, model=model, setting=setting))
    got = (
        f"SELECT * FROM {path}"
        if asset != "predictions"
        else (f"SELECT *, 'original' AS variant FROM {path}")
    )
    keys = "variant, chain_id, turn_index"
    with store.connect() as connection:
        row = connection.execute(
            f"""WITH expected AS (
                    SELECT {keys}, turn_index >= {first} AS scored
                    FROM ({_expected_turns_sql(store, asset, setting)})
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
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
    ) -> dg.AssetCheckResult:
        store = warehouse.warehouse
        partitions = checked_model_partitions(context, store, asset)
        report = {f"{m}/{s}": _coverage(store, asset, m, s) for m, s in partitions}
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
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
    ) -> dg.AssetCheckResult:
        store = warehouse.warehouse
        errors: dict[str, int] = {}
        for model, setting in checked_model_partitions(context, store, asset):
            path = parquet_source(store.data_path(asset, model=model, setting=setting))
            with store.connect() as connection:
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


PERFECT_FOR_THE_ORACLE = (
    "acc_at1",
    "acc_atk",
    "strict_chain_acc_at1",
    "avg_chain_turn_acc_at1",
    "final_turn_acc_at1",
    "final_turn_acc_atk",
    "token_f1_micro_top1",
    "char3_f1_micro_top1",
)
ZERO_FOR_THE_ORACLE = ("drift_rate_given_present_at1", "drift_rate_given_present_atk")


def _copy_previous_mismatches(
    store: Warehouse, predictions: str, model: str, setting: Setting
) -> tuple[int, int]:
    """(scored predictions, those that are not the copy): gold context must copy the previous
    turn's gold, recomputed from ``turns``; questions-only shows nothing to copy; self-conditioned
    copies its own previous prediction (empty on the first turn)."""
    file = store.data_path(predictions, model=model, setting=setting)
    path = parquet_source(file)
    on = "ON prev.chain_id = p.chain_id AND prev.turn_index = p.turn_index - 1"
    if setting is Setting.GOLD_CONTEXT:
        previous, join = (
            "prev.answer",
            f"LEFT JOIN {parquet_source(store.data_path('turns'))} prev {on}",
        )
    elif setting is Setting.SELF_CONDITIONED:
        if "variant" in pq.read_schema(file).names:
            on += " AND prev.variant = p.variant"
        previous, join = "coalesce(prev.prediction, '')", f"LEFT JOIN {path} prev {on}"
    else:
        previous, join = "''", ""
    with store.connect() as connection:
        n, wrong = connection.execute(
            f"""SELECT count(*), count_if(p.prediction IS DISTINCT FROM {previous})
                FROM {path} p {join} WHERE p.scored"""
        ).fetchone()
    return int(n), int(wrong or 0)


def _knowledge_problems(store: Warehouse, backend: str, model: str, setting: Setting) -> list[str]:
    """A reference system's knowledge metrics (``REFERENCE_KNOWLEDGE``) in the paper settings
    this partition pairs with: the setting itself, or under explicit scope every paper setting
    with metrics; nothing until both sides of a pair have metrics in the same match mode."""
    explicit = Setting.EXPLICIT_SCOPE
    settings = PAPER_SETTINGS if setting is explicit else (setting,)
    problems = []
    for paired in settings:
        if not all(store.has("metrics", model=model, setting=s) for s in (paired, explicit)):
            continue
        modes = {
            store.read_report("metrics", model=model, setting=s)["match_mode"]
            for s in (paired, explicit)
        }
        if len(modes) > 1:
            continue
        (mode,) = modes
        knowledge = knowledge_metrics(
            scored_turns(store, model, paired, mode),
            scored_turns(store, model, explicit, mode),
            bootstrap=0,
        )
        problems += [
            f"{backend} {model}/{paired} against {explicit}: {problem}"
            for problem in reference_knowledge_problems(backend, knowledge)
        ]
    return problems


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
        "implicit one, in every paper setting.",
    )
    def reference_systems_behave(
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
    ) -> dg.AssetCheckResult:
        store = warehouse.warehouse
        problems: list[str] = []
        checked = []
        for model, setting in checked_model_partitions(context, store, asset):
            report = store.read_report(predictions, model=model, setting=setting)
            backend = report["backend"]["backend"]
            if asset == "metrics" and backend in REFERENCE_KNOWLEDGE:
                problems += _knowledge_problems(store, backend, model, setting)
            if setting is Setting.EXPLICIT_SCOPE and backend in REFERENCE_EXPLICIT_ACC:
                expected = REFERENCE_EXPLICIT_ACC[backend]
                table = pq.read_table(store.data_path(asset, model=model, setting=setting))
                problems += [
                    f"{backend} {model}/{setting} {row.get('variant') or ''}: acc_at1 = "
                    f"{row['value']}, not {expected}"
                    for row in table.to_pylist()
                    if row["stratum"] == OVERALL
                    and row["metric"] == "acc_at1"
                    and row["value"] != expected
                ]
            if backend == "scope_blind":
                checked.append(f"{model}/{setting}")
            elif backend == "oracle":
                checked.append(f"{model}/{setting}")
                table = pq.read_table(store.data_path(asset, model=model, setting=setting))
                for row in table.to_pylist():
                    expected = (
                        1.0
                        if row["metric"] in PERFECT_FOR_THE_ORACLE
                        else 0.0
                        if row["metric"] in ZERO_FOR_THE_ORACLE
                        else None
                    )
                    if expected is not None and row["value"] != expected:
                        problems.append(
                            f"oracle {model}/{setting} {row.get('variant') or ''} "
                            f"{row['stratum']} {row['metric']} = {row['value']}, not {expected}"
                        )
            elif backend == "present_day":
                checked.append(f"{model}/{setting}")
                mode = store.read_report(asset, model=model, setting=setting)["match_mode"]
                for variant in variants:
                    turns = scored_turns(store, model, setting, mode, predictions, variant)
                    turns = turns.filter(pc.field("drift_eligible"))
                    right = pc.sum(pc.cast(turns["correct_at1"], pa.int64())).as_py() or 0
                    drifted = pc.sum(pc.cast(turns["drift_at1"], pa.int64())).as_py() or 0
                    if right or drifted < turns.num_rows:
                        problems.append(
                            f"present_day {model}/{setting} {variant or ''}: of "
                            f"{turns.num_rows} drift-eligible turns, {right} are right and "
                            f"{turns.num_rows - drifted} do not drift"
                        )
            elif backend == "copy_previous":
                checked.append(f"{model}/{setting}")
                n, wrong = _copy_previous_mismatches(store, predictions, model, setting)
                if wrong:
                    problems.append(
                        f"copy_previous {model}/{setting}: {wrong} of {n} scored predictions "
                        "are not the previous answer of the conversation"
                    )
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
        context: dg.AssetCheckExecutionContext, warehouse: WarehouseResource
    ) -> dg.AssetCheckResult:
        store = warehouse.warehouse
        problems = []
        for model, setting in checked_model_partitions(context, store, asset):
            table = pq.read_table(store.data_path(asset, model=model, setting=setting))
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
