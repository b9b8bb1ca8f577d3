"""Chains: one asset per family and snapshot year (each shard step builds the
families from one index of what its chains reach), then the merged benchmark."""

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from decimal import Decimal
from functools import partial

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.chains.benchmark import REFUSAL_REASONS
from chronoscope_dagster.chains.facts import Shard as SubjectShard
from chronoscope_dagster.chains.families import FAMILIES, family_module
from chronoscope_dagster.chains.jsonl import export_chains, write_jsonl
from chronoscope_dagster.chains.reach import (
    DEFAULT_ROOT_ROWS_PER_SHARD,
    ROOT_ROWS_PER_WORKER,
    shard_count,
    worker_count,
)
from chronoscope_dagster.chains.stats import (
    VALIDITY_COLUMNS,
    benchmark_stats_sql,
    eval_sample_sql,
    scope_dependent_target,
    table2_markdown,
    validity_markdown,
)
from chronoscope_dagster.llm.blind import (
    BLIND_COLUMNS,
    SHAPE_COLUMNS,
    bound_misses,
    validity_figures,
)
from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.partitions import snapshot_year_partitions
from chronoscope_dagster.processes import (
    cores_for_a_step,
    in_own_process,
    measured,
    step_workers,
)
from chronoscope_dagster.release import CARD_FILE, CODE_LINEAGE
from chronoscope_dagster.resources import BenchmarkSettings
from chronoscope_dagster.resources.warehouse import refresh_views
from chronoscope_dagster.sharding import Part, Shard, sharded_asset
from chronoscope_dagster.storage.chains import (
    ShardFamily,
    drop_chain_index,
    refusals_by_family,
    root_row_count,
    write_chain_index,
    write_merged_families,
    write_shard_families,
    write_turns_and_chains,
)
from chronoscope_dagster.storage.release import write_release
from chronoscope_dagster.warehouse import Warehouse, parquet_source, write_query


class ChainConfig(dg.Config):
    seed: int = Field(default=42, description="Global seed of chain generation.")
    language: str = Field(default="en", description="Question template language.")
    shards: int = Field(
        default=1,
        ge=1,
        description="Steps a snapshot's families are split into, by the subject each chain "
        "starts from (runs of about equal truth rows in an order that keeps subjects of the "
        "same employer, team or party together): each step (which an executor may place on "
        "another process or machine) indexes the subjects its shard's chains reach and "
        "generates them, and the shards are merged in order; the output is the same for any "
        "number. Memory follows a shard's reach: raise it (or lower root_rows_per_shard) until "
        "a step fits.",
    )
    root_rows_per_shard: int = Field(
        default=DEFAULT_ROOT_ROWS_PER_SHARD,
        ge=0,
        description="At most about this many truth rows of chain properties (the facts of the "
        "root subjects, which a step indexes) per shard: the shard count is the larger of "
        "`shards` and the snapshot's rows divided by this, rounded up, so a step's memory "
        "follows this number rather than the snapshot's size, and an item whose only chain "
        "property is `instance of` weighs one row. 0: `shards` alone.",
    )
    workers: int = Field(
        default=0,
        ge=0,
        description="Processes within each step, each from one part of its shard with its own "
        "index of what that part reaches; the output is the same for any number. 0: one per "
        f"core, as long as each gets {ROOT_ROWS_PER_WORKER:,} truth rows of roots (1 on the "
        "sample), where steps run one at a time (the in-process executor of the command line "
        "and of `CHRONOSCOPE_EXECUTOR`'s default); 1 under an executor that runs steps side "
        "by side, whose concurrent steps use the cores.",
    )


def plan_chain_shards(
    context: dg.OpExecutionContext, config: ChainConfig, warehouse: Warehouse
) -> list[tuple[str, ...]]:
    """One step per shard, each generating the selected families; first, what every shard
    reads of the whole snapshot and each one's scope, computed once (``write_chain_index``)."""
    families = tuple(
        family
        for family in FAMILIES
        if dg.AssetKey(f"family_{family}") in context.selected_asset_keys
    )
    count = config.shards
    if config.root_rows_per_shard:
        rows = root_row_count(warehouse, context.partition_key)
        count = shard_count(rows, config.root_rows_per_shard, config.shards)
        context.log.info(
            f"{rows:,} truth rows of roots, at most {config.root_rows_per_shard:,} per shard: "
            f"{count} shard{'s' if count > 1 else ''}"
        )
    started = time.perf_counter()
    passes, peak_mb = in_own_process(
        partial(measured, partial(write_chain_index, warehouse, context.partition_key, count))
    )
    scopes = (
        f" (the shards' scopes in {len(passes)} pass{'es' if len(passes) > 1 else ''} of up "
        f"to {max(map(len, passes))} shards, as DuckDB's memory limit allows)"
        if passes
        else ""
    )
    context.log.info(
        f"snapshot index for the shards in {time.perf_counter() - started:.1f} s, "
        f"peak RSS {peak_mb:,} MB{scopes}"
    )
    return [families] * count


