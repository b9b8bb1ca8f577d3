"""Knowledge-free and scope-free strategies against a home's benchmark, scored as models are.

    python benchmarks/adversaries.py --home .chronoscope [--all-chains]

Each strategy answers every scored turn of the evaluation sample (or, with --all-chains, of
every chain) in gold context from what the conversation shows, and is scored by the project's
own matcher in relaxed mode. Printed per strategy: Acc@1 overall and per answer kind, and the
headline ``scope_acc_at1`` (scope-dependent scored turns), each with its n.

* ``hedge_all``: every earlier answer of the conversation, then "yes", "no" and 0-9, in one
  reply ("Bill Clinton, Donald Trump, yes, no, 0, 1, ...");
* ``copy_previous``: the previous answer;
* ``first_answer``: turn 1's answer;
* ``majority``: the most frequent answer of the same family, turn position and answer kind
  over the other chains (leave-one-chain-out);
* ``yes`` / ``no``: always that word;
* ``latest_of_property``: the conversation's last answer to a question about the same
  property, else the previous answer.

A valid benchmark holds them near chance; the blind reference system (``llm/blind.py``,
``benchmark_stats``) is the learnt version of them all.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable

import pyarrow as pa

from chronoscope_dagster.evaluation.scoring import score_turns
from chronoscope_dagster.warehouse import Warehouse, parquet_source

DIGITS = [str(n) for n in range(10)]
Rows = list[dict]


def hedge_all(chain: Rows, index: int, _: Counter) -> str:
    return ", ".join([row["answer"] for row in chain[:index]] + ["yes", "no", *DIGITS])


def copy_previous(chain: Rows, index: int, _: Counter) -> str:
    return chain[index - 1]["answer"]


def first_answer(chain: Rows, index: int, _: Counter) -> str:
    return chain[0]["answer"]


def majority(chain: Rows, index: int, answers: Counter) -> str:
    """``answers``: the answers of the turns of the same family, position and kind."""
    found = answers - Counter({chain[index]["answer"]: 1})
    return found.most_common(1)[0][0] if found else ""


def latest_of_property(chain: Rows, index: int, _: Counter) -> str:
    pid = chain[index]["pid"]
    same = [row["answer"] for row in chain[:index] if row["pid"] == pid]
    return same[-1] if same else chain[index - 1]["answer"]


STRATEGIES: dict[str, Callable[[Rows, int, Counter], str]] = {
    "hedge_all": hedge_all,
    "copy_previous": copy_previous,
    "first_answer": first_answer,
    "majority": majority,
    "yes": lambda chain, index, _: "yes",
    "no": lambda chain, index, _: "no",
    "latest_of_property": latest_of_property,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default=".chronoscope")
    parser.add_argument("--all-chains", action="store_true")
    args = parser.parse_args()
    warehouse = Warehouse(args.home)
    turns = parquet_source(warehouse.data_path("turns"))
    sample = (
        ""
        if args.all_chains
        else f"WHERE chain_id IN (SELECT chain_id FROM {parquet_source(warehouse.data_path('eval_sample'))})"
    )
    with warehouse.connect() as connection:
        rows = (
            connection.sql(f"SELECT * FROM {turns} {sample} ORDER BY chain_id, turn_index")
            .to_arrow_table()
            .to_pylist()
        )
    chains: dict[str, Rows] = {}
    for row in rows:
        chains.setdefault(row["chain_id"], []).append(row)
    counts: dict[tuple, Counter] = {}
    for chain in chains.values():
        for row in chain[1:]:
            key = (row["family"], row["turn_index"], row["answer_kind"])
            counts.setdefault(key, Counter())[row["answer"]] += 1
    scored = [(chain, index) for chain in chains.values() for index in range(1, len(chain))]
    print(f"{len(chains):,} chains, {len(scored):,} scored turns")
    for name, strategy in STRATEGIES.items():
        table = pa.Table.from_pylist(
            [
                {
                    "prediction": strategy(chain, index, counts.get(_key(chain[index]), Counter())),
                    "candidates": [],
                    **{
                        column: chain[index][column]
                        for column in ("answer", "gold_labels", "gold_aliases", "present_labels",
                                       "drift_eligible", "answer_kind", "rival_labels",
                                       "scope_dependent")
                    },
                }
                for chain, index in scored
            ]
        )  # fmt: skip
        result = score_turns(table, "relaxed").to_pylist()
        print(f"{name:20s}", _figure(result, lambda r: True, "acc"), end="")
        for kind in ("entity", "yes_no", "count"):
            print(" ", _figure(result, lambda r, k=kind: r["answer_kind"] == k, kind), end="")
        print(" ", _figure(result, lambda r: r["scope_dependent"], "scope_acc"))


def _key(row: dict) -> tuple:
    return (row["family"], row["turn_index"], row["answer_kind"])


def _figure(result: list[dict], where: Callable[[dict], bool], name: str) -> str:
    chosen = [row for row in result if where(row)]
    if not chosen:
        return f"{name} -"
    right = sum(row["correct_at1"] for row in chosen)
    return f"{name} {right / len(chosen):.3f} (n={len(chosen)})"


if __name__ == "__main__":
    main()
