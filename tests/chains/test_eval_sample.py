"""The evaluation sample: families weigh equally, lengths take turns, no family above 20%."""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest

from chronoscope_dagster.chains.stats import MAX_FAMILY_SHARE, eval_sample_sql

SHORT = ("a", "b", "c", "d", "e", "f")
"""Families of two-turn chains (one scored turn each)."""


def _connection(rows: list[tuple[str, str, int]]) -> duckdb.DuckDBPyConnection:
    random.Random(0).shuffle(rows)
    connection = duckdb.connect()
    connection.execute("CREATE TABLE chains (chain_id VARCHAR, family VARCHAR, length INTEGER)")
    connection.executemany("INSERT INTO chains VALUES (?, ?, ?)", rows)
    return connection


@pytest.fixture(scope="module")
def connection() -> duckdb.DuckDBPyConnection:
    rows = [(f"{family}-{i}", family, 2) for family in SHORT for i in range(30)]
    rows += [(f"few-{i}", "few", 3) for i in range(2)]  # fewer chains than asked for
    # a narrative-like family: nine lengths, up to nine scored turns a chain
    rows += [(f"long{length}-{i}", "long", length) for length in range(2, 11) for i in range(6)]
    return _connection(rows)


def _sample(connection, per_family: int, self_per_family: int, seed: int = 7) -> list[dict]:
    cursor = connection.execute(eval_sample_sql("chains", per_family, self_per_family, seed))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _scored_share(rows: list[dict]) -> dict[str, float]:
    turns = Counter()
    for row in rows:
        turns[row["family"]] += row["length"] - 1
    return {family: n / sum(turns.values()) for family, n in turns.items()}


def test_families_get_equal_chains_and_none_supplies_more_than_a_fifth(connection):
    for per_family, self_per_family in [(4, 2), (8, 4), (20, 10)]:
        rows = _sample(connection, per_family, self_per_family)
        chains = Counter(r["family"] for r in rows)
        assert all(chains[f] == per_family for f in SHORT), chains
        assert chains["few"] == 2, "a family with fewer chains gives all it has"
        assert 1 <= chains["long"] < per_family, "the long family is cut, not dropped"
        subset = [r for r in rows if r["in_self_conditioned"]]
        assert all(Counter(r["family"] for r in subset)[f] == self_per_family for f in SHORT)
        for part in (rows, subset):
            assert max(_scored_share(part).values()) <= MAX_FAMILY_SHARE
        assert all(r["scored_turns"] == r["length"] - 1 for r in rows)


def test_lengths_take_turns_and_the_hash_decides_within_a_length(connection):
    rows = _sample(connection, 30, 0)
    long = [r for r in rows if r["family"] == "long"]
    assert [r["family_rank"] for r in long] == list(range(1, len(long) + 1))
    assert [r["length"] for r in long][:3] == [2, 3, 4], "every length once before a second"
    assert all(r["stratum_rank"] == 1 for r in long[:3])
    unlimited = _sample(connection, 10**6, 0, seed=7)
    for family in SHORT:
        first = [r["chain_id"] for r in unlimited if r["family"] == family][:30]
        ranked = connection.execute(
            "SELECT chain_id FROM chains WHERE family = ? ORDER BY sha256('7:' || chain_id)",
            [family],
        ).fetchall()
        assert first == [c for (c,) in ranked]


def test_the_sample_is_deterministic_nested_and_seeded(connection):
    rows = _sample(connection, 8, 4)
    assert rows == _sample(connection, 8, 4)
    assert {r["chain_id"] for r in rows if r["in_self_conditioned"]} < {r["chain_id"] for r in rows}
    assert rows != _sample(connection, 8, 4, seed=8)
    assert not any(r["in_self_conditioned"] for r in _sample(connection, 8, 0))


def test_with_too_few_families_no_cap_applies():
    rows = [(f"{f}-{i}", f, 2) for f in ("a", "b") for i in range(5)]
    rows += [(f"long-{i}", "long", 9) for i in range(5)]
    sample = _sample(_connection(rows), 3, 1)
    assert Counter(r["family"] for r in sample) == {"a": 3, "b": 3, "long": 3}
