"""What chain generation reads: one snapshot's truth, labels and present-day values, by QID.

Everything is keyed by QID (never by label). A subject whose English label is
shared with another subject of the snapshot is named with its description
("Georgia (country in the Caucasus)") or, without one, left out; the count of
left-out subjects is reported. Label hygiene keeps non-ASCII names and drops
placeholders ("unknown", "none") and identifiers ("Q42"). An anchor where a
value of unknown validity may hold (a statement that ended at an unrecorded
date, or started at an unknown one) has no gold: no question about it has a
certain answer.

A gold is returned only where the facts decide it (``chains.evidence``): a
single-holder property must cover the scope, no value of unknown validity may
hold in it, and timeless values hold only within the subject's and their own
lifespans. Every refused (subject, property, scope) is
counted once by reason in ``drops``.
"""

from __future__ import annotations

import copy
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from chronoscope_dagster.chains.evidence import (
    FOREVER,
    MAX_GAP_DAYS,
    NEVER,
    Lifespan,
    Span,
    anchor_span,
    day_number,
    lifespans,
    longest_gap,
    merge,
    python_dates,
)
from chronoscope_dagster.chains.model import Turn
from chronoscope_dagster.wikidata.properties import default_catalog

PLACEHOLDERS = frozenset(
    {"unknown", "unknown value", "none", "null", "n/a", "na", "unspecified", "not known",
     "not applicable", "no value", "some value"}
)  # fmt: skip
IDENTIFIER = re.compile(r"[QPL]\d+")
MAX_LABEL = 100
UNKNOWN_LIFESPAN = Lifespan()
INTERVAL_COLUMNS = ("subject_qid", "pid", "value_qid", "valid_from", "valid_until",
                    "certain_until", "is_timeless", "end_unknown", "start_unknown")  # fmt: skip


def clean_label(label: str | None) -> bool:
    if not label:
        return False
    text = " ".join(label.split())
    return (
        2 <= len(text) <= MAX_LABEL
        and text.lower() not in PLACEHOLDERS
        and IDENTIFIER.fullmatch(text) is None
    )


def naming(label: str | None, description: str | None, shared: bool) -> str | None:
    """How a question names a subject of this label and description, whose label another
    subject of the snapshot also has (``shared``), or None when it cannot be named so."""
    if not clean_label(label):
        return None
    if not shared:
        return label
    return f"{label} ({description})" if clean_label(description) else None


