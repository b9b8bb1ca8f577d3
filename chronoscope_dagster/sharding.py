"""Sharded stages as graph-backed assets: a plan cuts a partition's work into shards, one step
per shard does its part (an executor may place each step on another process or machine), and a
merge joins the parts in shard order.

A stage is three plain functions; this module makes them Dagster ops and wires the fan-out:

- ``plan(context, config, **resources) -> Sequence[T]``: one value per shard (a file, the
  families to generate, or ``None`` where the index is all a step needs);
- ``step(context, shard: Shard[T], **resources) -> R``: one shard's work;
- ``merge(context, parts: list[Part[T, R]], **resources) -> Iterator[dg.Output]``: the parts,
  in shard order, as the asset(s).

Parameters after the fixed ones are resources, by name. The stage's config (a ``dg.Config``)
is the asset's run config (``ops: {<asset or multi-asset name>: {config: ...}}``), reaches the
plan, and rides on every shard. Op names are the functions' names.
"""

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import dagster as dg

from chronoscope_dagster.warehouse import shard_key

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Shard(Generic[T]):
    """Shard ``index`` of ``count``: the value the plan gave it and the stage's config."""

    index: int
    count: int
    value: T
    config: dg.Config

    @property
    def key(self) -> str:
        """The shard's ``shard`` partition key in the warehouse."""
        return shard_key(self.index, self.count)


@dataclass(frozen=True)
class Part(Generic[T, R]):
    """A shard and what its step returned."""

    shard: Shard[T]
    result: R


def sharded_asset(
    name: str,
    *,
    plan: Callable[..., Sequence[Any]],
    step: Callable[..., Any],
    merge: Callable[..., Iterator[dg.Output]],
    config: type[dg.Config],
    deps: Sequence[str],
    outs: Mapping[str, dg.AssetOut] | None = None,
    merge_pool: str | None = None,
    graph_description: str | None = None,
    **asset_args: Any,
) -> dg.AssetsDefinition:
    """The asset ``name`` (or, given ``outs``, the multi-asset of those outputs) computed by the
    graph ``plan -> step per shard -> merge``, after the assets ``deps``. ``asset_args`` go to
    ``dg.graph_asset`` or ``dg.graph_multi_asset`` (partitions, group, kinds, can_subset...)."""
    if outs is None:
        merge_outs: dg.Out | dict[str, dg.Out] = dg.Out(dg.Nothing)
    else:
        required = not asset_args.get("can_subset", False)
        merge_outs = {output: dg.Out(dg.Nothing, is_required=required) for output in outs}
    plan_op = _plan_op(plan, config, deps)
    step_op = _step_op(step)
    merge_op = _merge_op(merge, merge_outs, merge_pool)

    def compose(**inputs):
        return merge_op(plan_op(**inputs).map(step_op).collect())

    compose.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(dep, inspect.Parameter.POSITIONAL_OR_KEYWORD) for dep in deps]
    )
    compose.__doc__ = graph_description
    ins = {dep: dg.AssetIn(dagster_type=dg.Nothing) for dep in deps}
    mapping = dg.ConfigMapping(
        config_fn=lambda values: {plan.__name__: {"config": values}},
        config_schema=config.to_config_schema(),
    )
    if outs is None:
        return dg.graph_asset(name=name, ins=ins, config=mapping, **asset_args)(compose)
    return dg.graph_multi_asset(name=name, outs=outs, ins=ins, config=mapping, **asset_args)(
        compose
    )


def _plan_op(
    plan: Callable[..., Sequence[Any]], config: type[dg.Config], deps: Sequence[str]
) -> dg.OpDefinition:
    """The plan waits on one input per upstream asset (a fan-in of them would fail to plan
    when an upstream has blocking checks: Dagster takes no fan-in of fan-ins)."""
    resources = _resource_keys(plan, 2)

    def run(context: dg.OpExecutionContext) -> Iterator[dg.DynamicOutput[Shard]]:
        stage_config = config(**context.op_config)
        planned = list(plan(context, stage_config, **_resources(context, resources)))
        if not planned:
            raise ValueError(f"{plan.__name__} planned no shards")
        for index, value in enumerate(planned):
            yield dg.DynamicOutput(
                Shard(index, len(planned), value, stage_config), mapping_key=f"shard_{index}"
            )

    return dg.op(
        name=plan.__name__,
        description=plan.__doc__,
        ins={dep: dg.In(dg.Nothing) for dep in deps},
        out=dg.DynamicOut(Shard),
        config_schema=config.to_config_schema(),
        required_resource_keys=set(resources),
    )(run)


def _step_op(step: Callable[..., Any]) -> dg.OpDefinition:
    resources = _resource_keys(step, 2)

    def run(context: dg.OpExecutionContext, shard: Shard) -> Part:
        return Part(shard, step(context, shard, **_resources(context, resources)))

    return dg.op(
        name=step.__name__, description=step.__doc__, required_resource_keys=set(resources)
    )(run)


def _merge_op(
    merge: Callable[..., Iterator[dg.Output]],
    outs: dg.Out | dict[str, dg.Out],
    pool: str | None,
) -> dg.OpDefinition:
    resources = _resource_keys(merge, 2)

    def run(context: dg.OpExecutionContext, parts: list[Part]) -> Iterator[dg.Output]:
        in_order = sorted(parts, key=lambda part: part.shard.index)
        yield from merge(context, in_order, **_resources(context, resources))

    return dg.op(
        name=merge.__name__,
        description=merge.__doc__,
        required_resource_keys=set(resources),
        out=outs,
        pool=pool,
    )(run)


def _resource_keys(function: Callable[..., Any], fixed: int) -> tuple[str, ...]:
    """The resources ``function`` takes: its parameters after the first ``fixed``."""
    return tuple(inspect.signature(function).parameters)[fixed:]


def _resources(context: dg.OpExecutionContext, keys: Sequence[str]) -> dict[str, Any]:
    return {key: getattr(context.resources, key) for key in keys}