def generate_chain_shard(
    context: dg.OpExecutionContext, shard: Shard[tuple[str, ...]], warehouse: Warehouse
) -> dict[str, ShardFamily]:
    """The chains of the families rooted in one shard of the snapshot's subjects."""
    started = time.perf_counter()
    year = context.partition_key
    config = shard.config
    families = shard.value
    if not (workers := config.workers):
        cores = cores_for_a_step()
        rows = root_row_count(warehouse, year) // shard.count if cores > 1 else 0
        workers = worker_count(rows, cores)
    workers, reduced = step_workers(workers, "chain generation")
    if reduced:
        context.log.warning(reduced)
    context.log.info(f"shard {shard.index} of {shard.count}: {workers} process(es)")
    left, peak_mb = in_own_process(
        partial(
            measured,
            partial(
                write_shard_families, warehouse, year, families, config.language, config.seed,
                workers, SubjectShard(shard.index, shard.count), shard.key,
            ),
        )
    )  # fmt: skip
    for family, written in left.items():
        context.log.info(f"shard {shard.index}: {family}: {written.chains:,} chains")
    context.log.info(
        f"shard {shard.index} of {shard.count}: {len(families)} families in "
        f"{time.perf_counter() - started:.1f} s, peak RSS {peak_mb:,} MB"
    )
    return left


def merge_chain_shards(
    context: dg.OpExecutionContext,
    shards: list[Part[tuple[str, ...], dict[str, ShardFamily]]],
    warehouse: Warehouse,
) -> Iterator[dg.Output]:
    """Each family's shards as one table, in the order of unsharded generation."""
    started = time.perf_counter()
    year = context.partition_key
    config = shards[0].shard.config
    families = [f for f in FAMILIES if f"family_{f}" in context.selected_output_names]
    keys = [generated.shard.key for generated in shards]
    all_merged, peak_mb = in_own_process(
        partial(measured, partial(write_merged_families, warehouse, families, year, keys))
    )
    for family, (merged, scopes_refused) in all_merged.items():
        asset = f"family_{family}"
        no_explicit = sum(
            (generated.result[family].no_explicit_question for generated in shards), Counter()
        )
        warehouse.drop_shards(asset, snapshot_year=year)
        warehouse.write_report(
            asset,
            {
                "seed": config.seed,
                "language": config.language,
                "scopes_refused": dict(sorted(scopes_refused.items())),
                "no_explicit_question": dict(sorted(no_explicit.items())),
            },
            snapshot_year=year,
        )
        yield dg.Output(
            None,
            output_name=asset,
            data_version=dg.DataVersion(warehouse.data_version(asset, snapshot_year=year)),
            metadata={
                "dagster/row_count": merged.turns,
                "chains": merged.chains,
                "max_length": merged.max_length,
                "unnameable_subjects": shards[0].result[family].unnameable_subjects,
                "scopes_refused": dg.MetadataValue.json(
                    {reason: scopes_refused[reason] for reason in REFUSAL_REASONS}
                ),
                "no_explicit_question": dg.MetadataValue.json(dict(sorted(no_explicit.items()))),
                "seed": config.seed,
                "shards": len(shards),
                "workers": config.workers or "one per core (0)",
                "preview": dg.MetadataValue.md(
                    markdown_table(["chain", "turn", "question", "answer"], merged.preview)
                ),
            },
        )
    drop_chain_index(warehouse, year)
    context.log.info(
        f"merged {len(shards)} shard{'s' if len(shards) > 1 else ''} in "
        f"{time.perf_counter() - started:.1f} s, peak RSS {peak_mb:,} MB"
    )


