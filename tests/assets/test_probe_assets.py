"""The probe through Dagster: corpus, runs per model, report, and its blocking check."""

from __future__ import annotations

import json

from chronoscope_dagster.cli import main
from chronoscope_dagster.warehouse import Warehouse
from tests.pipeline_helpers import TEST_MODEL_NAMES, copy_home, failed_checks, run_ci_checks


def test_probe_runs_every_model_and_reports(sample_home):
    home, _ = sample_home
    store = Warehouse(home)
    rows = store.query(
        """SELECT model, arm, count(*) AS n, count_if(check_correct) AS correct
           FROM probe_runs WHERE system = 'in_context' GROUP BY ALL ORDER BY ALL"""
    ).to_pylist()
    by_key = {(r["model"], r["arm"]): r for r in rows}
    assert {model for model, _ in by_key} == set(TEST_MODEL_NAMES)
    assert {arm for _, arm in by_key} == {"control", "probe", "oracle", "floor"}
    assert all(r["n"] == 3 for r in rows), "one item of each of the three types"
    assert by_key[("oracle", "control")]["correct"] == 3
    assert by_key[("oracle", "probe")]["correct"] == 3
    assert by_key[("local", "oracle")]["correct"] == 3, "the ceiling reads the gold sessions"
    assert by_key[("present_day", "control")]["correct"] == 0
    report = (store.partition_dir("probe_report") / "report.md").read_text()
    for model in ("local", "oracle", "present_day"):
        assert f"# Time-grounded probe: {model}" in report
    assert "sign test" in report
    corpus = json.loads((store.partition_dir("probe_corpus") / "corpus.json").read_text())
    assert len(corpus) == 135


def test_the_memory_systems_run_through_the_embedded_model_and_are_reported(sample_home):
    home, _ = sample_home
    store = Warehouse(home)
    rows = store.query(
        """SELECT model, system, arm, count(*) AS n FROM probe_runs
           WHERE system <> 'in_context' GROUP BY ALL ORDER BY ALL"""
    ).to_pylist()
    assert rows == [
        {"model": "local", "system": system, "arm": arm, "n": 3}
        for system in ("ingest_time_memory", "valid_time_memory")
        for arm in ("control", "probe")
    ], "the reference systems read no prompt, so no memory runs through them"
    report = store.read_report("probe_report")
    scores = {(s["system"], s["reader"]): s for s in report["memory_systems"]}
    assert set(scores) == {
        (system, reader)
        for system in ("ingest_time_memory", "valid_time_memory")
        for reader in ("rule-reader", "local")
    }
    ingest, valid = (
        scores[("ingest_time_memory", "rule-reader")],
        scores[("valid_time_memory", "rule-reader")],
    )
    assert ingest["n"] == valid["n"] == 135
    assert ingest["paired"]["p_value"] < 0.05 and valid["paired"]["p_value"] == 1.0
    assert valid["control"]["accuracy"] == valid["probe"]["accuracy"] == 1.0
    assert scores[("valid_time_memory", "local")]["n"] == 3
    assert set(report["models"]) == set(TEST_MODEL_NAMES)
    markdown = (store.partition_dir("probe_report") / "report.md").read_text()
    assert markdown.startswith("# Time-grounded probe: memory systems")
    assert "| valid_time_memory | local | 3 |" in markdown


def test_a_date_in_a_message_fails_the_corpus_check(sample_home, tmp_path):
    home, _ = sample_home
    copy = copy_home(home, tmp_path)
    path = Warehouse(copy).partition_dir("probe_corpus") / "corpus.json"
    items = json.loads(path.read_text())
    items[0]["haystack_sessions"][0][0]["content"] += " See you on March 3rd."
    path.write_text(json.dumps(items))
    result = run_ci_checks(copy)
    failed = failed_checks(result)
    assert failed == {"probe_corpus_valid"}


def test_probe_export_writes_longmemeval_json(tmp_path, capsys):
    target = tmp_path / "probe.json"
    assert main(["probe", "--export", str(target), "--generated", "6", "--seed", "3"]) == 0
    items = json.loads(target.read_text())
    assert len(items) == 15 + 6
    assert {"question_id", "haystack_sessions", "haystack_dates", "answer"} <= set(items[0])
    assert (tmp_path / "probe.specs.json").exists()
    assert "21 items" in capsys.readouterr().out
