"""The released dataset: splits and card written from a small home, loaded by `datasets`.

The home is the embedded sample's facts (``sample_truth_home``) with the 2025 chains of every
family (``sample_turns``) merged, sampled and summarised as the assets do; nothing is
evaluated, so the figures that need the reference systems must say they are not available.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

from chronoscope_dagster.chains.benchmark import CHAINS_SQL, TURNS_SQL, merge_snapshots
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.stats import benchmark_stats_sql, eval_sample_sql
from chronoscope_dagster.paraphrase.tables import PARAPHRASES_SCHEMA
from chronoscope_dagster.release import (
    CARD_FILE,
    COLUMNS,
    RELEASE_SCHEMA,
    SPLITS,
    card_data_files,
    split_file,
)
from chronoscope_dagster.storage.release import source_split_rows, write_release
from chronoscope_dagster.warehouse import Warehouse, parquet_source

REFUSED = {"incomplete_scope": 7, "before_lifespan": 3}


def _home(truth_home: Path, turns: pa.Table, root: Path) -> Warehouse:
    """A home holding the reports a card reads from ``truth_home``, the benchmark of
    ``turns``, its sample, statistics (without the blind system), the families' refusals, and
    a paraphrased subset of two sampled chains, one of them kept."""
    warehouse = Warehouse(root)
    for report in [
        *truth_home.glob("wikidata_dump/*/report.json"),
        truth_home / "present_day" / "report.json",
    ]:
        target = root / report.relative_to(truth_home)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report, target)
    with warehouse.connect() as connection:
        connection.register("generated", turns)
        merge_snapshots(connection, "SELECT * FROM generated")
        warehouse.write_table("turns", connection.sql(TURNS_SQL).to_arrow_table())
        warehouse.write_table("chains", connection.sql(CHAINS_SQL).to_arrow_table())
        chains = parquet_source(warehouse.data_path("chains"))
        merged = parquet_source(warehouse.data_path("turns"))
        sample = connection.sql(eval_sample_sql(chains, merged, 2, 1, 0)).to_arrow_table()
        warehouse.write_table("eval_sample", sample)
        warehouse.write_report(
            "eval_sample",
            {"per_stratum": 2, "self_conditioned_per_stratum": 1, "seed": 0, "scope_target": 38},
        )
        stats = connection.sql(benchmark_stats_sql(chains, merged)).to_arrow_table()
        warehouse.write_table("benchmark_stats", stats)
    for family in FAMILIES[:2]:
        of_family = turns.filter(pc.equal(turns["family"], family))
        warehouse.write_table(f"family_{family}", of_family, snapshot_year="2025")
        warehouse.write_report(
            f"family_{family}",
            {"seed": 0, "language": "en", "scopes_refused": REFUSED},
            snapshot_year="2025",
        )
    kept, rejected = sample["chain_id"].to_pylist()[:2]
    asked = pq.read_table(warehouse.data_path("turns")).filter(
        pc.is_in(pc.field("chain_id"), pa.array([kept, rejected]))
    )
    rows = [
        {
            "chain_id": row["chain_id"],
            "turn_index": row["turn_index"],
            "original_question": row["question"],
            "paraphrase": f"Rephrased: {row['question']}",
            "status": "rejected" if row["chain_id"] == rejected else "accepted",
            "reasons": [],
            "attempts": 1,
            "last_reply": None,
            "error": None,
            "chain_kept": row["chain_id"] == kept,
        }
        for row in asked.to_pylist()
    ]
    warehouse.write_table(
        "paraphrased_subset", pa.Table.from_pylist(rows, schema=PARAPHRASES_SCHEMA)
    )
    warehouse.write_report(
        "paraphrased_subset",
        {"paraphraser": "templates", "config": {"seed": 42}, "chains": 2, "kept_chains": 1},
    )
    return warehouse


@pytest.fixture(scope="module")
def home(sample_truth_home, sample_turns, tmp_path_factory) -> Warehouse:
    return _home(sample_truth_home, sample_turns, tmp_path_factory.mktemp("release-home"))


def _load(folder: Path, cache: Path, monkeypatch, *, by_card: bool = False):
    """The release as `datasets` loads it, offline: nothing may come from a hub."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    datasets.disable_progress_bars()
    if by_card:
        return datasets.load_dataset(str(folder), cache_dir=str(cache))
    return datasets.load_dataset("parquet", data_dir=str(folder), cache_dir=str(cache))