chain_families = sharded_asset(
    "chain_families",
    plan=plan_chain_shards,
    step=generate_chain_shard,
    merge=merge_chain_shards,
    config=ChainConfig,
    deps=["truth", "fact_intervals", "labels", "lifespans", "present_day"],
    graph_description="The selected families of one snapshot: one step per shard of subjects, "
    "then a merge.",
    outs={
        f"family_{family}": dg.AssetOut(
            dagster_type=dg.Nothing,
            kinds={"python", "parquet"},
            description=" ".join((family_module(family).__doc__ or "").split()),
        )
        for family in FAMILIES
    },
    group_name="chains",
    partitions_def=snapshot_year_partitions,
    can_subset=True,
)


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "turns",
            deps=[*(f"family_{family}" for family in FAMILIES), "chain_import"],
            group_name="chains",
            kinds={"duckdb", "parquet"},
            description="Every turn of every chain, all families and snapshot years merged; "
            "one chain per item (family, turn 1's subject and property), from the latest "
            "snapshot that generated one.",
        ),
        dg.AssetSpec(
            "chains",
            deps=["turns"],
            group_name="chains",
            kinds={"duckdb", "parquet"},
            description="One row per chain: content-hash id, family, snapshot year, anchor, "
            "length, scope shifts, share of implicit turns, span in years.",
        ),
    ],
    pool="duckdb_writer",
)
def chains_and_turns(
    context: dg.AssetExecutionContext,
    benchmark_settings: BenchmarkSettings,
    warehouse: dg.ResourceParam[Warehouse],
    duckdb: DuckDBResource,
):
    import_file = benchmark_settings.import_chains
    started = time.perf_counter()
    written, peak_mb = in_own_process(
        partial(measured, partial(write_turns_and_chains, warehouse, import_file))
    )
    if import_file:
        context.log.info(f"imported {written.imported['chains']:,} chains from {import_file}")
    context.log.info(
        f"{written.turns:,} turns, {written.chains:,} chains in "
        f"{time.perf_counter() - started:.1f} s, peak RSS {peak_mb:,} MB"
    )
    refresh_views(warehouse, duckdb)
    refused = refusals_by_family(warehouse) if not import_file else []
    source = import_file or "generated families"
    yield dg.MaterializeResult(
        asset_key="turns",
        data_version=dg.DataVersion(warehouse.data_version("turns")),
        metadata={
            "dagster/row_count": written.turns,
            "source": source,
            "import_counts": dg.MetadataValue.json(dict(written.imported)),
        },
    )
    yield dg.MaterializeResult(
        asset_key="chains",
        data_version=dg.DataVersion(warehouse.data_version("chains")),
        metadata={
            "dagster/row_count": written.chains,
            "by_family": dg.MetadataValue.md(
                markdown_table(["family", "chains"], written.by_family)
            ),
            "scopes_refused": dg.MetadataValue.md(
                markdown_table(["family", *REFUSAL_REASONS], refused)
            ),
        },
    )


class BlindConfig(dg.Config):
    seed: int = Field(
        default=0,
        description="Seed of the blind reference system's split of the subjects in two halves "
        "and of its classifiers.",
    )
    threads: int = Field(
        default=1,
        ge=1,
        description="Threads of the blind system's classifiers (on a shared 2-core machine, "
        "more threads than free cores run several times slower).",
    )


