"""Running a selection of assets in process, as the CLI does, from Dagster's own staleness.

First the sources the selection is built from are observed (the dumps, the settings, the
model registry's entries): each observation records a data version. Then the selection, and
with ``upstream`` every asset upstream of it, is run in topological order, one run per group
of assets partitioned alike and partition key. A partition is run when Dagster calls it
missing or stale (a new code version, or an input with a new data version), when its data is
not in the home, or when the run that materialized it failed one of its blocking checks; and
so is every asset of the same run downstream of one that is run. With ``force``, the
selected assets run whatever their status. Staleness is read again before each group, so a
rebuilt input whose data version did not change leaves what depends on it alone. The whole
plan holds the home's write lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import dagster as dg
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import (
    CachingStaleStatusResolver,
    StaleCause,
    StaleStatus,
)
from dagster._time import get_current_datetime

from chronoscope_dagster.definitions import build_definitions
from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.home_lock import home_lock
from chronoscope_dagster.partitions import (
    model_partitions,
    model_setting_partitions,
    snapshot_year_partitions,
)
from chronoscope_dagster.resources import BenchmarkSettings, DumpSources, ModelRegistry
from chronoscope_dagster.warehouse import Warehouse

INFO_LOGGING = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


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
    settings: BenchmarkSettings | None = None,
    op_config: Mapping[str, Mapping[str, object]] | None = None,
    models: str | None = None,
    model_threads: int = 0,
    instance: dg.DagsterInstance | None = None,
    upstream: bool = True,
    force: bool = False,
    snapshot_years: Sequence[str] | None = None,
    echo: Callable[[str], None] = print,
    command: str | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run what is missing or stale in ``selection`` and, with ``upstream``, upstream of it;
    with ``force``, the whole selection; of the snapshot-year partitions, only
    ``snapshot_years`` when given. Returns the results of the runs, in order.
    ``model_threads`` (0: the registry's) is ``ModelRegistry.threads``. Raises ``HomeLocked``
    when another process is writing the home."""
    with home_lock(Warehouse(home).home, command, echo):
        return _run_selection(
            home=home, selection=selection, dumps=dumps, checksums=checksums, workers=workers,
            settings=settings, op_config=op_config, models=models, model_threads=model_threads,
            instance=instance, upstream=upstream, force=force, snapshot_years=snapshot_years,
            echo=echo,
        )  # fmt: skip


def _run_selection(
    *,
    home: str,
    selection: str,
    dumps: dict[str, str] | None,
    checksums: dict[str, str] | None,
    workers: int,
    settings: BenchmarkSettings | None,
    op_config: Mapping[str, Mapping[str, object]] | None,
    models: str | None,
    model_threads: int,
    instance: dg.DagsterInstance | None,
    upstream: bool,
    force: bool,
    snapshot_years: Sequence[str] | None,
    echo: Callable[[str], None],
) -> list[dg.ExecuteInProcessResult]:
    warehouse = Warehouse(home)
    registry = ModelRegistry(
        path=models or "", threads=model_threads, models_dir=str(warehouse.home / "models")
    )
    sources = DumpSources(dumps=dumps or {}, checksums=checksums or {}, workers=workers)
    defs = build_definitions(
        home, sources, models=registry, settings=settings or BenchmarkSettings()
    )
    instance = instance or dg.DagsterInstance.get()
    model_names = [spec.name for spec in registry.specs()]
    known = set(instance.get_dynamic_partitions(model_partitions.name))
    if new := [name for name in model_names if name not in known]:
        instance.add_dynamic_partitions(model_partitions.name, new)
        echo(f"added model partitions: {', '.join(new)}")
    graph = defs.resolve_asset_graph()
    selected = _selected(graph, selection)
    wanted = set(selected)
    if upstream:
        wanted |= {a for key in selected for a in graph.get_ancestor_asset_keys(key)}
    job = defs.resolve_implicit_global_asset_job_def()
    _observe(job, graph, wanted, instance, echo)
    materializable = [
        k for k in graph.toposorted_asset_keys if k in wanted and graph.get(k).is_materializable
    ]
    results: list[dg.ExecuteInProcessResult] = []
    for keys, partitions_def in _groups(graph, materializable):
        resolver = _stale_status(instance, graph)
        for partition_key in (
            _partition_keys(partitions_def, model_names, snapshot_years)
            if partitions_def
            else [None]
        ):
            due = _due(
                keys,
                partition_key,
                selected if force else set(),
                resolver,
                instance,
                graph,
                warehouse,
            )
            if not due:
                continue
            for key, reason in due.items():
                echo(f"due: {_label(key, partition_key)}: {reason}")
            results.append(
                _execute(
                    job, _with_siblings(graph, due), partition_key, instance, op_config, graph, echo
                )
            )
    if not results:
        echo("nothing to do: every asset of the selection is up to date")
    return results


def _selected(graph, selection: str) -> set[dg.AssetKey]:
    try:
        selected = dg.AssetSelection.from_string(selection).resolve(graph)
    except Exception as error:
        raise ValueError(f"invalid asset selection {selection!r}: {error}") from error
    selected = {key for key in selected if graph.get(key).is_materializable}
    if not selected:
        raise ValueError(f"asset selection {selection!r} matches no asset")
    return selected


