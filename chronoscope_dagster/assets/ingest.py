"""Ingest: a snapshot's dump, and the claims and labels extracted from it."""

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource
from pydantic import Field

from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.partitions import snapshot_year_partitions
from chronoscope_dagster.processes import step_workers
from chronoscope_dagster.resources import DumpSources
from chronoscope_dagster.resources.warehouse import refresh_views
from chronoscope_dagster.sharding import Part, Shard, sharded_asset
from chronoscope_dagster.warehouse import Warehouse
from chronoscope_dagster.wikidata.download import fetch_dump
from chronoscope_dagster.wikidata.extract import (
    LABELS_SCHEMA,
    LIFESPANS_SCHEMA,
    LINE_REJECTS,
    STATEMENT_DROPS,
    Extractor,
)
from chronoscope_dagster.wikidata.reader import ExtractionReport, extract_dump
from chronoscope_dagster.wikidata.shards import concatenate_parquet, split_dump

PROGRESS_SECONDS = 10.0


class DumpShardConfig(dg.Config):
    shards: int = Field(
        default=1,
        ge=1,
        description="Steps the extraction is split into: the dump is cut once into this many "
        "runs of whole lines, each extracted by its own step (which an executor may place on "
        "another process or machine), and the parts are concatenated in order; the output is "
        "the same for any number. 1 extracts the dump as it is.",
    )


def split_wikidata_dump(
    context: dg.OpExecutionContext,
    config: DumpShardConfig,
    warehouse: Warehouse,
    dump_sources: DumpSources,
) -> list[str]:
    """The snapshot's dump as a local file (a download resumed with Range requests and verified
    against the checksum list when one is configured), as it is (one shard) or cut into
    ``shards`` files of whole lines."""
    year = context.partition_key
    dump = _fetch(context, warehouse, dump_sources, year)
    if config.shards == 1:
        return [str(dump)]
    log = _throttled_log(context)
    split = split_dump(
        dump,
        warehouse.partition_dir(warehouse.shard_asset("wikidata_dump"), snapshot_year=year),
        config.shards,
        progress=lambda done, total: log(
            lambda: f"snapshot {year}: split: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB read"
        ),
    )
    context.log.info(
        f"snapshot {year}: cut into {config.shards} shards in {split.seconds:.1f} s "
        f"(decompressed MB per shard: {', '.join(f'{b / 1e6:.1f}' for b in split.shard_bytes)})"
    )
    return [str(path) for path in split.shards]


def extract_wikidata_shard(
    context: dg.OpExecutionContext,
    shard: Shard[str],
    warehouse: Warehouse,
    dump_sources: DumpSources,
) -> ExtractionReport:
    """Claims, labels and lifespans of one shard of the dump, as parts to be concatenated."""
    year = context.partition_key
    keys = {"snapshot_year": year, "shard": shard.key}
    log = _throttled_log(context)

    def progress(report: ExtractionReport) -> None:
        log(lambda: f"snapshot {year}, shard {shard.index}: {report.progress_text()}")

    workers, reduced = step_workers(dump_sources.workers or None, "extraction")
    if reduced:
        context.log.warning(reduced)
    parts = warehouse.shard_asset("extraction")
    with (
        warehouse.writing(parts, "claims.parquet", **keys) as claims_path,
        warehouse.writing(parts, "labels.parquet", **keys) as labels_path,
        warehouse.writing(parts, "lifespans.parquet", **keys) as lifespans_path,
    ):
        report = extract_dump(
            Path(shard.value),
            claims_path,
            labels_path,
            lifespans_out=lifespans_path,
            workers=workers,
            progress=progress,
        )
    if not report.reconciles:
        context.log.warning(f"shard {shard.index}: {'; '.join(report.reconciliation_errors)}")
    return report