@dg.asset(
    deps=["chains", "turns"],
    group_name="chains",
    kinds={"duckdb", "parquet"},
    pool="duckdb_writer",
    description="Per family and overall: the paper's Table 2 recomputed (chains, median and max "
    "length, mean scope shifts, % implicit turns, median span in years), beside the paper's "
    "values, and validity figures: scored turns by answer kind, % of scored implicit turns "
    "drift-eligible, the copy-previous ceiling (% of scored turns whose gold holds the previous "
    "turn's answer), % yes of yes/no turns, % modal count of count turns, repeated questions; "
    "and the blind reference system's accuracy per answer kind (it reads only the chains' "
    "structure and earlier answers, trained on the chains of half the subjects and answering "
    "the other half's): what the benchmark gives away without knowledge of the facts.",
)
def benchmark_stats(
    config: BlindConfig, warehouse: dg.ResourceParam[Warehouse], duckdb: DuckDBResource
) -> dg.MaterializeResult:
    turns_path = warehouse.data_path("turns")
    with warehouse.connect() as connection:
        sql = benchmark_stats_sql(
            parquet_source(warehouse.data_path("chains")), parquet_source(turns_path)
        )
        table = connection.sql(sql).to_arrow_table()
    blind = validity_figures(
        pq.read_table(turns_path, columns=list(SHAPE_COLUMNS)), config.seed, config.threads
    )
    for column in BLIND_COLUMNS:
        values = [blind.get(family, {}).get(column) for family in table["family"].to_pylist()]
        table = table.append_column(column, pa.array(values, pa.float64()))
    warehouse.write_table("benchmark_stats", table)
    warehouse.write_report("benchmark_stats", {"seed": config.seed})
    rows = table.to_pylist()
    refresh_views(warehouse, duckdb)
    columns = (*VALIDITY_COLUMNS, *BLIND_COLUMNS)
    overall = {column: rows[-1][column] for column in columns} if rows else {}
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("benchmark_stats")),
        metadata={
            "dagster/row_count": len(rows),
            "table2": dg.MetadataValue.md(table2_markdown(rows)),
            "validity": dg.MetadataValue.md(validity_markdown(rows, columns)),
            "blind_over_bounds": dg.MetadataValue.json(bound_misses(blind)),
            **{
                f"overall_{name}": float(value) if isinstance(value, Decimal) else value
                for name, value in overall.items()
                if value is not None
            },
        },
    )


class SampleConfig(dg.Config):
    seed: int = Field(default=42, description="Seed of the order of chains within a stratum.")


@dg.asset(
    deps=["chains", "turns", "sample_settings"],
    group_name="chains",
    kinds={"duckdb", "parquet"},
    pool="duckdb_writer",
    description="The evaluation sample: up to N chains per family, lengths taking turns within "
    "the family, chains with more scope-dependent scored turns first, then by a seeded hash of "
    "the chain id; then chains drawn for their scope-dependent scored turns (fewest scored "
    "turns per such turn first, families taking turns) until the sample holds 150 of them at "
    "the default size (the n of the headline scope_acc_at1); no family supplies more than 20% "
    "of the scored turns (where five or more families have any); the self-conditioned subset "
    "is each family's first chains, chosen the same way.",
)
def eval_sample(
    config: SampleConfig,
    benchmark_settings: BenchmarkSettings,
    warehouse: dg.ResourceParam[Warehouse],
    duckdb: DuckDBResource,
) -> dg.MaterializeResult:
    per_stratum = benchmark_settings.per_stratum
    sql = eval_sample_sql(
        parquet_source(warehouse.data_path("chains")),
        parquet_source(warehouse.data_path("turns")),
        per_stratum,
        benchmark_settings.self_per_stratum,
        config.seed,
    )
    with warehouse.connect() as connection:
        with warehouse.writing("eval_sample") as path:
            rows = write_query(connection, sql, path)
        sample = parquet_source(warehouse.data_path("eval_sample"))
        families = connection.execute(
            f"""SELECT family, count(*), sum(scored_turns),
                       round(100.0 * sum(scored_turns) / sum(sum(scored_turns)) OVER (), 1),
                       count_if(in_self_conditioned),
                       coalesce(sum(scored_turns) FILTER (WHERE in_self_conditioned), 0),
                       round(100.0 * coalesce(sum(scored_turns) FILTER (WHERE in_self_conditioned), 0)
                             / sum(sum(scored_turns) FILTER (WHERE in_self_conditioned)) OVER (), 1),
                       sum(scope_dependent_turns), count_if(for_scope),
                       coalesce(sum(scope_dependent_turns) FILTER (WHERE in_self_conditioned), 0)
                FROM {sample} GROUP BY family ORDER BY family"""
        ).fetchall()
        strata = connection.execute(
            f"""SELECT family, length, count(*), count_if(in_self_conditioned)
                FROM {sample} GROUP BY ALL ORDER BY ALL"""
        ).fetchall()
    scope_target = scope_dependent_target(per_stratum)
    scope_turns = sum(int(f[7] or 0) for f in families)
    warehouse.write_report(
        "eval_sample",
        {
            "per_stratum": per_stratum,
            "self_conditioned_per_stratum": benchmark_settings.self_per_stratum,
            **config.model_dump(),
            "scope_target": scope_target,
            "scope_dependent_turns": scope_turns,
        },
    )
    refresh_views(warehouse, duckdb)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("eval_sample")),
        metadata={
            "dagster/row_count": rows,
            "self_conditioned": sum(s[3] for s in strata),
            "scored_turns": sum(int(f[2] or 0) for f in families),
            "scope_dependent_turns": scope_turns,
            "scope_target": scope_target,
            "chains_for_scope": sum(int(f[8] or 0) for f in families),
            "self_conditioned_scored_turns": sum(int(f[5] or 0) for f in families),
            "self_conditioned_scope_dependent_turns": sum(int(f[9] or 0) for f in families),
            "by_family": dg.MetadataValue.md(
                markdown_table(
                    [
                        "family",
                        "chains",
                        "scored turns",
                        "%",
                        "self-conditioned chains",
                        "their scored turns",
                        "%",
                        "scope-dependent scored turns",
                        "chains drawn for them",
                        "self-conditioned scope-dependent",
                    ],
                    families,
                )
            ),
            "strata": dg.MetadataValue.md(
                markdown_table(["family", "length", "chains", "self-conditioned"], strata)
            ),
        },
    )


