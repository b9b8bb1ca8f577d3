"""Cross-entity then: the same property and year, transferred to a related subject.

What it tests: turn 1 fixes a year explicitly for subject A; turn 2 names a
related subject B and asks the same property "at the time", with no year, so
the model must transfer the year of turn 1 to B instead of answering for the
present.

Structure (2 turns): 1. explicit, entity, subject A, year Y; 2. names subject
B, implicit year ("at the time"), entity: the scored turn.

Rule: for each subject A and property p, the candidates are every year Y of
(A, p) with every subject B for it whose gold at Y is drift-eligible (not
today's value: the family tests transferring the year instead of answering
for the present; a pair without one is refused as ``scope_insensitive``);
(Y, B) is drawn from the item's generator. B is a candidate when (B, p) has
gold in Y and B is related to A in Y through a shared QID, by the first of
``RELATIONS`` (strongest first, r != p) that gives any candidate:
- A and B held the same value of r in Y (teammates of one club, companies with
  one owner, countries of one organization, people of one party or employer...);
- or B is A's value of r in Y (a company's owner, a person's employer...).
A timeless-only (subject, r) holds in every year. B must be nameable without
digits (a number in a name reads as a year) and without A's name in it, and the
gold sets of A and B for p in Y must be disjoint, so A's answer is wrong for B.
Subjects that cannot be named so never enter the holder index, and at most
``MAX_RELATED`` holders of one shared value are tried: the holders in QID order
are cut into blocks of that many (the last one filled up from the start), and
A's hash picks the block. A country or a party has millions of holders at full
scale: trying them all for every (A, p, Y) made the family quadratic, and a
block is what a shard of the subjects loads (``chains.reach``). Turn 1 asks ``explicit_year`` of
(A, p) at Y, turn 2 ``cross_entity`` of (B, p); both golds are the values
valid at any time in Y.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import HolderGroup, RelatedChunk, SnapshotFacts
from chronoscope_dagster.chains.families.common import askable, askable_pairs, best_tier, pick
from chronoscope_dagster.chains.model import Chain
from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import Templates

FAMILY = "cross_entity_then"
RELATIONS = ("P127", "P749", "P54", "P102", "P108", "P69", "P463", "P131", "P17")
DIGIT = re.compile(r"\d")
MAX_RELATED = 128
"""Holders of one (relation, value, year) tried per subject."""


def generate(facts: SnapshotFacts, templates: Templates, seed: int) -> Iterator[Chain]:
    names = _PlainNames()
    related_memo: dict[tuple[str, str, int], list[str]] = {}
    for subject, name, pid in askable_pairs(facts, templates):
        if related_memo and next(iter(related_memo))[0] != subject:
            related_memo.clear()
        golds = facts.year_golds(subject, pid)
        chunk = facts.related(subject)
        options = best_tier(
            facts,
            [
                ((year, other), int(chunk.about(other, facts).drifts(other, pid, str(year))))
                for year in sorted(golds)
                if facts.verbalizable(golds[year].qids)
                for other in _candidates(
                    facts, chunk, templates, names, related_memo, subject, name, pid, year,
                    golds[year].qids,
                )
            ],
            (subject, pid),
        )  # fmt: skip
        if not options:
            continue
        rng = rng_for(seed, FAMILY, subject, pid)
        year, other = rng.choice(options)
        first = facts.turn(
            pick(templates, rng, pid, "explicit_year", subject=name, year=year),
            subject, pid, str(year), explicit=True,
        )  # fmt: skip
        about = chunk.about(other, facts)
        second = about.turn(
            pick(templates, rng, pid, "cross_entity", subject=about.subject_name(other)),
            other, pid, str(year), explicit=False,
        )  # fmt: skip
        if first and second:
            yield Chain(FAMILY, facts.snapshot_year, str(year), (first, second))


class _PlainNames:
    """Each subject's name casefolded, or None where it cannot be named without digits; held
    for one chunk of roots (``SnapshotFacts.related``) at a time."""

    def __init__(self) -> None:
        self.chunk: RelatedChunk | None = None
        self.folded: dict[str, str | None] = {}

    def __call__(self, facts: SnapshotFacts, chunk: RelatedChunk, subject: str) -> str | None:
        if chunk is not self.chunk:
            self.chunk, self.folded = chunk, {}
        if subject not in self.folded:
            name = chunk.about(subject, facts).subject_name(subject)
            self.folded[subject] = (
                name.casefold() if name is not None and DIGIT.search(name) is None else None
            )
        return self.folded[subject]


def _candidates(
    facts: SnapshotFacts, chunk: RelatedChunk, templates: Templates, names: _PlainNames,
    related_memo: dict[tuple[str, str, int], list[str]], subject: str, name: str, pid: str,
    year: int, golds: tuple[str, ...],
) -> list[str]:  # fmt: skip
    """The usable subjects related to ``subject`` in ``year`` by the first relation with any
    (``related_memo``: the subject's related subjects by relation and year, which do not
    depend on the property asked)."""
    folded = name.casefold()
    held = set(golds)
    for relation in RELATIONS:
        if relation == pid:
            continue
        key = (subject, relation, year)
        if key not in related_memo:
            related_memo[key] = related(facts, chunk, subject, relation, year)
        usable = [
            other
            for other in related_memo[key]
            if _usable(facts, chunk, names, folded, other, pid, year, held)
            and askable(chunk.about(other, facts), templates, other, pid)
        ]
        if usable:
            return usable
    return []


def related(
    facts: SnapshotFacts, chunk: RelatedChunk, subject: str, relation: str, year: int
) -> list[str]:
    """Subjects sharing a value of ``relation`` with ``subject`` in ``year`` (among the holders
    of ``chunk``, the subject's), then its values."""
    gold = facts.gold(subject, relation, str(year))
    holders = chunk.holders
    found: dict[str, None] = {}
    for value in gold.qids if gold else ():
        for anchor in (str(year), None):
            found.update(dict.fromkeys(_window(holders.get((relation, value, anchor)), subject)))
        found[value] = None
    found.pop(subject, None)
    return list(found)


def _window(group: HolderGroup | None, subject: str) -> list[str]:
    """The holders of ``group`` tried for ``subject``: all of them, or when there are more
    than ``MAX_RELATED``, the block of that many that ``subject``'s hash picks."""
    if group is None:
        return []
    if group.size <= MAX_RELATED:
        return [group.member(position) for position in range(group.size)]
    blocks = -(-group.size // MAX_RELATED)
    digest = hashlib.sha256(subject.encode()).digest()
    first = int.from_bytes(digest[:8], "big") % blocks * MAX_RELATED
    return [group.member((first + i) % group.size) for i in range(MAX_RELATED)]


def _usable(
    facts: SnapshotFacts, chunk: RelatedChunk, names: _PlainNames, folded: str, other: str,
    pid: str, year: int, held: set[str],
) -> bool:  # fmt: skip
    """Whether ``other``, named without digits and without the subject's name (``folded``),
    has a labelled gold in ``year`` that shares nothing with the subject's (``held``)."""
    other_name = names(facts, chunk, other)
    if other_name is None or folded in other_name:
        return False
    about = chunk.about(other, facts)
    other_gold = about.gold(other, pid, str(year))
    return (
        other_gold is not None
        and about.verbalizable(other_gold.qids)
        and held.isdisjoint(other_gold.qids)
    )
