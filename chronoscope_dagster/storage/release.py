"""Where a release (``chronoscope_dagster.release``) reads a home, and how its folder is
written: the split files and the card, each renamed into place, the bytes depending only on
the home."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.files import atomic_write
from chronoscope_dagster.release import (
    CARD_FILE,
    DATA_FOLDER,
    REFERENCE_SYSTEMS,
    RELEASE_SCHEMA,
    Dump,
    ReleaseFacts,
    Split,
    dataset_card,
    split_file,
    split_files,
    split_sql,
    split_summary_sql,
)
from chronoscope_dagster.storage.chains import refusals_by_reason
from chronoscope_dagster.storage.evaluation import all_metrics, prediction_backend
from chronoscope_dagster.warehouse import Warehouse, parquet_source, write_query
from chronoscope_dagster.wikidata.download import is_url


def write_release(
    warehouse: Warehouse, folder: Path, code_versions: Mapping[str, str | None]
) -> list[Split]:
    """The home's benchmark as a release in ``folder``: every split that has rows, and the
    card. Other split files a former release left in ``folder`` are removed; nothing else
    there is touched. ``code_versions``: what the card states for ``release.CODE_LINEAGE``."""
    if not warehouse.has("turns"):
        raise FileNotFoundError(f"no benchmark in {warehouse.home}: turns is not materialized")
    sample = warehouse.data_path("eval_sample") if warehouse.has("eval_sample") else None
    paraphrases = (
        warehouse.data_path("paraphrased_subset") if warehouse.has("paraphrased_subset") else None
    )
    queries = split_sql(
        parquet_source(warehouse.data_path("turns")),
        parquet_source(sample) if sample else None,
        parquet_source(paraphrases) if paraphrases else None,
    )
    (folder / DATA_FOLDER).mkdir(parents=True, exist_ok=True)
    splits = []
    with warehouse.connect() as connection:
        for name, sql in queries.items():
            path = folder / split_file(name)
            with atomic_write(path, keep_mode=False) as temporary:
                write_query(connection, sql, temporary, RELEASE_SCHEMA)
            [summary] = connection.execute(split_summary_sql(parquet_source(path))).fetchall()
            if not summary[1]:
                path.unlink()
                continue
            splits.append(Split(name, *(int(value) for value in summary)))
    written = {split.name for split in splits}
    for name, file in split_files(_names(folder)).items():
        if name not in written:
            (folder / DATA_FOLDER / file).unlink()
    card = dataset_card(release_facts(warehouse, splits, code_versions))
    with atomic_write(folder / CARD_FILE, keep_mode=False) as temporary:
        temporary.write_text(card, encoding="utf-8")
    return splits


def release_facts(
    warehouse: Warehouse, splits: list[Split], code_versions: Mapping[str, str | None]
) -> ReleaseFacts:
    """What the card of a home's release states besides its splits."""
    families = [
        warehouse.read_report(f"family_{family}", **partition)
        for family in FAMILIES
        for partition in warehouse.partitions(f"family_{family}")
    ]
    chains = None
    if families:
        chains = {
            key: ", ".join(sorted({str(report[key]) for report in families}))
            for key in ("seed", "language")
        }
    refusals = refusals_by_reason(warehouse) if families else None
    stats = None
    if warehouse.has("benchmark_stats"):
        stats = pq.read_table(warehouse.data_path("benchmark_stats")).to_pylist()
    backends, metrics = _reference_systems(warehouse)
    return ReleaseFacts(
        splits=splits,
        dumps=_dumps(warehouse),
        present=_report(warehouse, "present_day"),
        chains=chains,
        sample=_report(warehouse, "eval_sample"),
        paraphrase=_report(warehouse, "paraphrased_subset"),
        blind_seed=(_report(warehouse, "benchmark_stats") or {}).get("seed"),
        stats=stats,
        refusals=refusals,
        reference_metrics=metrics,
        reference_backends=backends,
        code_versions=code_versions,
    )


def _report(warehouse: Warehouse, asset: str, **keys: str) -> dict | None:
    try:
        return warehouse.read_report(asset, **keys)
    except FileNotFoundError:
        return None


