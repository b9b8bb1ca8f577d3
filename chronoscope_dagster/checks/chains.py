"""Checks of the chains stage: question form, gold validity, ids, coverage, determinism."""

import dagster as dg
from pydantic import Field

from chronoscope_dagster.chains.audit import (
    gold_mismatch_queries,
    timeless_outside_lifespan_sql,
    uncovered_sql,
    unsupported_sql,
)
from chronoscope_dagster.chains.families import FAMILIES
from chronoscope_dagster.chains.stats import (
    DEFAULT_PER_FAMILY,
    SCOPE_DEPENDENT_MINIMUM,
    balance_misses,
    missing_defining_kind_sql,
    repeated_questions_sql,
    sample_scope_turns_sql,
    scope_dependent_target,
)
from chronoscope_dagster.checks.expectations import (
    GE_SAMPLE_ROWS,
    suite_check_result,
    suite_per_snapshot,
)
from chronoscope_dagster.llm.blind import KINDS, MIN_MEASURED, bound_misses
from chronoscope_dagster.release import CARD_FILE, DATA_FOLDER, card_data_files
from chronoscope_dagster.sql import sql_list
from chronoscope_dagster.storage.chains import differing_by_year, refusals_by_reason
from chronoscope_dagster.storage.release import release_split_rows, source_split_rows
from chronoscope_dagster.warehouse import Warehouse
from chronoscope_dagster.wikidata.properties import default_catalog

DETERMINISM_SUBJECTS = 10_000
"""Root subjects whose chains the determinism check regenerates per snapshot, at most: every
subject of the sample (about 1,300), one shard of a larger snapshot. A whole rebuild of a
50k-entity dump takes as long as the families themselves; a full dump has 115M subjects."""
YEAR_PATTERN = r"\b(1[0-9]|20)[0-9][0-9]\b"


