"""Ingest: a snapshot's dump, and the claims and labels extracted from it."""

import time
from pathlib import Path

import dagster as dg
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource

from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.partitions import snapshot_year_partitions
from chronoscope_dagster.resources import DumpSources, WarehouseResource
from chronoscope_dagster.wikidata.download import fetch_dump
from chronoscope_dagster.wikidata.extract import LINE_REJECTS, STATEMENT_DROPS
from chronoscope_dagster.wikidata.reader import ExtractionReport, extract_dump

PROGRESS_SECONDS = 10.0


@dg.asset(
    partitions_def=snapshot_year_partitions,
    group_name="ingest",
    kinds={"wikidata", "json"},
    owners=["team:chronoscope"],
    description=(
        "The Wikidata JSON dump of one snapshot year as a local file: the embedded sample by "
        "default, or a configured path or HTTP(S) URL. Downloads stream to a temporary file, "
        "resume interrupted transfers with Range requests, are verified against a published "
        "md5/sha1 checksum list when one is configured, and are renamed into place atomically."
    ),
)
def wikidata_dump(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, dump_sources: DumpSources
) -> dg.MaterializeResult:
    year = context.partition_key
    store = warehouse.warehouse
    last_report = [0.0]

    def progress(done: int, total: int | None) -> None:
        now = time.monotonic()
        if now - last_report[0] >= PROGRESS_SECONDS:
            last_report[0] = now
            share = f" ({done / total:.1%})" if total else ""
            context.log.info(f"downloaded {done:,} bytes{share}")

    fetched = fetch_dump(
        dump_sources.source(year),
        store.home / "downloads" / f"snapshot_year={year}",
        checksums=dump_sources.checksums.get(year),
        progress=progress,
    )
    store.write_report(
        "wikidata_dump",
        {
            "path": str(fetched.path),
            "source": fetched.source,
            "bytes": fetched.bytes,
            "checksum": fetched.checksum,
            "checksum_algorithm": fetched.checksum_algorithm,
            "embedded_sample": dump_sources.is_sample(year),
        },
        snapshot_year=year,
    )
    return dg.MaterializeResult(
        metadata={
            "source": fetched.source,
            "path": dg.MetadataValue.path(str(fetched.path)),
            "bytes": fetched.bytes,
            fetched.checksum_algorithm: fetched.checksum,
            "checksum_verified": fetched.verified,
            "downloaded": fetched.downloaded,
            "resumed_requests": fetched.resumed_attempts,
            "seconds": round(fetched.seconds, 3),
            "embedded_sample": dump_sources.is_sample(year),
        }
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "claims",
            deps=["wikidata_dump"],
            group_name="ingest",
            kinds={"parquet", "duckdb"},
            owners=["team:chronoscope"],
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
        dg.AssetSpec(
            "labels",
            deps=["wikidata_dump"],
            group_name="ingest",
            kinds={"parquet", "duckdb"},
            owners=["team:chronoscope"],
            description=(
                "English label, description and aliases of every item of the snapshot that has "
                "an English label or alias, from the item's own document."
            ),
        ),
        dg.AssetSpec(
            "lifespans",
            deps=["wikidata_dump"],
            group_name="ingest",
            kinds={"parquet", "duckdb"},
            owners=["team:chronoscope"],
            description=(
                "The dates that bound each item's existence: birth (P569) and inception (P571) "
                "as starts, death (P570) and dissolution (P576) as ends, one row per statement "
                "of the best rank with its precision (deprecated excluded; the others counted). "
                "A timeless fact is asked only within its subject's lifespan."
            ),
        ),
    ],
    partitions_def=snapshot_year_partitions,
    pool="duckdb_writer",
)
def claims_and_labels(
    context: dg.AssetExecutionContext,
    warehouse: WarehouseResource,
    dump_sources: DumpSources,
    duckdb: DuckDBResource,
):
    year = context.partition_key
    store = warehouse.warehouse
    dump = store.read_report("wikidata_dump", snapshot_year=year)
    last_report = [time.monotonic()]

    def progress(report: ExtractionReport) -> None:
        now = time.monotonic()
        if now - last_report[0] >= PROGRESS_SECONDS:
            last_report[0] = now
            context.log.info(f"snapshot {year}: {report.progress_text()}")

    with (
        store.writing("claims", snapshot_year=year) as claims_path,
        store.writing("labels", snapshot_year=year) as labels_path,
        store.writing("lifespans", snapshot_year=year) as lifespans_path,
    ):
        report = extract_dump(
            Path(dump["path"]),
            claims_path,
            labels_path,
            lifespans_out=lifespans_path,
            workers=dump_sources.workers or None,
            progress=progress,
        )
    counts = dict(sorted(report.counts.items()))
    store.write_report(
        "claims",
        {"counts": counts, "seconds": report.seconds, "workers": report.workers,
         "input_bytes": report.input_bytes, "dump": dump},
        snapshot_year=year,
    )  # fmt: skip
    warehouse.refresh_views(duckdb)
    claims_table = pq.read_table(store.data_path("claims", snapshot_year=year), columns=["pid"])
    by_pid = {
        row["values"]: row["counts"] for row in pc.value_counts(claims_table["pid"]).to_pylist()
    }
    context.log.info(
        f"snapshot {year}: {report.get('statements_kept'):,} statements kept from "
        f"{report.get('items'):,} items in {report.seconds:.1f} s"
    )
    yield dg.MaterializeResult(
        asset_key="claims",
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
            "path": dg.MetadataValue.path(str(store.data_path("claims", snapshot_year=year))),
        },
    )
    yield dg.MaterializeResult(
        asset_key="labels",
        metadata={
            "dagster/row_count": report.get("items") - report.get("items_without_english_label"),
            "items_without_english_label": report.get("items_without_english_label"),
            "path": dg.MetadataValue.path(str(store.data_path("labels", snapshot_year=year))),
        },
    )
    yield dg.MaterializeResult(
        asset_key="lifespans",
        metadata={
            "dagster/row_count": report.get("lifespan_kept"),
            "statements_seen": report.get("lifespan_seen"),
            "dropped": dg.MetadataValue.json(report.lifespan_drops),
            "path": dg.MetadataValue.path(str(store.data_path("lifespans", snapshot_year=year))),
        },
    )


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
