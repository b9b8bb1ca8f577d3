"""What chain generation reads: one snapshot's truth, labels and present-day values, by QID.

Everything is keyed by QID (never by label). A subject whose English label is
shared with another subject of the snapshot is named with its description
("Georgia (country in the Caucasus)") or, without one, left out; the count of
left-out subjects is reported. Label hygiene keeps non-ASCII names and drops
placeholders ("unknown", "none") and identifiers ("Q42"). A (subject, property)
with a value of unknown validity at some anchor (a statement that ended at an
unrecorded date) is left out entirely, since no question about it has a
certain gold; ``uncertain_pairs`` counts them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa

from chronoscope_dagster.chains.model import Turn
from chronoscope_dagster.wikidata.properties import default_catalog

PLACEHOLDERS = frozenset(
    {"unknown", "unknown value", "none", "null", "n/a", "na", "unspecified", "not known",
     "not applicable", "no value", "some value"}
)  # fmt: skip
IDENTIFIER = re.compile(r"[QPL]\d+")
MAX_LABEL = 100


def clean_label(label: str | None) -> bool:
    if not label:
        return False
    text = " ".join(label.split())
    return (
        2 <= len(text) <= MAX_LABEL
        and text.lower() not in PLACEHOLDERS
        and IDENTIFIER.fullmatch(text) is None
    )


@dataclass(frozen=True)
class Gold:
    """The values valid at one anchor: all of them, and the canonical one."""

    qids: tuple[str, ...]
    canonical: str


@dataclass(frozen=True)
class Label:
    label: str
    aliases: tuple[str, ...]
    description: str | None


class SnapshotFacts:
    """Truth of one snapshot, indexed for chain generation."""

    def __init__(
        self,
        snapshot_year: int,
        truth: pa.Table,
        labels: pa.Table,
        present_day: pa.Table | None = None,
        pids: tuple[str, ...] | None = None,
    ):
        """``pids``: the properties chains may ask about (default: those of the property list
        marked for chains)."""
        self.snapshot_year = snapshot_year
        self.labels: dict[str, Label] = {
            row["qid"]: Label(row["label"], tuple(row["aliases"] or ()), row["description"])
            for row in labels.to_pylist()
            if clean_label(row["label"])
        }
        self.golds: dict[tuple[str, str], dict[str | None, Gold]] = defaultdict(dict)
        wanted = set(pids or default_catalog().chain_pids)
        columns = ["anchor", "subject_qid", "pid", "value_qids", "canonical_value_qid",
                   "uncertain_value_qids"]  # fmt: skip
        uncertain: set[tuple[str, str]] = set()
        for row in truth.select([c for c in columns if c in truth.column_names]).to_pylist():
            key = (row["subject_qid"], row["pid"])
            if row["pid"] not in wanted:
                continue
            if row.get("uncertain_value_qids"):
                uncertain.add(key)
            if row["canonical_value_qid"] is not None:
                self.golds[key][row["anchor"]] = Gold(
                    tuple(row["value_qids"]), row["canonical_value_qid"]
                )
        for key in uncertain:
            self.golds.pop(key, None)
        self.uncertain_pairs = len(uncertain)
        self.present: dict[tuple[str, str], tuple[str, ...]] = {}
        if present_day is not None:
            for row in present_day.select(["subject_qid", "pid", "value_qids"]).to_pylist():
                self.present[(row["subject_qid"], row["pid"])] = tuple(row["value_qids"])
        self.pids_by_subject: dict[str, list[str]] = defaultdict(list)
        self.subjects_by_pid: dict[str, list[str]] = defaultdict(list)
        for subject, pid in sorted(self.golds, key=_pair_order):
            self.pids_by_subject[subject].append(pid)
            self.subjects_by_pid[pid].append(subject)
        by_label: dict[str, list[str]] = defaultdict(list)
        for subject in self.pids_by_subject:
            if subject in self.labels:
                by_label[self.labels[subject].label].append(subject)
        self.shared_label_subjects = {
            s for group in by_label.values() if len(group) > 1 for s in group
        }
        self.unnameable_subjects = sorted(
            (s for s in self.pids_by_subject if self.subject_name(s) is None), key=_qid_number
        )

    def subject_name(self, subject: str) -> str | None:
        """How a question names the subject, or None when it cannot be named unambiguously."""
        label = self.labels.get(subject)
        if label is None:
            return None
        if subject not in self.shared_label_subjects:
            return label.label
        if label.description and clean_label(label.description):
            return f"{label.label} ({label.description})"
        return None

    def gold(self, subject: str, pid: str, anchor: str | None) -> Gold | None:
        """The gold at an anchor; a (subject, property) with only timeless facts holds everywhere."""
        by_anchor = self.golds.get((subject, pid))
        if not by_anchor:
            return None
        if None in by_anchor and len(by_anchor) == 1:
            return by_anchor[None]
        return by_anchor.get(anchor)

    def year_golds(self, subject: str, pid: str) -> dict[int, Gold]:
        """The gold of every whole-year anchor of a (subject, property), by year."""
        return {
            int(anchor): gold
            for anchor, gold in self.golds.get((subject, pid), {}).items()
            if anchor is not None and len(anchor) == 4
        }

    def is_timeless(self, subject: str, pid: str) -> bool:
        return list(self.golds.get((subject, pid), {})) == [None]

    def verbalizable(self, qids: tuple[str, ...]) -> bool:
        return all(qid in self.labels for qid in qids)

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
        )


def _anchor_year(anchor: str | None) -> int | None:
    return int(anchor[:4]) if anchor else None


def _qid_number(qid: str) -> int:
    return int(qid[1:])


def _pair_order(pair: tuple[str, str]) -> tuple[int, int]:
    return (_qid_number(pair[0]), int(pair[1][1:]))