def merge_wikidata_shards(
    context: dg.OpExecutionContext,
    shards: list[Part[str, ExtractionReport]],
    warehouse: Warehouse,
    duckdb: DuckDBResource,
) -> Iterator[dg.Output]:
    """The shards' parts concatenated in dump order into the snapshot's claims, labels and
    lifespans (a single shard's parts are renamed into place: the same bytes)."""
    year = context.partition_key
    dump = warehouse.read_report("wikidata_dump", snapshot_year=year)
    parts = warehouse.shard_asset("extraction")
    part_dirs = [
        warehouse.partition_dir(parts, snapshot_year=year, shard=extracted.shard.key)
        for extracted in shards
    ]
    schemas = {"claims": Extractor().schema, "labels": LABELS_SCHEMA, "lifespans": LIFESPANS_SCHEMA}
    for asset, schema in schemas.items():
        with warehouse.writing(asset, snapshot_year=year) as path:
            if len(part_dirs) == 1:
                os.replace(part_dirs[0] / f"{asset}.parquet", path)
            else:
                concatenate_parquet([d / f"{asset}.parquet" for d in part_dirs], path, schema)
    warehouse.drop_shards("extraction", snapshot_year=year)
    warehouse.drop_shards("wikidata_dump", snapshot_year=year)
    report = ExtractionReport.combined([extracted.result for extracted in shards], dump["bytes"])
    counts = dict(sorted(report.counts.items()))
    warehouse.write_report(
        "claims",
        {"counts": counts, "seconds": report.seconds, "workers": report.workers,
         "shards": len(shards), "input_bytes": report.input_bytes, "dump": dump},
        snapshot_year=year,
    )  # fmt: skip
    refresh_views(warehouse, duckdb)
    claims_table = pq.read_table(warehouse.data_path("claims", snapshot_year=year), columns=["pid"])
    by_pid = {
        row["values"]: row["counts"] for row in pc.value_counts(claims_table["pid"]).to_pylist()
    }
    context.log.info(
        f"snapshot {year}: {report.get('statements_kept'):,} statements kept from "
        f"{report.get('items'):,} items in {report.seconds:.1f} s"
        + (f" over {len(shards)} shards" if len(shards) > 1 else "")
    )
    yield dg.Output(
        None,
        output_name="claims",
        data_version=dg.DataVersion(warehouse.data_version("claims", snapshot_year=year)),
        metadata={
            "dagster/row_count": report.get("statements_kept"),
            "lines": report.get("lines"),
            "entities_seen": report.get("entities_seen"),
            "items": report.get("items"),
            "entities_skipped_non_item": report.get("entities_skipped_non_item"),
            "statements_seen": report.get("statements_seen"),
            "statements_kept": report.get("statements_kept"),
            "lines_rejected": dg.MetadataValue.json(report.line_rejects),
            "statements_dropped": dg.MetadataValue.json(report.statement_drops),
            "accounting": dg.MetadataValue.md(_accounting(report)),
            "statements_by_pid": dg.MetadataValue.md(
                markdown_table(["pid", "statements"], sorted(by_pid.items(), key=_pid_order))
            ),
            "reconciles": report.reconciles,
            "seconds": round(report.seconds, 3),
            "input_mb_per_second": round(report.input_bytes / 1e6 / max(report.seconds, 1e-9), 2),
            "workers": report.workers,
            "shards": len(shards),
            "path": dg.MetadataValue.path(str(warehouse.data_path("claims", snapshot_year=year))),
        },
    )
    yield dg.Output(
        None,
        output_name="labels",
        data_version=dg.DataVersion(warehouse.data_version("labels", snapshot_year=year)),
        metadata={
            "dagster/row_count": report.get("items") - report.get("items_without_english_label"),
            "items_without_english_label": report.get("items_without_english_label"),
            "path": dg.MetadataValue.path(str(warehouse.data_path("labels", snapshot_year=year))),
        },
    )
    yield dg.Output(
        None,
        output_name="lifespans",
        data_version=dg.DataVersion(warehouse.data_version("lifespans", snapshot_year=year)),
        metadata={
            "dagster/row_count": report.get("lifespan_kept"),
            "statements_seen": report.get("lifespan_seen"),
            "dropped": dg.MetadataValue.json(report.lifespan_drops),
            "path": dg.MetadataValue.path(
                str(warehouse.data_path("lifespans", snapshot_year=year))
            ),
        },
    )


