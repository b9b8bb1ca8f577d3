"""Where the paraphrase stage reads in a home: the chosen chains' turns and labels, and the
kept chains' turns a model answers."""

from __future__ import annotations

import pyarrow as pa

from chronoscope_dagster.paraphrase.queries import variant_turns_sql
from chronoscope_dagster.warehouse import Warehouse, parquet_source


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


def variant_turns(warehouse: Warehouse, variant: str) -> pa.Table:
    """The turns of the home's kept paraphrased chains in ``variant`` (``variant_turns_sql``)."""
    sql = variant_turns_sql(
        parquet_source(warehouse.data_path("turns")),
        parquet_source(warehouse.data_path("paraphrased_subset")),
        variant,
    )
    with warehouse.connect() as connection:
        return connection.sql(sql).to_arrow_table()
