"""What the paraphrase stage reads, as SQL over sources the caller names: the stratified choice
of chains, and the kept chains' turns as templated and as paraphrased."""

from __future__ import annotations

VARIANTS = ("original", "paraphrased")
"""The two conditions of Table 5 ("Orig", "Para"), evaluated on the same kept chains."""


def subset_sql(chains: str, size: int, seed: int) -> str:
    """About ``size`` chains (exactly, if there are that many) spread evenly over the (family,
    length) strata: within a stratum chains are ranked by a seeded hash of the id, and
    strata take turns, rank by rank (the order of strata in the last round also by seeded
    hash), so every stratum gets its share or all its chains if it has fewer. A larger size
    only adds chains."""
    return f"""
    WITH ranked AS (
        SELECT chain_id, family, length,
               row_number() OVER (PARTITION BY family, length
                                  ORDER BY sha256('{int(seed)}:' || chain_id), chain_id)
                   AS stratum_rank
        FROM {chains}
    ), ordered AS (
        SELECT *, row_number() OVER (
                      ORDER BY stratum_rank,
                               sha256('{int(seed)}:' || family || ':' || CAST(length AS VARCHAR)),
                               family, length) AS pick
        FROM ranked
    )
    SELECT chain_id, family, length, stratum_rank
    FROM ordered WHERE pick <= {int(size)}
    ORDER BY family, length, stratum_rank
    """


def variant_turns_sql(turns: str, paraphrases: str, variant: str) -> str:
    """The turns of the kept chains, from the SQL ``turns`` (the benchmark's) and
    ``paraphrases`` (the paraphrased subset's), with the paraphrase as the question in
    ``paraphrased``; the columns of ``evaluation.queries.sample_turns_sql``."""
    question = {"original": "t.question", "paraphrased": "p.paraphrase"}[variant]
    return f"""
        SELECT t.chain_id, t.turn_index, {question} AS question, t.answer, t.present_labels,
               t.is_explicit, t.explicit_question
        FROM {turns} t
        JOIN {paraphrases} p
            USING (chain_id, turn_index)
        WHERE p.chain_kept
        ORDER BY t.chain_id, t.turn_index"""
