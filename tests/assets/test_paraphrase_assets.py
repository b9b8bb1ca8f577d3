"""The paraphrased subset through Dagster: the default template variants with every turn
accounted for and Table 5 in the report, the embedded model's paraphrases through the cache,
the blocking filter check, and Table 5 from the original and paraphrased variants of the kept
chains."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from chronoscope_dagster.cli import main
from chronoscope_dagster.evaluation.prompts import SETTINGS
from chronoscope_dagster.llm.registry import load_registry
from chronoscope_dagster.orchestration import run_selection
from chronoscope_dagster.paraphrase.filter import REASONS
from chronoscope_dagster.paraphrase.rewrite import ParaphraseResult
from chronoscope_dagster.paraphrase.tables import paraphrases_table
from chronoscope_dagster.paraphrase.template_variants import TEMPLATE_REASONS
from chronoscope_dagster.resources import BenchmarkSettings
from chronoscope_dagster.warehouse import Warehouse
from tests.conftest import MODEL_THREADS, SAMPLE_SETTINGS, TEST_MODELS
from tests.pipeline_helpers import (
    TEST_MODEL_NAMES,
    copy_home,
    failed_checks,
    home_instance,
    run_ci_checks,
)


def test_every_turn_of_the_chosen_chains_is_accounted_for(sample_home):
    home, results = sample_home
    store = Warehouse(home)
    report = store.read_report("paraphrased_subset")
    counts = report["counts"]
    rows = store.query("SELECT * FROM paraphrased_subset ORDER BY chain_id, turn_index")
    chosen = store.query(
        """SELECT count(DISTINCT chain_id) AS chains, count(*) AS turns FROM turns
           SEMI JOIN (SELECT DISTINCT chain_id FROM paraphrased_subset) USING (chain_id)"""
    ).to_pylist()[0]
    assert report["chains"] == chosen["chains"] == 4
    assert rows.num_rows == counts["turns"] == chosen["turns"]
    assert report["paraphraser"] == "templates", "the default: template variants"
    assert counts["accepted"] + counts["rejected"] + counts["errors"] == counts["turns"]
    assert counts["attempts"] == sum(rows.column("attempts").to_pylist())
    statuses = rows.column("status").to_pylist()
    assert statuses.count("accepted") == counts["accepted"]
    assert statuses.count("rejected") == counts["rejected"]
    for row in rows.to_pylist():
        if row["status"] == "accepted":
            assert row["attempts"] >= 1 and row["paraphrase"] != row["original_question"]
        else:
            assert row["status"] == "rejected" and row["paraphrase"] is None
            assert row["reasons"] and set(row["reasons"]) <= {*REASONS, *TEMPLATE_REASONS}
    per_chain: dict[str, list[bool]] = {}
    for row in rows.to_pylist():
        per_chain.setdefault(row["chain_id"], []).append(row["status"] == "accepted")
    kept = {c for c, accepted in per_chain.items() if all(accepted)}
    assert report["kept_chains"] == len(kept)
    assert {r["chain_id"] for r in rows.to_pylist() if r["chain_kept"]} == kept
    evaluations = [
        e for result in results for e in result.checks if e.check_name == "paraphrases_pass_filter"
    ]
    assert [e.passed for e in evaluations] == [True]
    for model in ("local", "oracle", "present_day"):
        for setting in SETTINGS:
            assert store.has("paraphrase_metrics", model=model, setting=setting)


def _author_paraphrases(home, chains: int = 3) -> list[str]:
    """Replace the subset by hand-made paraphrases ("So, ...") of the first ``chains`` chains
    of the evaluation sample that have both explicit and implicit turns; a leading "so" keeps
    every year, entity, property word and reference, so the filter accepts each one."""
    store = Warehouse(home)
    turns = store.query(
        f"""WITH mixed AS (
                SELECT chain_id FROM turns SEMI JOIN eval_sample USING (chain_id)
                GROUP BY chain_id HAVING bool_or(is_explicit) AND NOT bool_and(is_explicit)
                ORDER BY chain_id LIMIT {chains})
            SELECT chain_id, turn_index, question FROM turns SEMI JOIN mixed USING (chain_id)
            ORDER BY chain_id, turn_index"""
    ).to_pylist()
    results = [
        ParaphraseResult(
            t["chain_id"], t["turn_index"], t["question"],
            "So, " + t["question"][0].lower() + t["question"][1:], 1,
        )
        for t in turns
    ]  # fmt: skip
    store.write_table("paraphrased_subset", paraphrases_table(results))
    return sorted({t["chain_id"] for t in turns})


def test_the_default_report_shows_table5_for_every_model_and_names_template_variants(
    sample_home,
):
    """With no capable paraphraser named, the template variants keep chains, so the report has
    Table 5 for every model and says what its paraphrases are."""
    home, _ = sample_home
    store = Warehouse(home)
    kept = store.read_report("paraphrased_subset")["kept_chains"]
    assert kept >= 1
    markdown = (store.home / "report" / "report.md").read_text()
    assert f"- paraphrased subset: {kept} of 4 chains kept (paraphraser template variants)" in (
        markdown
    )
    section = markdown[markdown.index("## Templated vs paraphrased questions (Table 5)") :]
    section = section[: section.index("\n## ", 1)]
    assert "template variants" in section and "weaker test of wording" in section
    for spec in load_registry(TEST_MODELS):
        for variant in ("Orig", "Para"):
            assert f"| {spec.name} | {variant} |" in section


def test_table5_compares_the_kept_chains_as_templated_and_paraphrased(sample_home, tmp_path):
    home, _ = sample_home
    copy = copy_home(home, tmp_path)
    kept = _author_paraphrases(copy)
    assert len(kept) == 3
    run_selection(
        home=str(copy),
        selection="key:paraphrase_predictions+ or key:benchmark_release",
        models=str(TEST_MODELS),
        model_threads=MODEL_THREADS,
        instance=home_instance(copy),
        settings=BenchmarkSettings(**SAMPLE_SETTINGS),
        force=True,
        echo=lambda _: None,
    )
    assert not failed_checks(run_ci_checks(copy))
    store = Warehouse(copy)
    predictions = store.query(
        """SELECT model, setting, variant, count(DISTINCT chain_id) AS chains, count(*) AS n
           FROM paraphrase_predictions GROUP BY ALL ORDER BY ALL"""
    ).to_pylist()
    models = TEST_MODEL_NAMES
    assert {(p["model"], p["setting"], p["variant"]) for p in predictions} == {
        (m, s, v) for m in models for s in SETTINGS for v in ("original", "paraphrased")
    }
    assert all(p["chains"] == 3 for p in predictions), "every kept chain in every setting"

    asked = store.query(
        """SELECT p.variant, p.prediction, m.prediction AS main_prediction
           FROM paraphrase_predictions p
           JOIN predictions m USING (model, setting, chain_id, turn_index)
           WHERE p.model = 'local' AND p.setting = 'gold_context' AND p.scored"""
    ).to_pylist()
    original = [r for r in asked if r["variant"] == "original"]
    assert original and all(r["prediction"] == r["main_prediction"] for r in original), (
        "the templated variant asks exactly what the evaluation sample asked"
    )

    board = store.query(
        """SELECT model, setting, variant, acc_at1, drift_rate_given_present_at1, n_chains
           FROM leaderboard WHERE subset = 'paraphrased_subset' ORDER BY ALL"""
    ).to_pylist()
    assert len(board) == len(models) * len(SETTINGS) * 2 and all(r["n_chains"] == 3 for r in board)
    for row in board:
        if row["model"] == "oracle":
            assert row["acc_at1"] == 1.0
        if row["model"] == "present_day" and row["drift_rate_given_present_at1"] is not None:
            assert row["drift_rate_given_present_at1"] == 1.0
    markdown = (store.home / "report" / "report.md").read_text()
    assert "## Templated vs paraphrased questions (Table 5)" in markdown
    for variant in ("Orig", "Para"):
        assert re.search(
            rf"\| oracle \| {variant} \| (1\.000 \(n=\d+\)|-) \| 1\.000 \(n=\d+\) \|", markdown
        ), "Scope Acc@1 (none where no scope-dependent turn was kept), then Acc@1"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda question: question + " Or 1999?", "year_changed"),
        (lambda question: question.rstrip("?") + ".", "not_a_question"),
    ],
    ids=["year", "statement"],
)
def test_a_paraphrase_the_filter_rejects_fails_the_check(sample_home, tmp_path, change, problem):
    home, _ = sample_home
    copy = copy_home(home, tmp_path)
    _author_paraphrases(copy, chains=1)
    store = Warehouse(copy)
    path = store.data_path("paraphrased_subset")
    rows = pq.read_table(path).to_pylist()
    rows[0]["paraphrase"] = change(rows[0]["paraphrase"])
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    result = run_ci_checks(copy)
    assert "paraphrases_pass_filter" in failed_checks(result)
    evaluation = next(
        e for e in result.get_asset_check_evaluations() if e.check_name == "paraphrases_pass_filter"
    )
    assert problem in str(evaluation.metadata["problems"].value)


def test_the_paraphraser_must_be_in_the_registry(tmp_path, capsys):
    home = tmp_path / "h"
    assert main(["run", "--home", str(home), "--paraphraser", "gpt-9"]) == 2
    assert "model 'gpt-9' is not in the registry" in capsys.readouterr().err
    assert not home.exists() or not (home / "claims").exists()


def test_a_paraphraser_accepts_templates_by_name(tmp_path, capsys):
    """``--paraphraser templates`` needs no registry entry: the run gets past the registry
    and stops at the next argument checked (a missing dump)."""
    missing = tmp_path / "missing.json.gz"
    args = ["run", "--home", str(tmp_path / "h"), "--paraphraser", "templates"]
    assert main([*args, "--dump", f"2022={missing}"]) == 2
    assert "--dump 2022: no such file" in capsys.readouterr().err


def test_the_model_paraphrases_when_named_and_a_rerun_asks_it_nothing(sample_home, tmp_path):
    """``--paraphraser local`` takes the model path (the paper's prompt, one retry); a rerun
    answers from the response cache and writes the same bytes."""
    home = copy_home(sample_home[0], tmp_path)
    store = Warehouse(home)
    path = store.data_path("paraphrased_subset")
    settings = BenchmarkSettings(**{**SAMPLE_SETTINGS, "paraphraser": "local"})
    metadata = []
    for _ in range(2):
        [result] = run_selection(
            home=str(home),
            selection="paraphrased_subset",
            models=str(TEST_MODELS),
            model_threads=MODEL_THREADS,
            op_config={"paraphrased_subset": {"retries": 1}},
            instance=home_instance(home),
            settings=settings,
            force=True,
            echo=lambda _: None,
        )
        [materialization] = result.get_asset_materialization_events()
        metadata.append(materialization.materialization.metadata)
        if len(metadata) == 1:
            before = path.read_bytes()
    assert metadata[0]["paraphraser"].value == "local"
    assert metadata[0]["backend_calls"].value > 0
    assert metadata[1]["backend_calls"].value == 0
    assert metadata[1]["cache_hits"].value > 0
    assert path.read_bytes() == before
    report = store.read_report("paraphrased_subset")
    assert report["paraphraser"] == "local" and report["backend"]["backend"] == "local"
    for row in store.query("SELECT * FROM paraphrased_subset").to_pylist():
        assert 1 <= row["attempts"] <= 2, "one retry configured"
        if row["status"] == "rejected":
            assert row["reasons"] and set(row["reasons"]) <= set(REASONS)
            assert row["attempts"] == 2
