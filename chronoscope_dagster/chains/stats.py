"""Table 2 recomputed, and the stratified evaluation sample, in DuckDB SQL."""

from __future__ import annotations

import yaml

from chronoscope_dagster.data import DATA_DIR

STATS_COLUMNS = ("chains", "median_length", "max_length", "mean_scope_shifts", "implicit_pct",
                 "median_span")  # fmt: skip


def benchmark_stats_sql(chains: str, turns: str) -> str:
    """Per family: count, median and max length, mean scope shifts, % implicit turns, median span."""
    return f"""
    WITH implicit AS (
        SELECT family, 100.0 * avg(CASE WHEN is_explicit THEN 0 ELSE 1 END) AS implicit_pct
        FROM {turns} GROUP BY family
    )
    SELECT c.family, count(*) AS chains, median(length) AS median_length, max(length) AS max_length,
           round(avg(scope_shifts), 2) AS mean_scope_shifts, round(any_value(i.implicit_pct), 1)
               AS implicit_pct, median(span_years) AS median_span
    FROM {chains} c JOIN implicit i USING (family)
    GROUP BY c.family ORDER BY c.family
    """


def paper_table2() -> dict[str, dict[str, float]]:
    return yaml.safe_load((DATA_DIR / "paper_table2.yaml").read_text())["families"]


def eval_sample_sql(chains: str, per_stratum: int, self_per_stratum: int, seed: int) -> str:
    """Up to ``per_stratum`` chains per (family, length), chosen by a seeded hash of the id; the
    self-conditioned subset is the first ``self_per_stratum`` of each stratum's choice, so it is
    stratified the same way, not a prefix of the whole sample."""
    return f"""
    WITH ranked AS (
        SELECT chain_id, family, length,
               row_number() OVER (PARTITION BY family, length
                                  ORDER BY sha256('{int(seed)}:' || chain_id)) AS stratum_rank
        FROM {chains}
    )
    SELECT chain_id, family, length, stratum_rank,
           stratum_rank <= {int(self_per_stratum)} AS in_self_conditioned
    FROM ranked WHERE stratum_rank <= {int(per_stratum)}
    ORDER BY family, length, stratum_rank
    """
