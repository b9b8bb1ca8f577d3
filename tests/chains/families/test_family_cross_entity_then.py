"""Cross-entity then: the same property and year, asked of a subject related to the first."""

from __future__ import annotations

import re

import pytest

from chronoscope_dagster.chains.facts import Shard, SnapshotFacts
from chronoscope_dagster.chains.families import cross_entity_then
from chronoscope_dagster.chains.families.cross_entity_then import RELATIONS
from chronoscope_dagster.chains.templates import default_templates
from tests.chain_helpers import facts_from_rows, shard_apart

DIGIT = re.compile(r"\d")
NAMES = {"Q1": "Ruritania", "Q2": "Zenda", "Q3": "Graustark", "Q4": "Strelsau", "Q5": "Acme",
         "Q6": "Globex", "Q7": "Ruritania Rail", "Q10": "Rudolf", "Q11": "Flavia",
         "Q12": "Michael", "Q50": "League of Ruritania", "Q51": "Alliance",
         "Q60": "Hank Scorpio", "Q61": "Wile Coyote", "Q62": "Bugs Bunny"}  # fmt: skip


@pytest.fixture(scope="module")
def chains(sample_facts):
    return list(cross_entity_then.generate(sample_facts, default_templates(), 0))


def small_facts(
    rows: list[tuple[str | None, str, str, list[str]]],
    present: dict[tuple[str, str], list[str]] | None = None,
) -> SnapshotFacts:
    return facts_from_rows(rows, NAMES, present=present)


def is_related(facts: SnapshotFacts, a: str, b: str, pid: str, year: int) -> bool:
    """B shares a value of a relation (not ``pid``) with A in ``year``, or is A's value of one."""
    for relation in RELATIONS:
        if relation == pid:
            continue
        mine = facts.gold(a, relation, str(year))
        theirs = facts.gold(b, relation, str(year))
        if mine and (b in mine.qids or (theirs and set(mine.qids) & set(theirs.qids))):
            return True
    return False


def test_family_asks_the_same_property_and_year_of_a_related_subject(chains, sample_facts):
    assert len(chains) >= 100
    for chain in chains:
        first, second = chain.turns
        assert chain.family == "cross_entity_then" and chain.length == 2
        assert first.subject_qid != second.subject_qid and first.pid == second.pid
        assert len(first.scope_anchor) == 4 and first.scope_anchor == second.scope_anchor
        assert chain.anchor == first.scope_anchor
        assert is_related(sample_facts, first.subject_qid, second.subject_qid, first.pid,
                          first.scope_year)  # fmt: skip


def test_both_golds_are_the_truth_in_the_year_and_differ(chains, sample_facts):
    for chain in chains:
        for turn in chain.turns:
            gold = sample_facts.year_golds(turn.subject_qid, turn.pid)[turn.scope_year]
            assert turn.gold_qids == gold.qids and turn.canonical_qid == gold.canonical
        first, second = chain.turns
        assert not set(first.gold_qids) & set(second.gold_qids)


def test_turn_two_names_only_the_new_subject_and_holds_no_year(chains):
    templates = default_templates()
    for chain in chains:
        first, second = chain.turns
        assert first.is_explicit and str(first.scope_year) in first.question
        assert first.subject_label in first.question
        assert not second.is_explicit and DIGIT.search(second.question) is None
        assert second.subject_label in second.question
        assert first.subject_label.casefold() not in second.question.casefold()
        assert second.question in {
            templates.render(second.pid, "cross_entity", i, subject=second.subject_label)
            for i in range(len(templates.phrasings(second.pid, "cross_entity")))
        }
        assert second.question.endswith("?")


def test_small_facts_pair_only_related_subjects_with_different_golds():
    rows = [
            # Q1, Q2 and Q4 are members of Q50 in 2001; Q4 has Q1's head of government.
            ("2001", "Q1", "P6", ["Q10"]), ("2001", "Q1", "P463", ["Q50"]),
            ("2001", "Q2", "P6", ["Q11"]), ("2001", "Q2", "P463", ["Q50"]),
            ("2001", "Q4", "P6", ["Q10"]), ("2001", "Q4", "P463", ["Q50"]),
            # Q3 shares nothing; Q7 shares Q50 but is named after Q1.
            ("2001", "Q3", "P6", ["Q12"]), ("2001", "Q3", "P463", ["Q51"]),
            ("2001", "Q7", "P6", ["Q12"]), ("2001", "Q7", "P463", ["Q50"]),
            # Q6 is Q5's owner; both have a CEO in 2001.
            ("2001", "Q5", "P127", ["Q6"]), ("2001", "Q5", "P169", ["Q61"]),
            ("2001", "Q6", "P169", ["Q60"]),
    ]  # fmt: skip
    facts = small_facts(rows)
    chains = list(cross_entity_then.generate(facts, default_templates(), 0))
    assert chains == [] and facts.drops["scope_insensitive"] >= 5
    today = {(qid, "P6"): ["Q13"] for qid in ("Q1", "Q2", "Q3", "Q4", "Q7")}
    facts = small_facts(rows, present=today | {("Q6", "P169"): ["Q62"]})
    chains = list(cross_entity_then.generate(facts, default_templates(), 0))
    chosen = {c.turns[0].subject_qid: c.turns[1].subject_qid for c in chains}
    allowed = {"Q1": {"Q2"}, "Q2": {"Q1", "Q4", "Q7"}, "Q4": {"Q2", "Q7"}, "Q5": {"Q6"},
               "Q7": {"Q1", "Q2", "Q4"}}  # fmt: skip
    assert list(chosen) == list(allowed)
    assert all(chosen[a] in allowed[a] for a in chosen)
    assert {c.turns[0].pid for c in chains} == {"P6", "P169"}
    acme = chains[3]
    assert [t.gold_qids for t in acme.turns] == [("Q61",), ("Q60",)]
    assert [t.scope_anchor for t in acme.turns] == ["2001", "2001"]