def _fetch(
    context: dg.OpExecutionContext, warehouse: Warehouse, dump_sources: DumpSources, year: str
) -> Path:
    last_report = [0.0]

    def progress(done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - last_report[0] >= PROGRESS_SECONDS:
            last_report[0] = now
            share = f" ({done / total:.1%})" if total else ""
            context.log.info(f"downloaded {done:,} bytes{share}")

    fetched = fetch_dump(
        dump_sources.source(year),
        warehouse.home / "downloads" / f"snapshot_year={year}",
        checksums=dump_sources.checksums.get(year),
        progress=progress,
    )
    context.log.info(
        f"snapshot {year}: dump {fetched.source}: {fetched.bytes:,} bytes, "
        f"{fetched.checksum_algorithm} {fetched.checksum}"
        + (", checksum verified" if fetched.verified else "")
        + (f", downloaded in {fetched.seconds:.1f} s" if fetched.downloaded else "")
    )
    warehouse.write_report(
        "wikidata_dump",
        {
            "path": str(fetched.path),
            "source": fetched.source,
            "bytes": fetched.bytes,
            "checksum": fetched.checksum,
            "checksum_algorithm": fetched.checksum_algorithm,
            "checksum_verified": fetched.verified,
            "downloaded": fetched.downloaded,
            "resumed_requests": fetched.resumed_attempts,
            "embedded_sample": dump_sources.is_sample(year),
        },
        snapshot_year=year,
    )
    return fetched.path


claims_and_labels = sharded_asset(
    "claims_and_labels",
    plan=split_wikidata_dump,
    step=extract_wikidata_shard,
    merge=merge_wikidata_shards,
    config=DumpShardConfig,
    deps=["wikidata_dump"],
    merge_pool="duckdb_writer",
    graph_description="Split (or not), extract each shard in its own step, concatenate.",
    outs={
        "claims": dg.AssetOut(
            dagster_type=dg.Nothing,
            kinds={"parquet", "duckdb"},
            description=(
                "Item-valued statements of the extracted properties (data/properties.yaml), one "
                "row per statement: subject_qid, pid, value_qid, rank, statement id; start (P580, "
                "earliest), end (P582, latest) and point in time (P585, earliest) as typed dates "
                "with precision and calendar; end_unknown for an end given as 'unknown value'; "
                "entity and ordinal qualifiers as lists. Deprecated statements, somevalue/novalue "
                "and non-item values, and statements with an invalid date are dropped and counted "
                "by reason; every line of the dump is accounted for in the metadata."
            ),
        ),
        "labels": dg.AssetOut(
            dagster_type=dg.Nothing,
            kinds={"parquet", "duckdb"},
            description=(
                "English label, description and aliases of every item of the snapshot that has "
                "an English label or alias, from the item's own document."
            ),
        ),
        "lifespans": dg.AssetOut(
            dagster_type=dg.Nothing,
            kinds={"parquet", "duckdb"},
            description=(
                "The dates that bound each item's existence: birth (P569) and inception (P571) "
                "as starts, death (P570) and dissolution (P576) as ends, one row per statement "
                "of the best rank with its precision (deprecated excluded; the others counted). "
                "A timeless fact is asked only within its subject's lifespan."
            ),
        ),
    },
    group_name="ingest",
    partitions_def=snapshot_year_partitions,
)


def _throttled_log(context: dg.OpExecutionContext) -> Callable[[Callable[[], str]], None]:
    """Logs the message it is given at most every ``PROGRESS_SECONDS``, the first after that
    long (the message is built only when logged)."""
    last_report = [time.monotonic()]

    def log(message: Callable[[], str]) -> None:
        now = time.monotonic()
        if now - last_report[0] >= PROGRESS_SECONDS:
            last_report[0] = now
            context.log.info(message())

    return log


def _pid_order(item: tuple[str, int]) -> int:
    return int(item[0][1:])


def _accounting(report: ExtractionReport) -> str:
    rows = [
        ("lines", report.get("lines")),
        ("structural lines ([, ], blank)", report.get("lines_structural")),
        ("entities seen", report.get("entities_seen")),
        *(
            (f"line rejected: {reason}", report.get(f"rejected:{reason}"))
            for reason in LINE_REJECTS
        ),
        ("items", report.get("items")),
        (
            "items with malformed claims (not a JSON object)",
            report.get("items_with_malformed_claims"),
        ),
        ("non-items skipped (properties, lexemes)", report.get("entities_skipped_non_item")),
        ("statements seen", report.get("statements_seen")),
        ("statements kept", report.get("statements_kept")),
        *((f"statement dropped: {r}", report.get(f"dropped:{r}")) for r in STATEMENT_DROPS),
    ]
    return markdown_table(["count", "value"], rows)