def test_every_column_is_documented():
    assert list(COLUMNS) == RELEASE_SCHEMA.names


def test_datasets_loads_the_release_with_the_rows_of_turns(home, tmp_path, monkeypatch):
    folder = tmp_path / "release"
    splits = write_release(home, folder, {})
    expected = source_split_rows(home)
    assert [s.name for s in splits] == list(SPLITS)
    assert {s.name: s.turns for s in splits} == expected
    assert expected["self_conditioned"] < expected["eval_sample"] < expected["full"]

    for by_card in (False, True):
        loaded = _load(folder, tmp_path / f"cache-{by_card}", monkeypatch, by_card=by_card)
        assert {name: split.num_rows for name, split in loaded.items()} == expected
    turns = pq.read_table(home.data_path("turns")).to_pylist()
    chain_id = loaded["paraphrased"][0]["chain_id"]
    assert set(loaded["paraphrased"]["chain_id"]) == {chain_id}
    released = [row for row in loaded["eval_sample"] if row["chain_id"] == chain_id]
    assert [{k: v for k, v in row.items() if k != "paraphrased_question"} for row in released] == [
        row for row in turns if row["chain_id"] == chain_id
    ], "a chain's rows are its turns, in order"
    assert [row["paraphrased_question"] for row in released] == [
        f"Rephrased: {row['question']}" for row in released
    ]
    paraphrased = [q for q in loaded["full"]["paraphrased_question"] if q is not None]
    assert len(paraphrased) == len(released), "only the kept chain has paraphrases"


def test_the_card_states_its_sources_figures_and_what_is_missing(home, tmp_path):
    folder = tmp_path / "release"
    write_release(home, folder, {"turns": "abc123", "chains": "abc123"})
    card = (folder / CARD_FILE).read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---\n", 2)[1])
    assert header["license"] == "cc0-1.0"
    assert card_data_files(card) == {s: f"data/{s}-*.parquet" for s in SPLITS}
    assert "| 2025 | embedded sample" in card and "2025-12-31" in card
    assert "the 2025 snapshot at 2025-10-01" in card
    assert "Chain generation: seed 0" in card and "Evaluation sample: seed 0" in card
    assert "| turns, chains | abc123 |" in card and "| truth | not recorded |" in card
    assert "| carryover | " in card and " / 552408 |" in card, "Table 2 beside the paper's"
    assert (
        "- **Drift-eligible share**: " in card
        and "not available" not in (card.split("- **Drift-eligible share**: ")[1].split("\n")[0])
    )
    assert "| incomplete_scope | 14 |" in card, "refusals summed over families"
    assert "**Blind ceiling**: not available" in card
    assert "**Scope-blind score**: not available: no `scope_blind` reference system" in card
    assert "Measured: not available: no `copy_previous` reference system" in card
    assert date.today().isoformat() not in card


def test_the_release_is_byte_identical_and_drops_a_split_no_longer_there(home, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    write_release(home, first, {})
    write_release(home, second, {})
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)

    report = home.partition_dir("paraphrased_subset") / "report.json"
    kept_report, kept_data = report.read_bytes(), home.data_path("paraphrased_subset").read_bytes()
    table = pq.read_table(home.data_path("paraphrased_subset"))
    none_kept = table.set_column(
        table.schema.get_field_index("chain_kept"),
        "chain_kept",
        pa.array([False] * table.num_rows),
    )
    try:
        home.write_table("paraphrased_subset", none_kept)
        (folder := tmp_path / "user-folder").mkdir()
        (folder / ".gitattributes").write_text("*.parquet filter=lfs\n")
        shutil.copytree(first / "data", folder / "data")
        write_release(home, folder, {})
    finally:
        home.data_path("paraphrased_subset").write_bytes(kept_data)
        report.write_bytes(kept_report)
    assert not (folder / split_file("paraphrased")).exists()
    assert (folder / ".gitattributes").exists(), "what is not the release's is left alone"
    card = (folder / CARD_FILE).read_text(encoding="utf-8")
    assert "paraphrased" not in card_data_files(card)
    assert "No `paraphrased` split: template variants kept none of the 2 chains" in card


def test_export_without_a_benchmark_says_what_to_run(tmp_path, capsys):
    from chronoscope_dagster.cli import main

    assert main(["export", "--format", "hf", "--home", str(tmp_path), str(tmp_path / "out")]) == 2
    assert "run `chronoscope run` first" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
