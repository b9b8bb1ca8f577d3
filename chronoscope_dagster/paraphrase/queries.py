"""What the paraphrase stage reads from a home: the stratified choice of chains, their turns
and labels, and the kept chains' turns as templated and as paraphrased."""

from __future__ import annotations

import pyarrow as pa

from chronoscope_dagster.warehouse import Warehouse, parquet_source

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


def turns_and_labels(warehouse: Warehouse, chain_ids: str) -> tuple[pa.Table, pa.Table]:
    """The turns of the chains ``chain_ids`` (SQL of a ``chain_id`` column) and the labels,
    of every snapshot, of every entity they refer to."""
    with warehouse.connect() as connection:
        turns = connection.sql(
            f"""SELECT t.* FROM {parquet_source(warehouse.data_path("turns"))} t
                SEMI JOIN ({chain_ids}) c USING (chain_id)
                ORDER BY t.chain_id, t.turn_index"""
        ).to_arrow_table()
        connection.register("chosen", turns)
        labels = connection.sql(
            f"""WITH wanted AS (
                    SELECT subject_qid AS qid FROM chosen
                    UNION SELECT asked_qid FROM chosen
                    UNION SELECT unnest(gold_qids) FROM chosen
                    UNION SELECT unnest(present_qids) FROM chosen)
                SELECT qid, snapshot_year, label, aliases
                FROM ({warehouse.view_sql("labels")}) SEMI JOIN wanted USING (qid)
                ORDER BY qid, snapshot_year"""
        ).to_arrow_table()
    return turns, labels


def variant_turns_sql(warehouse: Warehouse, variant: str) -> str:
    """The turns of the kept chains, with the paraphrase as the question in ``paraphrased``;
    the columns of ``evaluation.queries.sample_turns_sql``."""
    question = {"original": "t.question", "paraphrased": "p.paraphrase"}[variant]
    return f"""
        SELECT t.chain_id, t.turn_index, {question} AS question, t.answer, t.present_labels,
               t.is_explicit, t.explicit_question
        FROM {parquet_source(warehouse.data_path("turns"))} t
        JOIN {parquet_source(warehouse.data_path("paraphrased_subset"))} p
            USING (chain_id, turn_index)
        WHERE p.chain_kept
        ORDER BY t.chain_id, t.turn_index"""
