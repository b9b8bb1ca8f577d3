"""Running a selection of assets in process, partition by partition, as the CLI does.

The selected assets (plus every upstream asset with no output in the home yet)
are run in topological order, grouped by partitions definition: one run per
partition key of each group, each with the checks of its assets. The first
failed run (a step error or a failed blocking check) stops everything.

Each materialized partition gets a run record (``.run.json`` beside its data):
whether its blocking checks passed, and a version, a hash of the dump source
(for ``wikidata_dump``) or of its parents' versions. An upstream partition
counts as materialized only when its record says it passed and its version is
the one the current sources give; otherwise it is planned again and the plan
says why. The whole plan holds the home's write lock.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping

import dagster as dg

from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.home_lock import home_lock
from chronoscope_dagster.partitions import (
    model_partitions,
    model_setting_partitions,
    snapshot_year_partitions,
)
from chronoscope_dagster.resources import DumpSources, ModelRegistry
from chronoscope_dagster.warehouse import Warehouse

INFO_LOGGING = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
RECORD_FILE = ".run.json"
SOURCE_ASSET = dg.AssetKey("wikidata_dump")


def run_config_of(
    keys: Collection[dg.AssetKey],
    op_config: Mapping[str, Mapping[str, object]] | None,
    graph: dg.AssetGraph,
) -> dict:
    """The run config of one run of ``keys``: the config of each op (by name, as ``graph``
    names it: a multi-asset's op is not named as its assets) that materializes one of them."""
    run_config = dict(INFO_LOGGING)
    ops_of_run = {
        assets.node_def.name
        for assets in graph.assets_defs
        if assets.is_executable and not assets.keys.isdisjoint(keys)
    }
    ops = {
        op: {"config": dict(config)} for op, config in (op_config or {}).items() if op in ops_of_run
    }
    if ops:
        run_config["ops"] = ops
    return run_config


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
    model_threads: int = 0,
    instance: dg.DagsterInstance | None = None,
    upstream: bool = True,
    echo: Callable[[str], None] = print,
    command: str | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run ``selection`` and, with ``upstream``, every asset upstream of it that the home does
    not hold as the current sources give it; returns the results of the runs, in order.
    ``model_threads`` (0: the registry's) is ``ModelRegistry.threads``. Raises
    ``HomeLocked`` when another process is writing the home."""
    with home_lock(Warehouse(home).home, command, echo):
        return _run_selection(
            home=home, selection=selection, dumps=dumps, checksums=checksums, workers=workers,
            op_config=op_config, models=models, model_threads=model_threads, instance=instance,
            upstream=upstream, echo=echo,
        )  # fmt: skip


def _run_selection(
    *,
    home: str,
    selection: str,
    dumps: dict[str, str] | None,
    checksums: dict[str, str] | None,
    workers: int,
    op_config: Mapping[str, Mapping[str, object]] | None,
    models: str | None,
    model_threads: int,
    instance: dg.DagsterInstance | None,
    upstream: bool,
    echo: Callable[[str], None],
) -> list[dg.ExecuteInProcessResult]:
    registry = ModelRegistry(
        path=models or "", threads=model_threads, models_dir=str(Warehouse(home).home / "models")
    )
    sources = DumpSources(dumps=dumps or {}, checksums=checksums or {}, workers=workers)
    defs = build_definitions(home, sources, models=registry)
    instance = instance or dg.DagsterInstance.get()
    model_names = [spec.name for spec in registry.specs()]
    known = set(instance.get_dynamic_partitions(model_partitions.name))
    if new := [name for name in model_names if name not in known]:
        instance.add_dynamic_partitions(model_partitions.name, new)
        echo(f"added model partitions: {', '.join(new)}")
    graph = defs.resolve_asset_graph()
    selected = _selected(graph, selection)
    warehouse = Warehouse(home)
    versions = _versions(graph, sources, model_names)
    stale = _stale_ancestors(warehouse, graph, selected, versions, model_names) if upstream else {}
    plan = _plan(defs, graph, selected, stale, model_names)
    for (key, partition_key), reason in stale.items():
        if reason != NOT_MATERIALIZED:
            label = key.to_user_string() + (f" [{partition_key}]" if partition_key else "")
            echo(f"planned again: {label}: {reason}")
    job = defs.resolve_implicit_global_asset_job_def()
    return [
        _execute(job, keys, partition_key, f"[{number}/{len(plan)}]", instance, op_config,
                 graph, warehouse, versions, echo)
        for number, (keys, partition_key) in enumerate(plan, start=1)
    ]  # fmt: skip


Plan = list[tuple[list[dg.AssetKey], str | None]]
"""The runs of a selection in order: the asset keys of each and its partition."""
Stale = dict[tuple[dg.AssetKey, str | None], str]
"""Partitions of unselected ancestors that must be built again, with the reason."""


def _selected(graph, selection: str) -> set[dg.AssetKey]:
    try:
        selected = dg.AssetSelection.from_string(selection).resolve(graph)
    except Exception as error:
        raise ValueError(f"invalid asset selection {selection!r}: {error}") from error
    if not selected:
        raise ValueError(f"asset selection {selection!r} matches no asset")
    return set(selected)


def _stale_ancestors(
    warehouse: Warehouse, graph, selected: set[dg.AssetKey], versions, model_names: list[str]
) -> Stale:
    """The partitions of the selection's unselected ancestors that are not valid inputs now."""
    ancestors = {a for key in selected for a in graph.get_ancestor_asset_keys(key)}
    stale: Stale = {}
    for key in ancestors - selected:
        for partition_key in _keys_of(graph, key, model_names):
            reason = _stale_reason(warehouse, graph, key, partition_key, versions)
            if reason is not None:
                stale[key, partition_key] = reason
    return stale


def _plan(
    defs: dg.Definitions, graph, selected: set[dg.AssetKey], stale: Stale, model_names: list[str]
) -> Plan:
    """One run per group of assets partitioned alike and partition, in topological order,
    holding the selected assets and the stale ancestors; a multi-asset runs whole."""
    multi_assets = [
        assets_def.keys
        for assets_def in defs.assets or ()
        if isinstance(assets_def, dg.AssetsDefinition) and len(assets_def.keys) > 1
    ]
    wanted = selected | {key for key, _ in stale}
    plan: Plan = []
    for keys, partitions_def in _groups(
        graph, (k for k in graph.toposorted_asset_keys if k in wanted)
    ):
        for partition_key in (
            _partition_keys(partitions_def, model_names) if partitions_def else [None]
        ):
            run_keys = {k for k in keys if k in selected or (k, partition_key) in stale}
            for siblings in multi_assets:
                if siblings & run_keys:
                    run_keys |= siblings
            if run_keys:
                plan.append(
                    ([k for k in graph.toposorted_asset_keys if k in run_keys], partition_key)
                )
    return plan


def _execute(
    job, keys: list[dg.AssetKey], partition_key: str | None, position: str,
    instance: dg.DagsterInstance, op_config, graph, warehouse: Warehouse, versions,
    echo: Callable[[str], None],
) -> dg.ExecuteInProcessResult:  # fmt: skip
    """One run of the plan, recorded in the home; ``RunFailed`` when a step or a blocking
    check fails."""
    names = ", ".join(key.to_user_string() for key in keys)
    label = f"{names} [{partition_key}]" if partition_key else names
    echo(f"==> {position} {label}")
    started = time.perf_counter()
    result = job.execute_in_process(
        asset_selection=keys,
        partition_key=partition_key,
        instance=instance,
        run_config=run_config_of(keys, op_config, graph),
        raise_on_error=False,
    )
    _record(warehouse, graph, result, keys, partition_key, versions)
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
    return result


NOT_MATERIALIZED = "not materialized"


def _keys_of(graph, key: dg.AssetKey, models: list[str]) -> list[str | None]:
    partitions_def = graph.get(key).partitions_def
    return _partition_keys(partitions_def, models) if partitions_def else [None]


def _versions(
    graph, sources: DumpSources, models: list[str]
) -> dict[tuple[dg.AssetKey, str | None], tuple[str, dict | None]]:
    """Every asset partition's version under the current sources (with, for a dump, its source
    fingerprint): a hash of the source, or of the versions of the parent partitions it reads
    (the same partition of a parent partitioned alike, every partition of any other)."""
    versions: dict[tuple[dg.AssetKey, str | None], tuple[str, dict | None]] = {}
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        for partition_key in _keys_of(graph, key, models):
            fingerprint = None
            if key == SOURCE_ASSET:
                fingerprint = sources.fingerprint(str(partition_key))
                inputs: object = fingerprint
            else:
                inputs = [
                    versions[parent, parent_key][0]
                    for parent in sorted(node.parent_keys, key=lambda k: k.to_user_string())
                    for parent_key in (
                        [partition_key]
                        if graph.get(parent).partitions_def == node.partitions_def
                        else _keys_of(graph, parent, models)
                    )
                ]
            text = json.dumps([key.to_user_string(), str(partition_key), inputs], default=str)
            versions[key, partition_key] = (hashlib.sha256(text.encode()).hexdigest(), fingerprint)
    return versions


def _fields(graph, key: dg.AssetKey, partition_key: str | None) -> dict[str, str]:
    partitions_def = graph.get(key).partitions_def
    return _partition_fields(partitions_def, partition_key) if partitions_def else {}


def _stale_reason(warehouse: Warehouse, graph, key, partition_key, versions) -> str | None:
    """Why a partition is not a valid input now, or None when it is."""
    fields = _fields(graph, key, partition_key)
    if not warehouse.has(key.to_user_string(), **fields):
        return NOT_MATERIALIZED
    path = warehouse.partition_dir(key.to_user_string(), **fields) / RECORD_FILE
    if not path.exists():
        return None  # written before run records existed
    record = json.loads(path.read_text())
    if record.get("failed_checks"):
        return (
            f"it failed blocking checks {', '.join(record['failed_checks'])} in run "
            f"{record.get('run_id', '?')}"
        )
    version, fingerprint = versions[key, partition_key]
    if record.get("version") == version:
        return None
    if fingerprint is not None:
        was = (record.get("fingerprint") or {}).get("source", "?")
        if was != fingerprint["source"]:
            return f"its source changed from {was} to {fingerprint['source']}"
        return f"its source {fingerprint['source']} (file or checksum list) changed"
    return "an input it was built from changed"


def _record(warehouse, graph, result, keys, partition_key, versions) -> None:
    """Note, for each asset the run materialized, its version and its failed blocking checks."""
    materialized = {event.asset_key for event in result.get_asset_materialization_events()}
    for key in keys:
        if key not in materialized:
            continue
        failed = sorted(
            e.check_name
            for e in result.get_asset_check_evaluations()
            if e.asset_key == key and not e.passed and e.blocking
        )
        version, fingerprint = versions[key, partition_key]
        record = {"run_id": result.run_id, "version": version, "failed_checks": failed}
        if fingerprint is not None:
            record["fingerprint"] = fingerprint
        fields = _fields(graph, key, partition_key)
        with warehouse.writing(key.to_user_string(), RECORD_FILE, **fields) as temporary:
            temporary.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")


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
