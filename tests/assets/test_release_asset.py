"""benchmark_release as the pipeline builds it in the session's sample home (the reference
systems evaluated), and `chronoscope export`, which copies it."""

from __future__ import annotations

import pyarrow.parquet as pq

from chronoscope_dagster.cli import main
from chronoscope_dagster.release import CARD_FILE, CODE_LINEAGE
from chronoscope_dagster.storage.release import release_split_rows, source_split_rows
from chronoscope_dagster.warehouse import Warehouse
from tests.conftest import TEST_MODELS
from tests.pipeline_helpers import copy_home


def _metric(store: Warehouse, model: str, metric: str) -> str:
    [row] = store.query(
        f"""SELECT value, denominator FROM metrics WHERE model = '{model}'
            AND setting = 'gold_context' AND stratum = 'overall' AND metric = '{metric}'"""
    ).to_pylist()
    return f"{row['value']:.3f} (n={int(row['denominator'])})"


def test_export_copies_the_release_the_pipeline_built(sample_home, tmp_path, monkeypatch, capsys):
    home = copy_home(sample_home[0], tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.setenv("CHRONOSCOPE_MODELS", str(TEST_MODELS))
    out = tmp_path / "out"
    assert main(["export", "--format", "hf", "--home", str(home), str(out)]) == 0
    assert "==> benchmark_release" in capsys.readouterr().err, "rebuilt from the home as it is"
    built = sample_home[0] / "benchmark_release"
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files and all((out / f).read_bytes() == (built / f).read_bytes() for f in files), (
        "the same bytes as the pipeline's"
    )

    store = Warehouse(home)
    assert release_split_rows(out) == source_split_rows(store)
    assert set(release_split_rows(out)) == {
        "full",
        "eval_sample",
        "self_conditioned",
        "paraphrased",
    }
    assert (
        release_split_rows(out)["full"]
        == pq.ParquetFile(store.data_path("turns")).metadata.num_rows
    )
    card = (out / CARD_FILE).read_text(encoding="utf-8")
    scope_blind = f"`scope_blind` Acc@1 {_metric(store, 'scope_blind', 'acc_at1')}"
    assert scope_blind in card
    assert f"Scope Acc@1 {_metric(store, 'scope_blind', 'scope_acc_at1')}" in card
    assert f"`copy_previous` Acc@1 {_metric(store, 'copy_previous', 'acc_at1')}" in card
    assert f"`blind` Acc@1 {_metric(store, 'blind', 'acc_at1')}" in card
    assert "**Blind ceiling**: a system that knows no fact" in card
    assert "Blind reference system (below): seed 0." in card
    for label in CODE_LINEAGE:
        assert f"| {label} | not recorded |" not in card, f"{label}: its code version"