@dg.asset_check(
    asset="turns",
    blocking=True,
    description="Every explicit dated turn states its year (the first turn of each family whose "
    "first turn is explicit included); no implicit turn contains a year.",
)
def turns_state_their_time(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    with warehouse.connect(views=True) as connection:
        missing_year, implicit_with_year, first_implicit = connection.execute(
            f"""SELECT
                count_if(is_explicit AND scope_year IS NOT NULL
                         AND NOT contains(question, CAST(scope_year AS VARCHAR))),
                count_if(NOT is_explicit AND regexp_matches(question, '{YEAR_PATTERN}')),
                count_if(turn_index = 0 AND NOT is_explicit)
            FROM turns"""
        ).fetchone()
    return dg.AssetCheckResult(
        passed=missing_year == 0 and implicit_with_year == 0 and first_implicit == 0,
        metadata={
            "explicit_turns_without_their_year": missing_year,
            "implicit_turns_with_a_year": implicit_with_year,
            "first_turns_implicit": first_implicit,
        },
    )


@dg.asset_check(
    asset="turns",
    blocking=True,
    description="No question repeats within a chain (case and outer spaces aside).",
)
def turns_no_repeated_questions(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    with warehouse.connect(views=True) as connection:
        repeated = connection.execute(repeated_questions_sql("turns")).fetchall()
    by_family: dict[str, int] = {}
    for family, *_ in repeated:
        by_family[family] = by_family.get(family, 0) + 1
    return dg.AssetCheckResult(
        passed=not repeated,
        metadata={
            "repeated_questions": len(repeated),
            "by_family": dg.MetadataValue.json(by_family),
            "examples": dg.MetadataValue.json(
                [{"chain_id": c, "turn_index": i, "question": q} for _, c, i, q in repeated[:10]]
            ),
        },
    )


@dg.asset_check(
    asset="turns",
    blocking=True,
    description="Every family has a scored turn of the answer kind it exists to ask (yes/no for "
    "interval reasoning and interval change, a count for distinct count, an entity otherwise).",
)
def turns_families_score_their_kind(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    with warehouse.connect(views=True) as connection:
        missing = connection.execute(missing_defining_kind_sql("turns", FAMILIES)).fetchall()
    return dg.AssetCheckResult(
        passed=not missing,
        metadata={"families_without_their_kind": dg.MetadataValue.json(dict(missing))},
    )


@dg.asset_check(
    asset="benchmark_stats",
    blocking=False,
    description="The validity targets: 35-65% yes per family with yes/no turns, the modal count "
    "under half of a family's counts, at least 70% of scored implicit turns drift-eligible and "
    "a copy-previous ceiling of at most 25% overall (a warning: the sample may miss them).",
)
def benchmark_stats_balanced(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    with warehouse.connect(views=True) as connection:
        cursor = connection.execute("SELECT * FROM benchmark_stats")
        columns = [column[0] for column in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    misses = balance_misses(rows)
    return dg.AssetCheckResult(
        passed=not misses,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"misses": dg.MetadataValue.json(misses)},
    )


@dg.asset_check(
    asset="benchmark_stats",
    blocking=True,
    description="No knowledge-free strategy beats chance: the blind reference system (structure "
    "and earlier answers only, trained on other subjects' chains) answers at most 25% of a "
    "family's entity turns, 60% of its yes/no turns and its modal count's share + 10 points "
    f"of its count turns (figures of at least {MIN_MEASURED} turns; smaller ones are listed).",
)
def benchmark_stats_blind_at_chance(
    warehouse: dg.ResourceParam[Warehouse],
) -> dg.AssetCheckResult:
    with warehouse.connect(views=True) as connection:
        cursor = connection.execute("SELECT * FROM benchmark_stats")
        columns = [column[0] for column in cursor.description]
        figures = {row[0]: dict(zip(columns, row, strict=True)) for row in cursor.fetchall()}
    misses = bound_misses(figures)
    unmeasured = {
        family: {kind: row[f"blind_{kind}_turns"] for kind in KINDS if row[f"blind_{kind}_turns"]}
        for family, row in figures.items()
        if family != "overall"
        and any(0 < (row[f"blind_{kind}_turns"] or 0) < MIN_MEASURED for kind in KINDS)
    }
    return dg.AssetCheckResult(
        passed=not misses,
        metadata={
            "over_bounds": dg.MetadataValue.json(misses),
            "too_few_to_hold": dg.MetadataValue.json(unmeasured),
        },
    )


@dg.asset_check(
    asset="eval_sample",
    blocking=False,
    description="The evaluation sample holds enough scope-dependent scored turns for the "
    f"headline scope_acc_at1: {SCOPE_DEPENDENT_MINIMUM} at the default size "
    f"({DEFAULT_PER_FAMILY} chains a family), its share at a smaller one (a warning: the "
    "benchmark may not have the chains, or the 20% family cap may cut them).",
)
def eval_sample_scope_dependent_turns(
    warehouse: dg.ResourceParam[Warehouse],
) -> dg.AssetCheckResult:
    try:
        per_family = int(warehouse.read_report("eval_sample")["per_stratum"])
    except FileNotFoundError:
        per_family = DEFAULT_PER_FAMILY
    target = scope_dependent_target(per_family)
    with warehouse.connect(views=True) as connection:
        by_family = dict(
            connection.execute(sample_scope_turns_sql("eval_sample", "turns")).fetchall()
        )
    found = sum(by_family.values())
    return dg.AssetCheckResult(
        passed=found >= target,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "scope_dependent_turns": found,
            "wanted": target,
            "per_stratum": per_family,
            "by_family": dg.MetadataValue.json(by_family),
        },
    )


@dg.asset_check(
    asset="turns",
    blocking=True,
    description="Recomputed from truth: every entity turn's gold set is exactly the set of values "
    "valid at the turn's time scope (its anchor, or the timeless facts), less the values only "
    "timeless statements support where the scope lies outside the subject's lifespan.",
)
def turns_gold_valid_at_scope(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    checked = wrong = 0
    with warehouse.connect(views=True) as connection:
        for query in gold_mismatch_queries(
            connection, "turns", "truth", "fact_intervals", "lifespans"
        ):
            found, mismatched = connection.execute(query).fetchone()
            checked, wrong = checked + found, wrong + mismatched
    return dg.AssetCheckResult(
        passed=checked > 0 and wrong == 0,
        metadata={"entity_turns_checked": checked, "gold_not_valid_at_scope": wrong},
    )


@dg.asset_check(
    asset="turns",
    blocking=True,
    description="Recomputed from fact_intervals and lifespans, apart from the generator: every "
    "gold value rests on a statement known to hold in its turn's scope (a statement with no "
    "known start, or one that ended at an unknown date, decides nothing there), and every "
    "'yes' to a value held throughout a span on its statements covering every day of it; "
    "every entity or count turn of a single-holder property has its scope (clipped to the "
    "subject's lifespan and the snapshot) covered with no gap over 31 days; no gold value that "
    "only timeless statements support is asked outside its subject's or its own lifespan; no "
    "count is asked of an open-ended property. The metadata gives the scopes the generator "
    "refused, by reason.",
)
def turns_golds_decided_by_facts(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    functional = sorted(default_catalog().functional_pids)
    refused = refusals_by_reason(warehouse)
    with warehouse.connect(views=True) as connection:
        unsupported = connection.execute(
            f"""SELECT t.chain_id, t.turn_index, t.question, u.value_qid
                FROM ({unsupported_sql("turns", "fact_intervals", "lifespans")}) u
                JOIN turns t USING (chain_id, turn_index) ORDER BY ALL"""
        ).fetchall()
        uncovered = connection.execute(
            f"""SELECT t.chain_id, t.turn_index, t.question, u.longest_gap
                FROM ({uncovered_sql("turns", "fact_intervals", "lifespans", functional)}) u
                JOIN turns t USING (chain_id, turn_index) ORDER BY ALL"""
        ).fetchall()
        outside = connection.execute(
            f"""SELECT t.chain_id, t.turn_index, t.question, o.value_qid
                FROM ({timeless_outside_lifespan_sql("turns", "fact_intervals", "lifespans")}) o
                JOIN turns t USING (chain_id, turn_index) ORDER BY ALL"""
        ).fetchall()
        open_counts, checked = connection.execute(
            f"""SELECT count_if(answer_kind = 'count' AND pid NOT IN ({sql_list(functional)})),
                       count(*)
                FROM turns"""
        ).fetchone()
    return dg.AssetCheckResult(
        passed=checked > 0
        and not unsupported
        and not uncovered
        and not outside
        and open_counts == 0,
        metadata={
            "turns_checked": checked,
            "golds_not_known_to_hold": len(unsupported),
            "single_holder_scopes_not_covered": len(uncovered),
            "timeless_golds_outside_lifespan": len(outside),
            "counts_of_open_ended_properties": open_counts,
            "scopes_refused_by_reason": dg.MetadataValue.json(refused),
            "examples": dg.MetadataValue.json(
                [list(map(str, row)) for row in (unsupported[:5] + uncovered[:5] + outside[:5])]
            ),
        },
    )


@dg.asset_check(
    asset="chains",
    blocking=True,
    description="Chain ids are unique, each chain's turns are numbered 0..n-1, and every family "
    "of the paper's Table 2 has chains.",
)
def chains_complete_and_unique(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    with warehouse.connect(views=True) as connection:
        duplicate_ids = connection.execute(
            "SELECT count(*) - count(DISTINCT chain_id) FROM chains"
        ).fetchone()[0]
        bad_numbering = connection.execute(
            """SELECT count(*) FROM (
                SELECT chain_id FROM turns GROUP BY chain_id
                HAVING max(turn_index) + 1 <> count(*) OR count(DISTINCT turn_index) <> count(*))"""
        ).fetchone()[0]
        families = {
            f for (f,) in connection.execute("SELECT DISTINCT family FROM chains").fetchall()
        }
    empty = sorted(set(FAMILIES) - families)
    return dg.AssetCheckResult(
        passed=duplicate_ids == 0 and bad_numbering == 0 and not empty,
        metadata={
            "duplicate_chain_ids": duplicate_ids,
            "chains_with_bad_turn_numbers": bad_numbering,
            "empty_families": empty,
        },
    )


class DeterminismConfig(dg.Config):
    subjects_per_check: int = Field(
        default=DETERMINISM_SUBJECTS,
        ge=1,
        description="Regenerate the chains of at most this many root subjects per snapshot: "
        "every chain where the snapshot has no more (the sample and CI), else those rooted in "
        "one shard of about that many.",
    )
    shard: int = Field(
        default=0, ge=0, description="Which shard to regenerate where the snapshot is split."
    )


@dg.asset_check(
    asset="chains",
    blocking=True,
    description="Generating every family again with the same seed gives the same chains, turn "
    "for turn (generation is deterministic); on a snapshot of more root subjects than the "
    "check's bound, the chains rooted in one shard of its subjects.",
)
def chains_deterministic(
    config: DeterminismConfig, warehouse: dg.ResourceParam[Warehouse]
) -> dg.AssetCheckResult:
    years = sorted({p["snapshot_year"] for p in warehouse.partitions("family_carryover")})
    compared = differing_by_year(warehouse, years, config.subjects_per_check, config.shard)
    differing = [
        f"{family}[{year}]" for year, (_, families) in compared.items() for family in families
    ]
    checked = {
        year: "all" if shard.count == 1 else f"shard {shard.index} of {shard.count}"
        for year, (shard, _) in compared.items()
    }
    return dg.AssetCheckResult(
        passed=not differing,
        metadata={"differing": differing, "subjects_regenerated": dg.MetadataValue.json(checked)},
    )


TURNS_EXPECTATIONS = {
    "question_is_a_question": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="question", regex=r"^[A-Z].*\?$"
    ),
    "answer_not_null": lambda gxe: gxe.ExpectColumnValuesToNotBeNull(column="answer"),
    "answer_kind_in_set": lambda gxe: gxe.ExpectColumnValuesToBeInSet(
        column="answer_kind", value_set=["entity", "yes_no", "count"]
    ),
    "family_in_set": lambda gxe: gxe.ExpectColumnValuesToBeInSet(
        column="family", value_set=list(FAMILIES)
    ),
    "pid_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="pid", regex="^P[1-9][0-9]*$"
    ),
    "subject_qid_format": lambda gxe: gxe.ExpectColumnValuesToMatchRegex(
        column="subject_qid", regex="^Q[1-9][0-9]*$"
    ),
    "chain_length_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="chain_length", min_value=2, max_value=11
    ),
    "turn_index_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="turn_index", min_value=0, max_value=10
    ),
    "scope_year_in_range": lambda gxe: gxe.ExpectColumnValuesToBeBetween(
        column="scope_year", min_value=1950, max_value=2025
    ),
    "has_rows": lambda gxe: gxe.ExpectTableRowCountToBeBetween(min_value=1),
}


@dg.asset_check(
    asset="turns",
    blocking=True,
    description="Great-expectations suite on turns (question form, value sets, ranges), on a "
    f"seeded sample of at most {GE_SAMPLE_ROWS:,} rows per snapshot year.",
)
def turns_expectations(warehouse: dg.ResourceParam[Warehouse]) -> dg.AssetCheckResult:
    columns = ["question", "answer", "answer_kind", "family", "pid", "subject_qid",
               "chain_length", "turn_index", "scope_year"]  # fmt: skip
    with warehouse.connect(views=True) as connection:
        years = [str(y) for (y,) in connection.execute(
            "SELECT DISTINCT snapshot_year FROM turns ORDER BY 1").fetchall()]  # fmt: skip
        rows, failures = suite_per_snapshot(connection, "turns", columns, years, TURNS_EXPECTATIONS)
    return suite_check_result(years, rows, failures)


@dg.asset_check(
    asset="benchmark_release",
    blocking=True,
    description="Each split file holds the rows of its source, counted apart from the release: "
    "full every turn of turns, eval_sample and self_conditioned the turns of the evaluation "
    "sample's chains and of its self-conditioned ones, paraphrased the turns of the "
    "paraphrased subset's kept chains (a split without rows has no file); the card's configs "
    "name exactly the split files written. A release older than a source it counts fails "
    "until it is built again.",
)
def benchmark_release_matches_sources(
    warehouse: dg.ResourceParam[Warehouse],
) -> dg.AssetCheckResult:
    folder = warehouse.partition_dir("benchmark_release")
    written = release_split_rows(folder)
    expected = source_split_rows(warehouse)
    card = card_data_files((folder / CARD_FILE).read_text(encoding="utf-8"))
    in_card = {split: path.removeprefix(f"{DATA_FOLDER}/") for split, path in card.items()}
    return dg.AssetCheckResult(
        passed=written == expected and set(in_card) == set(written),
        metadata={
            "split_rows": dg.MetadataValue.json(written),
            "source_rows": dg.MetadataValue.json(expected),
            "card_splits": dg.MetadataValue.json(sorted(in_card)),
        },
    )