@dg.asset(
    deps=["turns"],
    group_name="chains",
    kinds={"json"},
    description="The benchmark as JSON lines with the fields of the authors' released "
    "merged_scope_benchmark.jsonl (present-day values kept per turn), plus this project's "
    "gold sets and scopes; importable back with `chronoscope run --import-chains`.",
)
def benchmark_jsonl(warehouse: dg.ResourceParam[Warehouse]) -> dg.MaterializeResult:
    turns = pq.read_table(warehouse.data_path("turns"))
    with warehouse.writing("benchmark_jsonl", "merged_scope_benchmark.jsonl") as path:
        chains = write_jsonl(export_chains(turns), path)
    final = warehouse.partition_dir("benchmark_jsonl") / "merged_scope_benchmark.jsonl"
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("benchmark_jsonl")),
        metadata={"chains": chains, "path": dg.MetadataValue.path(str(final))},
    )


@dg.asset(
    deps=["turns", "chains", "benchmark_stats", "eval_sample", "paraphrased_subset", "metrics"],
    group_name="chains",
    kinds={"parquet", "huggingface"},
    description="The benchmark as a dataset the Hugging Face `datasets` library loads as it is "
    "(`load_dataset('parquet', data_dir=...)`, or the folder itself by its card's configs): "
    "one Parquet file per split under data/ (full, eval_sample, self_conditioned, and "
    "paraphrased where chains were kept), one row per turn with the columns of turns, and a "
    "dataset card (README.md) stating the source dumps and their dates, the seeds, the code "
    "versions the inputs were built with, the CC0 license of the Wikidata-derived content, "
    "Table 2 recomputed beside the paper's and the validity figures (drift-eligible share, "
    "copy and blind ceilings, the scope-blind score of the evaluated reference systems, "
    "refusals by reason), each stated as not available where the home lacks it. "
    "`chronoscope export --format hf DIR` copies it.",
)
def benchmark_release(
    context: dg.AssetExecutionContext, warehouse: dg.ResourceParam[Warehouse]
) -> dg.MaterializeResult:
    inputs = [
        dg.AssetKey(key)
        for keys in CODE_LINEAGE.values()
        for key in keys
        if key != context.asset_key.to_user_string()
    ]
    versions = {
        key.to_user_string(): version
        for key, version in context.instance.get_latest_materialization_code_versions(
            inputs
        ).items()
    }
    versions[context.asset_key.to_user_string()] = context.assets_def.code_versions_by_key.get(
        context.asset_key
    )
    folder = warehouse.partition_dir("benchmark_release")
    splits = write_release(warehouse, folder, versions)
    warehouse.write_report("benchmark_release", {"splits": [asdict(s) for s in splits]})
    return dg.MaterializeResult(
        data_version=dg.DataVersion(warehouse.data_version("benchmark_release")),
        metadata={
            "dagster/row_count": next(s.turns for s in splits if s.name == "full"),
            "splits": dg.MetadataValue.md(
                markdown_table(
                    ["split", "chains", "turns", "scored turns", "scope-dependent scored turns"],
                    [
                        (s.name, s.chains, s.turns, s.scored_turns, s.scope_dependent_turns)
                        for s in splits
                    ],
                )
            ),
            "card": dg.MetadataValue.md((folder / CARD_FILE).read_text(encoding="utf-8")),
            "path": dg.MetadataValue.path(str(folder)),
        },
    )
