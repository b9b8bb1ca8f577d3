"""Small pieces every family uses."""

from __future__ import annotations

import random
from collections.abc import Iterator

from chronoscope_dagster.chains.facts import SnapshotFacts
from chronoscope_dagster.chains.model import Turn


def askable_pairs(facts: SnapshotFacts, templates) -> Iterator[tuple[str, str, str]]:
    """(subject, how to name it, property) for every pair a question can be asked about:
    the subject is nameable and the property has templates; in the facts' order."""
    for subject, pids in facts.pids_by_subject.items():
        name = facts.subject_name(subject)
        if name is None:
            continue
        for pid in pids:
            if pid in templates.properties:
                yield subject, name, pid


def pick(templates, rng: random.Random, pid: str, slot: str, **values: object) -> str:
    """A phrasing of ``slot`` for ``pid``, drawn from the item's generator, rendered."""
    phrasings = templates.phrasings(pid, slot)
    return templates.render(pid, slot, rng.randrange(len(phrasings)), **values)


def span_turn(
    question: str,
    pid: str,
    subject: str,
    name: str,
    years: tuple[int, int],
    answer: str,
    kind: str,
    asked_qid: str | None = None,
) -> Turn:
    """A yes/no or count turn over the whole years ``years[0]``..``years[1]``."""
    first, last = years
    return Turn(
        question=question, pid=pid, subject_qid=subject, subject_label=name,
        gold_qids=(), gold_labels=(), gold_aliases=(), answer=answer, canonical_qid=None,
        scope_year=first, scope_anchor=f"{first}-{last}", is_explicit=True, answer_kind=kind,
        scope_end_year=last, asked_qid=asked_qid,
    )  # fmt: skip
