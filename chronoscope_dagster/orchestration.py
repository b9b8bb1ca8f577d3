"""Running a selection of assets in process, partition by partition, as the CLI does.

The selected assets (plus every upstream asset with no output in the home yet)
are run in topological order, grouped by partitions definition: one run per
partition key of each group, each with the checks of its assets. The first
failed run (a step error or a failed blocking check) stops everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

import dagster as dg

from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.partitions import (
    model_partitions,
    model_setting_partitions,
    snapshot_year_partitions,
)
from chronoscope_dagster.resources import DumpSources, ModelRegistry
from chronoscope_dagster.warehouse import Warehouse

INFO_LOGGING = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
ASSET_OF_OP = {"chains_and_turns": "turns"}
"""Ops whose name is not their (first) asset's."""


class RunFailed(RuntimeError):
    """A run of the plan failed; the message names the failed steps and checks."""


def run_selection(
    *,
    home: str,
    selection: str = "*",
    dumps: dict[str, str] | None = None,
    checksums: dict[str, str] | None = None,
    workers: int = 0,
    op_config: Mapping[str, Mapping[str, object]] | None = None,
    models: str | None = None,
    instance: dg.DagsterInstance | None = None,
    upstream: bool = True,
    echo: Callable[[str], None] = print,
) -> list[dg.ExecuteInProcessResult]:
    """Run ``selection`` and, with ``upstream``, every asset upstream of it that the home does
    not hold yet; returns the results of the runs, in order."""
    registry = ModelRegistry(path=models or "")
    defs = build_definitions(
        home,
        DumpSources(dumps=dumps or {}, checksums=checksums or {}, workers=workers),
        models=registry,
    )
    instance = instance or dg.DagsterInstance.get()
    model_names = [spec.name for spec in registry.specs()]
    known = set(instance.get_dynamic_partitions(model_partitions.name))
    if new := [name for name in model_names if name not in known]:
        instance.add_dynamic_partitions(model_partitions.name, new)
        echo(f"added model partitions: {', '.join(new)}")
    graph = defs.resolve_asset_graph()
    try:
        selected = dg.AssetSelection.from_string(selection).resolve(graph)
    except Exception as error:
        raise ValueError(f"invalid asset selection {selection!r}: {error}") from error
    if not selected:
        raise ValueError(f"asset selection {selection!r} matches no asset")
    warehouse = Warehouse(home)
    wanted = set(selected)
    for key in selected if upstream else ():
        wanted |= {
            ancestor
            for ancestor in graph.get_ancestor_asset_keys(key)
            if not _materialized(warehouse, graph, ancestor, model_names)
        }
    for assets_def in defs.assets or ():
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.keys & wanted:
            wanted |= assets_def.keys  # a multi-asset runs whole
    job = defs.resolve_implicit_global_asset_job_def()
    plan = [
        (keys, partition_key)
        for keys, partitions_def in _groups(
            graph, (k for k in graph.toposorted_asset_keys if k in wanted)
        )
        for partition_key in (
            _partition_keys(partitions_def, model_names) if partitions_def else [None]
        )
    ]
    results = []
    for number, (keys, partition_key) in enumerate(plan, start=1):
        names = ", ".join(key.to_user_string() for key in keys)
        label = f"{names} [{partition_key}]" if partition_key else names
        echo(f"==> [{number}/{len(plan)}] {label}")
        started = time.perf_counter()
        run_config = dict(INFO_LOGGING)
        ops = {
            op: {"config": dict(config)}
            for op, config in (op_config or {}).items()
            if dg.AssetKey(ASSET_OF_OP.get(op, op)) in keys
        }
        if ops:
            run_config["ops"] = ops
        result = job.execute_in_process(
            asset_selection=keys,
            partition_key=partition_key,
            instance=instance,
            run_config=run_config,
            raise_on_error=False,
        )
        results.append(result)
        failed_checks = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
        checks = len(result.get_asset_check_evaluations())
        echo(
            f"    {'ok' if result.success else 'FAILED'} in {time.perf_counter() - started:.1f} s: "
            f"{len(result.get_asset_materialization_events())} materializations, "
            f"{checks - len(failed_checks)}/{checks} checks passed"
        )
        if failed_checks:
            echo(f"    failed checks: {', '.join(failed_checks)}")
        if not result.success:
            failed_steps = [
                e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"
            ]
            raise RunFailed(
                f"run {result.run_id} failed on {label}: steps {', '.join(failed_steps) or '-'}; "
                f"failed checks {', '.join(failed_checks) or '-'}"
            )
    return results


def _materialized(warehouse: Warehouse, graph, key: dg.AssetKey, models: list[str]) -> bool:
    node = graph.get(key)
    name = key.to_user_string()
    if node.partitions_def is None:
        return warehouse.has(name)
    return all(
        warehouse.has(name, **_partition_fields(node.partitions_def, partition))
        for partition in _partition_keys(node.partitions_def, models)
    )


def _partition_keys(partitions_def: dg.PartitionsDefinition, models: list[str]) -> list[str]:
    """Every key of a partitions definition; the model dimension takes the registry's models,
    in registry order."""
    if partitions_def == model_setting_partitions:
        return [
            dg.MultiPartitionKey({"model": model, "setting": setting})
            for model in models
            for setting in SETTINGS
        ]
    if partitions_def == model_partitions:
        return list(models)
    return list(partitions_def.get_partition_keys())


def _partition_fields(partitions_def: dg.PartitionsDefinition, key: str) -> dict[str, str]:
    """The warehouse's partition folders (``name=value``) of a partition key."""
    if isinstance(key, dg.MultiPartitionKey):
        return dict(key.keys_by_dimension)
    if partitions_def == snapshot_year_partitions:
        return {"snapshot_year": key}
    if partitions_def == model_partitions:
        return {"model": key}
    raise NotImplementedError(f"no warehouse layout for {partitions_def}")


def _groups(graph, ordered: Iterable[dg.AssetKey]):
    """Consecutive runs of assets sharing a partitions definition."""
    groups: list[tuple[list[dg.AssetKey], dg.PartitionsDefinition | None]] = []
    for key in ordered:
        partitions_def = graph.get(key).partitions_def
        if groups and groups[-1][1] == partitions_def:
            groups[-1][0].append(key)
        else:
            groups.append(([key], partitions_def))
    return groups