def _dumps(warehouse: Warehouse) -> list[Dump]:
    dumps = []
    for year in SNAPSHOT_YEARS:
        report = _report(warehouse, "wikidata_dump", snapshot_year=year)
        if report is None:
            continue
        source = str(report["source"])
        dumps.append(
            Dump(
                snapshot_year=year,
                source=source if is_url(source) else Path(source).name,
                embedded_sample=bool(report.get("embedded_sample")),
                bytes=int(report["bytes"]),
                checksum_algorithm=str(report["checksum_algorithm"]),
                checksum=str(report["checksum"]),
            )
        )
    return dumps


def _reference_systems(warehouse: Warehouse) -> tuple[dict[str, str], pa.Table | None]:
    """The reference systems whose metrics the home holds, with their backends, and those
    metrics (None where there are none)."""
    backends = {}
    for keys in warehouse.partitions("metrics"):
        model = keys["model"]
        if model in backends or not warehouse.has("predictions", **keys):
            continue
        backend = prediction_backend(warehouse, "predictions", model, keys["setting"])
        if backend in REFERENCE_SYSTEMS:
            backends[model] = backend
    if not backends:
        return {}, None
    metrics = all_metrics(warehouse)
    assert metrics is not None
    models = pa.array(sorted(backends), pa.string())
    return dict(sorted(backends.items())), metrics.filter(pc.is_in(metrics["model"], models))


def copy_release(source: Path, folder: Path) -> list[str]:
    """Copy the release in ``source`` into ``folder`` as ``write_release`` would have written
    it there (the card and the split files; other split files in ``folder`` removed); return
    the files copied."""
    files = [CARD_FILE, *(f"{DATA_FOLDER}/{f}" for f in split_files(_names(source)).values())]
    (folder / DATA_FOLDER).mkdir(parents=True, exist_ok=True)
    for file in files:
        with atomic_write(folder / file, keep_mode=False) as temporary:
            shutil.copyfile(source / file, temporary)
    kept = set(files)
    for file in split_files(_names(folder)).values():
        if f"{DATA_FOLDER}/{file}" not in kept:
            (folder / DATA_FOLDER / file).unlink()
    return files


def _names(folder: Path) -> list[str]:
    data = folder / DATA_FOLDER
    return sorted(p.name for p in data.iterdir()) if data.is_dir() else []


def release_split_rows(folder: Path) -> dict[str, int]:
    """The rows of each split file of a release folder, from the Parquet footers."""
    return {
        split: pq.ParquetFile(folder / DATA_FOLDER / file).metadata.num_rows
        for split, file in split_files(_names(folder)).items()
    }


def source_split_rows(warehouse: Warehouse) -> dict[str, int]:
    """The rows each split of the home's release should have, counted from ``turns``,
    ``eval_sample`` and ``paraphrased_subset`` (splits without rows left out)."""
    turns = parquet_source(warehouse.data_path("turns"))
    counts = {"full": f"SELECT count(*) FROM {turns}"}
    if warehouse.has("eval_sample"):
        sample = parquet_source(warehouse.data_path("eval_sample"))
        counts["eval_sample"] = (
            f"SELECT count(*) FROM {turns} t SEMI JOIN {sample} s USING (chain_id)"
        )
        counts["self_conditioned"] = (
            f"SELECT count(*) FROM {turns} t SEMI JOIN "
            f"(SELECT chain_id FROM {sample} WHERE in_self_conditioned) s USING (chain_id)"
        )
    if warehouse.has("paraphrased_subset"):
        kept = parquet_source(warehouse.data_path("paraphrased_subset"))
        counts["paraphrased"] = (
            f"SELECT count(*) FROM {turns} t SEMI JOIN "
            f"(SELECT DISTINCT chain_id FROM {kept} WHERE chain_kept) k USING (chain_id)"
        )
    with warehouse.connect() as connection:
        rows = {split: connection.execute(sql).fetchall()[0][0] for split, sql in counts.items()}
    return {split: int(n) for split, n in rows.items() if n}
