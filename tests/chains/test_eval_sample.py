"""The evaluation sample: families weigh equally, lengths take turns, no family above 20%, and
chains with scope-dependent scored turns are preferred and drawn until the headline has its n."""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest

from chronoscope_dagster.chains.stats import (
    MAX_FAMILY_SHARE,
    SCOPE_DEPENDENT_MINIMUM,
    eval_sample_sql,
    scope_dependent_target,
)

SHORT = ("a", "b", "c", "d", "e", "f")
"""Families of two-turn chains (one scored turn each)."""


def _connection(
    rows: list[tuple[str, str, int]], scope: dict[str, int] | None = None
) -> duckdb.DuckDBPyConnection:
    """``chains`` of ``rows`` and their ``turns``: the first ``scope[chain_id]`` scored turns
    of a chain are scope-dependent, none by default."""
    random.Random(0).shuffle(rows)
    connection = duckdb.connect()
    connection.execute("CREATE TABLE chains (chain_id VARCHAR, family VARCHAR, length INTEGER)")
    connection.executemany("INSERT INTO chains VALUES (?, ?, ?)", rows)
    connection.execute(
        "CREATE TABLE turns (chain_id VARCHAR, turn_index INTEGER, scope_dependent BOOLEAN)"
    )
    scope = scope or {}
    connection.executemany(
        "INSERT INTO turns VALUES (?, ?, ?)",
        [
            (chain_id, index, 1 <= index <= scope.get(chain_id, 0))
            for chain_id, _, length in rows
            for index in range(length)
        ],
    )
    return connection


@pytest.fixture(scope="module")
def connection() -> duckdb.DuckDBPyConnection:
    rows = [(f"{family}-{i}", family, 2) for family in SHORT for i in range(30)]
    rows += [(f"few-{i}", "few", 3) for i in range(2)]  # fewer chains than asked for
    # a narrative-like family: nine lengths, up to nine scored turns a chain
    rows += [(f"long{length}-{i}", "long", length) for length in range(2, 11) for i in range(6)]
    return _connection(rows)


def _sample(
    connection, per_family: int, self_per_family: int, seed: int = 7, scope_target=None
) -> list[dict]:
    cursor = connection.execute(
        eval_sample_sql(
            "chains", "turns", per_family, self_per_family, seed, scope_target=scope_target
        )
    )
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


def test_the_scope_target_is_the_minimum_at_the_default_size_and_its_share_below():
    assert scope_dependent_target(8) == SCOPE_DEPENDENT_MINIMUM == 150
    assert [scope_dependent_target(n) for n in (0, 1, 4, 7, 500)] == [0, 19, 75, 132, 150]


def test_within_a_length_chains_with_more_scope_dependent_turns_come_first():
    rows = [(f"m3-{i}", "m", 3) for i in range(6)] + [(f"m4-{i}", "m", 4) for i in range(6)]
    scope = {"m3-1": 1, "m3-4": 2, "m4-0": 1, "m4-2": 3, "m4-5": 1}
    rows += [(f"s{f:02d}-{i}", f"s{f:02d}", 2) for f in range(20) for i in range(6)]
    sample = _sample(_connection(rows, scope), 6, 0, scope_target=0)
    chosen = [r for r in sample if r["family"] == "m"]
    assert [(r["length"], r["scope_dependent_turns"]) for r in chosen] == [
        (3, 2), (4, 3), (3, 1), (4, 1), (3, 0), (4, 1),
    ], "lengths take turns; within a length, most scope-dependent turns first"  # fmt: skip
    assert [r["chain_id"] for r in chosen[:3]] == ["m3-4", "m4-2", "m3-1"]
    assert {chosen[3]["chain_id"], chosen[5]["chain_id"]} == {"m4-0", "m4-5"}
    assert not any(r["for_scope"] for r in sample)


def _scope_connection() -> duckdb.DuckDBPyConnection:
    """Ten families of 40 one-question chains; in f0-f4 every chain's scored turn is
    scope-dependent, in f5-f9 none is."""
    rows = [(f"f{f}-{i:02d}", f"f{f}", 2) for f in range(10) for i in range(40)]
    return _connection(rows, {chain_id: 1 for chain_id, family, _ in rows if family < "f5"})


def test_chains_are_drawn_for_their_scope_until_the_target_families_taking_turns():
    rows = _sample(_scope_connection(), 1, 1)
    target = scope_dependent_target(1)
    assert sum(r["scope_dependent_turns"] for r in rows) == target == 19
    chains = Counter(r["family"] for r in rows)
    assert chains == {
        **{f"f{f}": 4 for f in range(4)},
        "f4": 3,
        **{f"f{f}": 1 for f in range(5, 10)},
    }
    extra = [r for r in rows if r["for_scope"]]
    assert len(extra) == target - 5 and all(r["family_rank"] > 1 for r in extra)
    assert all(r["scope_dependent_turns"] == 1 for r in extra)
    assert max(_scored_share(rows).values()) <= MAX_FAMILY_SHARE
    subset = [r for r in rows if r["in_self_conditioned"]]
    assert Counter(r["family"] for r in subset) == {f"f{f}": 1 for f in range(10)}
    assert not any(r["for_scope"] for r in subset), "the subset takes its first chains"
    assert rows == _sample(_scope_connection(), 1, 1)


def test_the_cheapest_chains_are_drawn_for_their_scope():
    """Fewest scored turns per scope-dependent one first: a one-question chain whose question
    needs its scope before a longer chain with more such questions."""
    rows = [(f"s{f:02d}-{i}", f"s{f:02d}", 2) for f in range(50) for i in range(2)]
    rows += [(f"a_rich-{i}", "a_rich", 6) for i in range(3)]
    rows += [(f"z_dense-{i}", "z_dense", 2) for i in range(3)]
    scope = {f"a_rich-{i}": 3 for i in range(3)} | {f"z_dense-{i}": 1 for i in range(3)}
    connection = _connection(rows, scope)
    base = sum(r["scope_dependent_turns"] for r in _sample(connection, 1, 0, scope_target=0))
    assert base == 4
    sample = _sample(connection, 1, 0, scope_target=6)
    assert Counter(r["family"] for r in sample if r["for_scope"]) == {"z_dense": 2}
    assert sum(r["scope_dependent_turns"] for r in sample) == 6
    sample = _sample(connection, 1, 0, scope_target=7)
    assert Counter(r["family"] for r in sample if r["for_scope"]) == {"z_dense": 2, "a_rich": 1}


def test_the_family_cap_wins_over_the_scope_target():
    rows = [(f"{f}-{i}", f, 2) for f in SHORT for i in range(30)]
    scope = {f"a-{i}": 1 for i in range(30)}
    sample = _sample(_connection(rows, scope), 4, 2)
    assert max(_scored_share(sample).values()) <= MAX_FAMILY_SHARE
    assert Counter(r["family"] for r in sample)["a"] == 5, "a fifth of 25 scored turns"
    assert sum(r["scope_dependent_turns"] for r in sample) < scope_dependent_target(4)