def _letters(number: int) -> str:
    text = ""
    while True:
        number, digit = divmod(number, 26)
        text = chr(65 + digit) + text
        if not number:
            return text


def _members(count: int) -> tuple[list, dict[str, str]]:
    """``count`` countries of one organization (Q50) in 2001, each with its own head of
    government; every third is named with a number."""
    rows, names = [], {"Q50": "League of Ruritania"}
    for i in range(count):
        country, head = f"Q{1000 + i}", f"Q{5000 + i}"
        rows += [("2001", country, "P6", [head]), ("2001", country, "P463", ["Q50"])]
        names[country] = f"Land {i}" if i % 3 == 0 else f"Land {_letters(i)}"
        names[head] = f"Leader {_letters(i)}"
    return rows, names


def test_related_subjects_tried_are_bounded_and_never_named_with_numbers(monkeypatch):
    """A large shared value (every member of one organization) is tried a window at a time,
    so the family's work grows linearly with the members; numbered names are never tried."""
    tried: list[str] = []
    usable = cross_entity_then._usable

    def counting(facts, chunk, names, folded, other, *rest):
        tried.append(other)
        return usable(facts, chunk, names, folded, other, *rest)

    monkeypatch.setattr(cross_entity_then, "_usable", counting)
    counts = {}
    for size in (300, 1200):
        rows, names = _members(size)
        today = {(row[1], "P6"): ["Q9"] for row in rows}
        facts = facts_from_rows(rows, names | {"Q9": "Nobody"}, present=today)
        tried.clear()
        chains = list(cross_entity_then.generate(facts, default_templates(), 0))
        assert chains and not [q for q in tried if DIGIT.search(facts.subject_name(q) or "")]
        counts[size] = len(tried)
    assert counts[1200] <= 4.5 * counts[300]


def test_blocks_of_a_large_group_are_the_same_in_every_shard():
    """A shard indexes only the blocks of holders its roots draw from (``chains.reach``); its
    chains are the whole snapshot's chains rooted in it, so shards change nothing."""
    rows, names = _members(1200)
    names |= {"Q9": "Nobody"}
    today = {(row[1], "P6"): ["Q9"] for row in rows}
    templates = default_templates()
    whole = facts_from_rows(rows, names, present=today)
    group = whole.related("Q1000").holders[("P463", "Q50", "2001")]
    assert group.size > 4 * cross_entity_then.MAX_RELATED
    expected = list(cross_entity_then.generate(whole, templates, 0))
    parts = []
    for index in range(3):
        shard = Shard(index, 3)
        facts = facts_from_rows(rows, names, present=today, shard=shard)
        assert len(facts.pids_by_subject) < len(whole.pids_by_subject)
        parts += cross_entity_then.generate(facts, templates, 0)
    assert expected and sorted(parts, key=_root) == expected


def _root(chain) -> int:
    return int(chain.turns[0].subject_qid[1:])


def test_a_related_subjects_timeless_value_is_bounded_by_its_lifespan_in_every_shard():
    """A holder's gold is decided as the whole snapshot decides it, also where neither the
    holder nor its value is a root of the shard: a timeless value that had ceased to exist
    (a dissolved party) holds in no later year."""
    rows = [
        ("2010", "Q1", "P54", ["Q50"]), ("2010", "Q2", "P54", ["Q50"]),
        ("2010", "Q1", "P102", ["Q60"]), (None, "Q2", "P102", ["Q61"]),
    ]  # fmt: skip
    names = {"Q1": "Ann", "Q2": "Bob", "Q50": "Club", "Q60": "Party", "Q61": "Old Party"}
    lifespans = {"Q61": ("1950-01-01", "1990-12-31")}
    whole = facts_from_rows(rows, names, lifespans=lifespans)
    assert whole.gold("Q2", "P102", "2010") is None
    shard = shard_apart(
        lambda shard: facts_from_rows(rows, names, lifespans=lifespans, shard=shard), "Q1", "Q2"
    )
    facts = facts_from_rows(rows, names, lifespans=lifespans, shard=shard)
    related = facts.related("Q1").about("Q2", facts)
    assert "Q2" not in facts.pids_by_subject and "Q2" in related.pids_by_subject
    assert related.gold("Q2", "P102", "2010") is None