def _observe(job, graph, wanted: set[dg.AssetKey], instance, echo: Callable[[str], None]) -> None:
    """Observe the sources among ``wanted``, so their data versions are today's."""
    observable = {key for key in wanted if graph.get(key).is_observable}
    if not observable:
        return
    keys = dg.AssetSelection.assets(*observable).required_multi_asset_neighbors().resolve(graph)
    names = ", ".join(sorted(key.to_user_string() for key in keys))
    started = time.perf_counter()
    result = job.execute_in_process(
        asset_selection=list(keys), instance=instance, run_config=INFO_LOGGING,
        raise_on_error=False,
    )  # fmt: skip
    if not result.success:
        raise RunFailed(f"observing {names} failed in run {result.run_id}: {_step_errors(result)}")
    echo(f"observed {names} in {time.perf_counter() - started:.1f} s")


def _stale_status(instance: dg.DagsterInstance, graph) -> CachingStaleStatusResolver:
    """Dagster's staleness of the instance's assets now (what the UI shows)."""
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    return CachingStaleStatusResolver(instance, graph, view)


def _due(
    keys: list[dg.AssetKey], partition_key: str | None, forced: set[dg.AssetKey],
    resolver: CachingStaleStatusResolver, instance: dg.DagsterInstance, graph,
    warehouse: Warehouse,
) -> dict[dg.AssetKey, str]:  # fmt: skip
    """The assets of one run's group that must run for ``partition_key``, with why."""
    due: dict[dg.AssetKey, str] = {}
    for key in keys:
        rebuilt_inputs = sorted(p.to_user_string() for p in graph.get(key).parent_keys if p in due)
        if key in forced:
            due[key] = "selected, and the run is forced"
        elif rebuilt_inputs:
            due[key] = f"its input {', '.join(rebuilt_inputs)} is rebuilt in this run"
        elif reason := _why_stale(key, partition_key, resolver, instance, graph, warehouse):
            due[key] = reason
    return due


def _why_stale(
    key: dg.AssetKey, partition_key: str | None, resolver: CachingStaleStatusResolver,
    instance: dg.DagsterInstance, graph, warehouse: Warehouse,
) -> str | None:  # fmt: skip
    """Why a partition is not a valid input now, or None when it is."""
    status = resolver.get_status(key, partition_key)
    if status == StaleStatus.MISSING:
        return "never materialized"
    fields = _fields(graph, key, partition_key)
    if not warehouse.has(key.to_user_string(), **fields):
        return "materialized, but its data is not in the home"
    if status == StaleStatus.STALE:
        return "; ".join(_cause(c) for c in resolver.get_stale_causes(key, partition_key))
    return _failed_blocking_checks(instance, key, partition_key)


def _cause(cause: StaleCause) -> str:
    dependency = cause.dependency
    if dependency is None:
        return cause.reason
    return f"{cause.reason} ({_label(dependency.asset_key, dependency.partition_key)})"


def _failed_blocking_checks(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition_key: str | None
) -> str | None:
    """The blocking checks the run that materialized the partition failed on it, as a reason."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=key, asset_partitions=[partition_key] if partition_key else None
        ),
        limit=1,
    ).records
    if not records:
        return None
    run_id = records[0].run_id
    failed = sorted(
        evaluation.check_name
        for record in instance.get_records_for_run(
            run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION
        ).records
        if (evaluation := record.event_log_entry.dagster_event.event_specific_data).asset_key == key
        and evaluation.blocking
        and not evaluation.passed
    )
    if not failed:
        return None
    return f"it failed blocking checks {', '.join(failed)} in run {run_id}"


def _with_siblings(graph, due: Mapping[dg.AssetKey, str]) -> list[dg.AssetKey]:
    """``due`` with the other assets of its multi-assets (they run whole), in topological
    order."""
    keys = set(due)
    for key in due:
        keys |= graph.get(key).execution_set_asset_keys
    return [key for key in graph.toposorted_asset_keys if key in keys]


def _execute(
    job, keys: list[dg.AssetKey], partition_key: str | None,
    instance: dg.DagsterInstance, op_config, graph, echo: Callable[[str], None],
) -> dg.ExecuteInProcessResult:  # fmt: skip
    """One run; ``RunFailed`` when a step or a blocking check fails."""
    names = ", ".join(key.to_user_string() for key in keys)
    label = f"{names} [{partition_key}]" if partition_key else names
    echo(f"==> {label}")
    started = time.perf_counter()
    result = job.execute_in_process(
        asset_selection=keys,
        partition_key=partition_key,
        instance=instance,
        run_config=run_config_of(keys, op_config, graph),
        raise_on_error=False,
    )
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
        raise RunFailed(
            f"run {result.run_id} failed on {label}: steps {_step_errors(result)}; "
            f"failed checks {', '.join(failed_checks) or '-'}"
        )
    return result


def _step_errors(result: dg.ExecuteInProcessResult) -> str:
    failed = [e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return ", ".join(failed) or "-"


def _label(key: dg.AssetKey, partition_key: str | None) -> str:
    return key.to_user_string() + (f" [{partition_key}]" if partition_key else "")


def _fields(graph, key: dg.AssetKey, partition_key: str | None) -> dict[str, str]:
    partitions_def = graph.get(key).partitions_def
    return _partition_fields(partitions_def, partition_key) if partitions_def else {}


def _partition_keys(
    partitions_def: dg.PartitionsDefinition,
    models: list[str],
    snapshot_years: Sequence[str] | None = None,
) -> list[str]:
    """Every key of a partitions definition; the model dimension takes the registry's models,
    in registry order, and the snapshot-year one ``snapshot_years`` when given."""
    if partitions_def == snapshot_year_partitions and snapshot_years is not None:
        return [year for year in partitions_def.get_partition_keys() if year in snapshot_years]
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