@dataclass(frozen=True)
class Shard:
    """One of ``count`` shards of a snapshot's subjects: the ``index``-th of ``count`` runs of
    about equal golds in the snapshot's locality order (``chains.reach``), so the same subject
    falls in the same shard on every run and machine, and neighbours in the order (subjects
    of the same employer, team or party) fall together."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count}: need 0 <= index < count")

    def split(self, parts: int) -> list[Shard]:
        """This shard as ``parts`` shards that together hold exactly its subjects: its run cut
        in ``parts`` runs (``floor(x * count * parts) // parts == floor(x * count)``)."""
        return [Shard(self.index * parts + part, self.count * parts) for part in range(parts)]


@dataclass(frozen=True, slots=True)
class Gold:
    """The values valid at one anchor: all of them, and the canonical one."""

    qids: tuple[str, ...]
    canonical: str


@dataclass(frozen=True, slots=True)
class Label:
    label: str
    aliases: tuple[str, ...]
    description: str | None


@dataclass(frozen=True, slots=True)
class HolderGroup:
    """The subjects holding one value of a relation at one anchor (``cross_entity_then``):
    how many, and those at the positions an index needs (``positions``, ascending, in QID
    order of the whole group) with their QIDs (``members``). A shard holds hundreds of
    thousands of groups, so a group is two flat sequences rather than a dict."""

    size: int
    positions: Sequence[int]
    members: tuple[str, ...]

    def member(self, position: int) -> str:
        """The holder at ``position``, which must be one the index holds."""
        found = bisect_left(self.positions, position)
        if found == len(self.positions) or self.positions[found] != position:
            raise KeyError(position)
        return self.members[found]


@dataclass(frozen=True)
class RelatedChunk:
    """What the roots of one chunk of a shard draw related subjects from (``cross_entity_then``):
    the holder groups with the members of the blocks they draw, and the index of the members
    the shard's own index does not hold (``subjects``), only the properties those roots may
    ask of them and their ``instance of``."""

    holders: dict[tuple[str, str, str | None], HolderGroup]
    index: SnapshotFacts | None = None
    subjects: frozenset[str] = frozenset()

    def about(self, subject: str, shard: SnapshotFacts) -> SnapshotFacts:
        """The index that holds ``subject``: this chunk's, or the ``shard``'s own."""
        return self.index if self.index is not None and subject in self.subjects else shard


class RelatedSource(Protocol):
    """Loads the related subjects of a shard's roots a chunk of roots at a time, so a shard's
    memory follows a chunk's related subjects rather than all of the shard's."""

    def chunk_of(self, root: str) -> int: ...

    def load(self, chunk: int) -> RelatedChunk: ...


@dataclass(frozen=True)
class SnapshotWide:
    """What an index of some subjects knows of the whole snapshot (``chains.reach``)."""

    roots: frozenset[str] | None
    """The subjects chains start from (every subject of the index when None)."""
    shared_label_subjects: frozenset[str]
    """Indexed subjects whose label another subject of the snapshot also has."""
    unnameable_subjects: int
    """Subjects of the snapshot that cannot be named (``SnapshotFacts.subject_name``)."""
    first_seen: dict[str, int]
    """Per indexed subject and value of its golds, the first day of a dated statement it takes
    part in."""
    related: RelatedSource
    """The holder groups the roots' chains draw related subjects from, and those subjects."""


class SnapshotFacts:
    """Truth of one snapshot, indexed for chain generation: the subjects that the chains of
    ``wide.roots`` reach, as ``chains.reach`` loads them."""

    def __init__(
        self,
        snapshot_year: int,
        gold_rows: pa.Table,
        labels: pa.Table,
        present_day: pa.Table,
        *,
        intervals: pa.Table,
        lifespan_rows: pa.Table,
        wide: SnapshotWide,
        undecided: pa.Table | None = None,
    ):
        """``gold_rows``: the ``truth`` rows of chain properties with a canonical value, in the
        table's order, of pairs with no value of unknown validity. ``intervals``
        (``fact_intervals`` rows of those pairs) are the evidence of coverage: without them a
        single-holder property decides no dated scope. ``undecided``: the (anchor, subject,
        property) where a value of unknown validity may hold, with the reason
        (``unknown_start``, ``unknown_end``): no gold there."""
        self.snapshot_year = snapshot_year
        self.last_day = anchor_span(None, snapshot_year)[1]
        self.functional = default_catalog().functional_pids
        self.lifespans = lifespans(lifespan_rows)
        self.wide = wide
        self._decisions: dict[tuple[str, str, str | None], tuple[Gold | None, str | None]] = {}
        self._covered: dict[tuple[str, str, Span], bool] = {}
        self._years_covered: dict[tuple[str, str, int, int], bool] = {}
        self._person: dict[str, bool | None] = {}
        self._values_ever: dict[tuple[str, str], tuple[str, ...]] = {}
        self._forget()
        self.person_classes = default_catalog().person_classes
        self.labels: dict[str, Label] = {
            qid: Label(label, tuple(aliases or ()), description)
            for qid, label, aliases, description in _rows(
                labels, ["qid", "label", "aliases", "description"]
            )
            if clean_label(label)
        }
        self.golds: dict[tuple[str, str], dict[str | None, Gold]] = defaultdict(dict)
        columns = ["anchor", "subject_qid", "pid", "value_qids", "canonical_value_qid"]
        distinct: dict[tuple[tuple[str, ...], str], Gold] = {}
        anchors: dict[str | None, str | None] = {}
        for anchor, subject, pid, values, canonical in _rows(gold_rows, columns):
            key = (tuple(values), canonical)
            if (gold := distinct.get(key)) is None:
                gold = distinct[key] = Gold(*key)
            self.golds[(subject, pid)][anchors.setdefault(anchor, anchor)] = gold
        self.undecided: dict[tuple[str, str], dict[str | None, str]] = defaultdict(dict)
        if undecided is not None:
            for anchor, subject, pid, reason in _rows(
                undecided, ["anchor", "subject_qid", "pid", "reason"]
            ):
                self.undecided[(subject, pid)][anchors.setdefault(anchor, anchor)] = reason
        self._index_intervals(intervals)
        self.present: dict[tuple[str, str], tuple[str, ...]] = {
            (subject, pid): tuple(values)
            for subject, pid, values in _rows(present_day, ["subject_qid", "pid", "value_qids"])
        }
        self.pids_by_subject: dict[str, list[str]] = defaultdict(list)
        for subject, pid in sorted(self.golds, key=_pair_order):
            self.pids_by_subject[subject].append(pid)

    def _forget(self) -> None:
        """Empty the refusal counts and the memos that count refusals."""
        self.drops: Counter[str] = Counter()
        self._dropped: set[tuple[str, str, str | None, str]] = set()
        self._year_golds: dict[tuple[str, str], dict[int, Gold]] = {}
        self._related: tuple[int, RelatedChunk] | None = None

    def fresh(self) -> SnapshotFacts:
        """The same index with empty refusal counts: what one family generates from. The
        index is built once for all families, and each family counts its own refusals, as if
        it had built the index alone; decisions (a gold, or the reason it was refused),
        coverage and kinds are shared, being facts of the snapshot."""
        facts = copy.copy(self)
        facts._forget()
        return facts

    def root_subjects(self) -> Iterator[tuple[str, list[str]]]:
        """The subjects chains start from (``wide.roots``), with their properties, by QID
        number."""
        roots = self.wide.roots
        if roots is None:
            yield from self.pids_by_subject.items()
            return
        for subject, pids in self.pids_by_subject.items():
            if subject in roots:
                yield subject, pids

    def related(self, root: str) -> RelatedChunk:
        """The holder groups and related subjects of the chunk of ``root``; a related subject's
        refusals count as this index's. One chunk is held at a time: roots come in order."""
        chunk = self.wide.related.chunk_of(root)
        if self._related is None or self._related[0] != chunk:
            self._related = None
            loaded = self.wide.related.load(chunk)
            if loaded.index is not None:
                loaded.index.drops, loaded.index._dropped = self.drops, self._dropped
            self._related = (chunk, loaded)
        return self._related[1]

    def subject_name(self, subject: str) -> str | None:
        """How a question names the subject, or None when it cannot be named unambiguously."""
        label = self.labels.get(subject)
        if label is None:
            return None
        return naming(label.label, label.description, subject in self.wide.shared_label_subjects)

    def _index_intervals(self, intervals: pa.Table) -> None:
        """Per (subject, property): the merged certain days of all values (single-holder
        properties), each value's dated spans, the values with a timeless statement, and the
        first day from which a value whose statement ended at an unknown date may still hold
        (``open_from``)."""
        self.coverage: dict[tuple[str, str], tuple[Span, ...]] = {}
        self.value_spans: dict[tuple[str, str], dict[str, list[Span]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.timeless_values: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.unstarted_values: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.open_from: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        spans: dict[tuple[str, str], list[Span]] = defaultdict(list)
        rows = _rows(python_dates(intervals), INTERVAL_COLUMNS)
        for row in rows:
            subject, pid, value, start, until, certain_until, timeless, end_unknown, unstarted = row
            key = (subject, pid)
            if key not in self.golds:
                continue
            if end_unknown:
                since = self.open_from[key]
                since[value] = min(since.get(value, FOREVER), day_number(start, NEVER))
            if unstarted:
                self.unstarted_values[key].add(value)
                continue
            if timeless:
                self.timeless_values[key].add(value)
                span = (NEVER, FOREVER)
            elif end_unknown and certain_until is None:
                continue
            else:
                end = certain_until if end_unknown else until
                span = (day_number(start, NEVER), day_number(end, FOREVER))
                self.value_spans[key][value].append(span)
            if pid in self.functional:
                spans[key].append(span)
        self.coverage = {key: merge(found) for key, found in spans.items()}

    def lifespan(self, subject: str) -> Lifespan:
        """The recorded lifespan (birth or inception to death or dissolution)."""
        return self.lifespans.get(subject, UNKNOWN_LIFESPAN)

    def existence(self, subject: str) -> Lifespan:
        """The recorded lifespan; without a birth or inception, the subject existed at least
        from the first start of any dated statement it takes part in (as subject or value).
        A bound for timeless values only: a missing predecessor must not shorten a scope."""
        known = self.lifespan(subject)
        if known.start == NEVER and subject in self.wide.first_seen:
            return Lifespan(self.wide.first_seen[subject], known.end)
        return known

    @property
    def refused(self) -> frozenset[tuple[str, str, str | None, str]]:
        """Every (subject, property, scope, reason) refused so far, each counted once in
        ``drops``."""
        return frozenset(self._dropped)

    def refuse(self, subject: str, pid: str, scope: str | None, reason: str) -> None:
        """Count a refused (subject, property, scope) once under ``reason``."""
        key = (subject, pid, scope, reason)
        if key not in self._dropped:
            self._dropped.add(key)
            self.drops[reason] += 1

    def covered(self, subject: str, pid: str, span: Span) -> bool:
        """Whether the values of a single-holder property cover ``span`` (clipped to the
        subject's lifespan and the snapshot) with no gap over ``MAX_GAP_DAYS``."""
        key = (subject, pid, span)
        if key not in self._covered:
            start, end = self.lifespan(subject).clip((span[0], min(span[1], self.last_day)))
            self._covered[key] = start > end or (
                longest_gap(self.coverage.get((subject, pid), ()), start, end) <= MAX_GAP_DAYS
            )
        return self._covered[key]

    def gold(self, subject: str, pid: str, anchor: str | None) -> Gold | None:
        """The decided gold at an anchor, or None; a (subject, property) with only timeless
        facts holds at every anchor of its subject's lifespan."""
        key = (subject, pid, anchor)
        decision = self._decisions.get(key)
        if decision is None:
            by_anchor = self.golds.get((subject, pid))
            timeless = bool(by_anchor) and None in by_anchor and len(by_anchor) == 1
            if not by_anchor or (not timeless and anchor not in by_anchor):
                reason = self.undecided.get((subject, pid), {}).get(anchor)
                if reason is not None:
                    self.refuse(subject, pid, anchor, reason)
                return None
            gold = by_anchor[None] if timeless else by_anchor[anchor]
            decision = self._decisions[key] = self._decide(subject, pid, anchor, gold, by_anchor)
        gold, refused = decision
        if refused is not None:
            self.refuse(subject, pid, anchor, refused)
        return gold

    def _decide(
        self, subject: str, pid: str, anchor: str | None, gold: Gold, by_anchor: dict
    ) -> tuple[Gold | None, str | None]:
        """The gold at an anchor (``gold``, the truth table's), or None with the reason the
        facts refuse it."""
        span = anchor_span(anchor, self.snapshot_year)
        timeless = (
            set(gold.qids) if None in by_anchor else self.timeless_values.get((subject, pid), ())
        )
        if timeless:
            subject_outside = self.existence(subject).outside(span)
            outside = {
                qid: reason
                for qid in gold.qids
                if qid in timeless
                and (reason := subject_outside or self.existence(qid).outside(span)) is not None
            }
            kept = tuple(qid for qid in gold.qids if qid not in outside)
            if not kept:
                return None, next(iter(outside.values()))
            if kept != gold.qids:
                gold = Gold(kept, self._canonical(subject, pid, gold.canonical, kept))
        if pid in self.functional and not self.covered(subject, pid, span):
            return None, "incomplete_scope"
        return gold, None

    def _canonical(self, subject: str, pid: str, canonical: str, qids: tuple[str, ...]) -> str:
        """The canonical value among ``qids``: unchanged if kept, else the latest start."""
        if canonical in qids:
            return canonical
        spans = self.value_spans.get((subject, pid), {})
        return max(
            qids, key=lambda q: (max((s for s, _ in spans.get(q, ())), default=NEVER), -int(q[1:]))
        )

    def year_golds(self, subject: str, pid: str) -> dict[int, Gold]:
        """The decided gold of every whole-year anchor of a (subject, property), by year."""
        key = (subject, pid)
        if key not in self._year_golds:
            years = [
                anchor
                for anchor in self.golds.get(key, {})
                if anchor is not None and len(anchor) == 4
            ]
            self._year_golds[key] = {
                int(anchor): gold for anchor in years if (gold := self.gold(subject, pid, anchor))
            }
        return self._year_golds[key]

    def drifts(self, subject: str, pid: str, anchor: str | None) -> bool:
        """Whether the present-day value exists and is not a correct answer at ``anchor``
        (the turn is drift-eligible: answering for today is wrong)."""
        gold = self.gold(subject, pid, anchor)
        present = self.present.get((subject, pid), ())
        return gold is not None and bool(present) and not set(present) & set(gold.qids)

    def scope_sensitive(self, subject: str, pid: str, anchor: str | None) -> bool:
        """Whether a question at ``anchor`` tests its scope: its gold is not today's value
        (``drifts``), or, with no present-day value, shares nothing with the gold of the
        pair's latest decided year (a dissolved company's last CEO is what a model answers
        that ignores the scope). A gold that holds today, or last held, cannot tell a kept
        scope from a lost one."""
        gold = self.gold(subject, pid, anchor)
        if gold is None or anchor is None:
            return False
        if self.present.get((subject, pid)):
            return self.drifts(subject, pid, anchor)
        years = self.year_golds(subject, pid)
        return bool(years) and not set(gold.qids) & set(years[max(years)].qids)

    def is_person(self, qid: str) -> bool | None:
        """Whether the entity is a person (an ``instance of`` among the property list's
        ``person_classes``); None when its classes are unknown."""
        if qid not in self._person:
            classes = self.golds.get((qid, "P31"))
            self._person[qid] = (
                any(q in self.person_classes for gold in classes.values() for q in gold.qids)
                if classes
                else None
            )
        return self._person[qid]

    def single_holder(self, subject: str, pid: str, question: str) -> bool:
        """Whether ``pid`` is single-holder, as counts and changes need; if not, the pair is
        refused once as ``open_ended_<question>``."""
        if pid in self.functional:
            return True
        self.refuse(subject, pid, None, f"open_ended_{question}")
        return False

    def span_covered(self, subject: str, pid: str, first: int, last: int, reason: str) -> bool:
        """Whether a single-holder property covers the years ``first..last``; if not, the
        span is refused as ``reason``."""
        if self.covers_years(subject, pid, first, last):
            return True
        self.refuse(subject, pid, f"{first}-{last}", reason)
        return False

    def covers_years(self, subject: str, pid: str, first: int, last: int) -> bool:
        """Whether ``pid`` is single-holder and covers the years ``first..last``: then a value
        not held there ``never_held`` there."""
        if pid not in self.functional:
            return False
        key = (subject, pid, first, last)
        if key not in self._years_covered:
            span = anchor_span(f"{first}-{last}", self.snapshot_year)
            self._years_covered[key] = self.covered(subject, pid, span)
        return self._years_covered[key]

    def never_held(self, subject: str, pid: str, value: str, first: int, last: int) -> bool:
        """Positive evidence that ``value`` held at no time of the years ``first..last``: a
        covered span of a single-holder property without it, or the value's own statements
        all dated and none reaching into the span. Call only for a value not held there."""
        if self.covers_years(subject, pid, first, last):
            return True
        scope = f"{first}-{last}"
        span = anchor_span(scope, self.snapshot_year)
        own = self.value_spans.get((subject, pid), {}).get(value, [])
        undated = value in self.timeless_values.get((subject, pid), set()) or value in (
            self.unstarted_values.get((subject, pid), set())
        )
        if own and not undated and all(end < span[0] or start > span[1] for start, end in own):
            return True
        self.refuse(subject, pid, f"{scope}:{value}", "no_evidence")
        return False

    def is_timeless(self, subject: str, pid: str) -> bool:
        return list(self.golds.get((subject, pid), {})) == [None]

    def verbalizable(self, qids: tuple[str, ...]) -> bool:
        return all(map(self.labels.__contains__, qids))

    def turn(
        self,
        question: str,
        subject: str,
        pid: str,
        anchor: str | None,
        *,
        explicit: bool,
    ) -> Turn | None:
        """A turn asking ``pid`` of ``subject`` at ``anchor``, or None if it has no verbalizable gold."""
        gold = self.gold(subject, pid, anchor)
        name = self.subject_name(subject)
        if gold is None or name is None or not self.verbalizable(gold.qids):
            return None
        present = self.present.get((subject, pid), ())
        rivals = [
            q for q in self.values_ever(subject, pid) if q not in gold.qids and q in self.labels
        ]
        return Turn(
            question=question,
            pid=pid,
            subject_qid=subject,
            subject_label=name,
            gold_qids=gold.qids,
            gold_labels=tuple(self.labels[q].label for q in gold.qids),
            gold_aliases=tuple(alias for q in gold.qids for alias in self.labels[q].aliases),
            answer=self.labels[gold.canonical].label,
            canonical_qid=gold.canonical,
            scope_year=_anchor_year(anchor),
            scope_anchor=anchor,
            is_explicit=explicit,
            present_qids=present,
            present_labels=tuple(self.labels[q].label for q in present if q in self.labels),
            rival_labels=tuple(
                text for q in rivals for text in (self.labels[q].label, *self.labels[q].aliases)
            ),
            scope_dependent=not explicit and self.scope_sensitive(subject, pid, anchor),
        )

    def values_ever(self, subject: str, pid: str) -> tuple[str, ...]:
        """Every value the (subject, property) had at any anchor of the snapshot, or has today,
        by QID number."""
        key = (subject, pid)
        if key not in self._values_ever:
            found = {q for gold in self.golds.get(key, {}).values() for q in gold.qids}
            found.update(self.present.get(key, ()))
            self._values_ever[key] = tuple(sorted(found, key=_qid_number))
        return self._values_ever[key]


def _rows(table: pa.Table, names: Sequence[str], batch_rows: int = 1 << 16) -> Iterator[tuple]:
    """The named columns (a missing one as nulls) row by row, converted to Python a batch at
    a time: much faster than row dicts, and never the whole table as Python objects."""
    for batch in table.to_batches(batch_rows):
        present = batch.schema.names
        yield from zip(
            *(
                batch.column(name).to_pylist() if name in present else [None] * batch.num_rows
                for name in names
            ),
            strict=True,
        )


def _anchor_year(anchor: str | None) -> int | None:
    return int(anchor[:4]) if anchor else None


def _qid_number(qid: str) -> int:
    return int(qid[1:])


def _pair_order(pair: tuple[str, str]) -> tuple[int, int]:
    return (_qid_number(pair[0]), int(pair[1][1:]))
