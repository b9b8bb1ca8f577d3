"""The asset graph itself is under test: keys, dependencies, groups, partitions, checks."""

import dagster as dg

from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.definitions import defs
from chronoscope_dagster.partitions import setting_partitions

EXPECTED_SOURCES = {
    "wikidata_dump": "snapshot_year",
    "model_entry": "model",
    "chain_import": None,
    "sample_settings": None,
    "paraphrase_settings": None,
    "probe_source": None,
    "probe_run_settings": None,
}
EXPECTED_ASSETS = {
    "claims": (["wikidata_dump"], "ingest", "snapshot_year"),
    "labels": (["wikidata_dump"], "ingest", "snapshot_year"),
    "lifespans": (["wikidata_dump"], "ingest", "snapshot_year"),
    "fact_intervals": (["claims", "lifespans"], "truth", "snapshot_year"),
    "truth": (["fact_intervals"], "truth", "snapshot_year"),
    "present_day": (["labels", "truth"], "truth", None),
    **{
        f"family_{family}": (
            ["fact_intervals", "labels", "lifespans", "present_day", "truth"],
            "chains",
            "snapshot_year",
        )
        for family in FAMILIES
    },
    "turns": (sorted([*(f"family_{f}" for f in FAMILIES), "chain_import"]), "chains", None),
    "chains": (["turns"], "chains", None),
    "benchmark_stats": (["chains", "turns"], "chains", None),
    "eval_sample": (["chains", "sample_settings", "turns"], "chains", None),
    "benchmark_jsonl": (["turns"], "chains", None),
    "benchmark_release": (
        ["benchmark_stats", "chains", "eval_sample", "metrics", "paraphrased_subset", "turns"],
        "chains",
        None,
    ),
    "predictions": (
        ["eval_sample", "labels", "model_entry", "truth", "turns"],
        "evaluation",
        "model x setting",
    ),
    "metrics": (["predictions"], "evaluation", "model x setting"),
    "paraphrased_subset": (
        ["eval_sample", "labels", "paraphrase_settings", "turns"],
        "paraphrase",
        None,
    ),
    "paraphrase_predictions": (
        ["model_entry", "paraphrased_subset", "turns"],
        "paraphrase",
        "model x setting",
    ),
    "paraphrase_metrics": (["paraphrase_predictions"], "paraphrase", "model x setting"),
    "leaderboard": (["metrics", "paraphrase_metrics"], "evaluation", None),
    "report": (["leaderboard"], "evaluation", None),
    "probe_corpus": (["probe_source"], "probe", None),
    "probe_runs": (["model_entry", "probe_corpus", "probe_run_settings"], "probe", "model"),
    "probe_report": (["probe_runs"], "probe", None),
}
EXPECTED_CHECKS = {
    ("claims", "claims_reconcile"),
    ("claims", "claims_well_formed"),
    ("claims", "claims_expectations"),
    ("labels", "labels_well_formed"),
    ("lifespans", "lifespans_well_formed"),
    ("fact_intervals", "fact_intervals_reconcile"),
    ("truth", "truth_values_hold_at_anchor"),
    ("truth", "truth_keys_and_canonical"),
    ("truth", "truth_deterministic"),
    ("truth", "truth_expectations"),
    ("present_day", "present_day_consistent"),
    ("turns", "turns_state_their_time"),
    ("turns", "turns_no_repeated_questions"),
    ("turns", "turns_families_score_their_kind"),
    ("benchmark_stats", "benchmark_stats_balanced"),
    ("benchmark_stats", "benchmark_stats_blind_at_chance"),
    ("eval_sample", "eval_sample_scope_dependent_turns"),
    ("turns", "turns_gold_valid_at_scope"),
    ("turns", "turns_golds_decided_by_facts"),
    ("turns", "turns_expectations"),
    ("chains", "chains_complete_and_unique"),
    ("chains", "chains_deterministic"),
    ("benchmark_release", "benchmark_release_matches_sources"),
    ("predictions", "predictions_one_per_turn"),
    ("predictions", "predictions_without_errors"),
    ("metrics", "metrics_reference_systems_behave"),
    ("metrics", "metrics_in_range_and_consistent"),
    ("paraphrased_subset", "paraphrases_pass_filter"),
    ("paraphrase_predictions", "predictions_one_per_turn"),
    ("paraphrase_predictions", "predictions_without_errors"),
    ("paraphrase_metrics", "metrics_reference_systems_behave"),
    ("paraphrase_metrics", "metrics_in_range_and_consistent"),
    ("probe_corpus", "probe_corpus_valid"),
    ("probe_runs", "probe_memory_stores_undated"),
}
NON_BLOCKING_CHECKS = {
    "predictions_without_errors",
    "benchmark_stats_balanced",
    "eval_sample_scope_dependent_turns",
}


def _partitions_name(partitions: dg.PartitionsDefinition | None) -> str | None:
    if isinstance(partitions, dg.MultiPartitionsDefinition):
        return " x ".join(partitions.partition_dimension_names)
    if isinstance(partitions, dg.DynamicPartitionsDefinition):
        return partitions.name
    if partitions is not None and partitions.get_partition_keys() == [
        "2022",
        "2023",
        "2024",
        "2025",
    ]:
        return "snapshot_year"
    return None if partitions is None else repr(partitions)


def test_asset_graph():
    graph = defs.resolve_asset_graph()
    found = {}
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        partitions = node.partitions_def
        found[key.to_user_string()] = (
            sorted(parent.to_user_string() for parent in node.parent_keys),
            node.group_name,
            _partitions_name(partitions),
        )  # fmt: skip
        assert node.description and len(node.description) > 40, f"{key} needs a description"
        assert node.owners, f"{key} needs an owner"
        assert node.code_version, f"{key} needs a code version"
    assert found == EXPECTED_ASSETS


def test_predictions_read_every_snapshot_a_knowledge_cutoff_may_fall_in():
    """A model's own present comes from the truth and labels of its cutoff's snapshot, so every
    snapshot of them feeds every predictions partition (a changed one makes them stale)."""
    node = defs.resolve_asset_graph().get(dg.AssetKey("predictions"))
    for upstream in ("truth", "labels"):
        mapping = node.partition_mappings.get(dg.AssetKey(upstream))
        assert isinstance(mapping, dg.AllPartitionMapping), upstream


def test_sources_are_observed():
    graph = defs.resolve_asset_graph()
    observable = {
        key.to_user_string(): _partitions_name(graph.get(key).partitions_def)
        for key in graph.observable_asset_keys
    }
    assert observable == EXPECTED_SOURCES
    assert all(graph.get(key).group_name == "sources" for key in graph.observable_asset_keys)


def test_checks_and_blocking():
    graph = defs.resolve_asset_graph()
    nodes = {
        (key.asset_key.to_user_string(), key.name): graph.get(key) for key in graph.asset_check_keys
    }
    assert set(nodes) == EXPECTED_CHECKS
    assert {name for (_, name), node in nodes.items() if not node.blocking} == NON_BLOCKING_CHECKS
    assert all(node.description for node in nodes.values())


def test_jobs():
    assert defs.resolve_job_def("chronoscope_main")
    ci = defs.resolve_job_def("ci_checks")
    assert isinstance(ci, dg.JobDefinition)


def test_the_setting_dimension_has_the_explicit_scope_control():
    assert setting_partitions.get_partition_keys() == [
        "gold_context",
        "self_conditioned",
        "questions_only",
        "explicit_scope",
    ]
