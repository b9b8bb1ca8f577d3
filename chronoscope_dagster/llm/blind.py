"""``blind``: the best knowledge-free strategy we can learn, as a reference system.

It never sees a fact. It sees what a reader of the benchmark sees of a conversation without
knowing the world: each visible turn's *shape* (family, position, answer kind, property, the
years it states or keeps, the value a yes/no question asks about, whether it names its
scope) and the answers the conversation shows. From those it learns, on chains of other
subjects, what structure alone predicts:

* yes/no and count turns: a gradient-boosted classifier over structural features (the span
  and how it moves, whether the asked value was an earlier answer or asked before and what
  was answered then, earlier answers and counts, yes/no so far);
* entity turns: a choice among the entities the conversation already holds (earlier
  answers), by a classifier scoring each candidate (how far back, same property, same
  scope, how often named); with no candidate it has nothing to say.

Its accuracy measures how far a benchmark can be passed by reading its structure: on a valid
benchmark it is at chance (yes/no about one half, counts the modal count's share, entities
close to nothing). ``cross_fitted`` computes that figure: the chains are split in two halves
by subject (no subject in both; a chain whose subjects fall in both halves is in neither),
each half answered by the model trained on the other. Deterministic for a seed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

KINDS = ("entity", "yes_no", "count")


@dataclass(frozen=True)
class Shape:
    """What a reader sees of one turn without knowing any fact."""

    family: str
    turn_index: int
    kind: str
    pid: str
    scope_year: int | None
    scope_end_year: int | None
    asked: str | None
    """The label of the value a yes/no question asks about."""
    explicit: bool


@dataclass(frozen=True)
class View:
    """A conversation as the blind system sees it at one turn: the visible turns' shapes, the
    current one last, and the answers shown for the earlier ones (none where the setting
    shows no history)."""

    shapes: tuple[Shape, ...]
    answers: tuple[str, ...]

    @property
    def current(self) -> Shape:
        return self.shapes[-1]


def _fold(text: str | None) -> str:
    return " ".join((text or "").casefold().split())


def _span(shape: Shape) -> tuple[int, int] | None:
    if shape.scope_year is None:
        return None
    return shape.scope_year, shape.scope_end_year or shape.scope_year


def _overlap(first: tuple[int, int] | None, second: tuple[int, int] | None) -> int:
    if first is None or second is None:
        return -1
    return max(0, min(first[1], second[1]) - max(first[0], second[0]) + 1)


def _relation(first: tuple[int, int] | None, second: tuple[int, int] | None) -> str:
    """How span ``second`` lies against ``first``."""
    if first is None or second is None:
        return "none"
    if first == second:
        return "same"
    if second[0] >= first[0] and second[1] <= first[1]:
        return "inside"
    if second[0] <= first[0] and second[1] >= first[1]:
        return "around"
    if _overlap(first, second):
        return "overlaps"
    return "after" if second[0] > first[1] else "before"


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def features(view: View) -> dict[str, Any]:
    """The structural features of the current turn (strings are categories)."""
    current = view.current
    earlier = view.shapes[:-1]
    answers = [_fold(answer) for answer in view.answers]
    span = _span(current)
    found: dict[str, Any] = {
        "family": current.family,
        "kind": current.kind,
        "pid": current.pid,
        "index": current.turn_index,
        "explicit": float(current.explicit),
        "history": len(earlier),
        "shown": len(answers),
        "span_len": span[1] - span[0] + 1 if span else -1,
        "prev_answer": _answer_kind(answers[-1]) if answers else "none",
        "yes_so_far": sum(answer == "yes" for answer in answers),
        "no_so_far": sum(answer == "no" for answer in answers),
    }
    if earlier:
        previous, first = earlier[-1], earlier[0]
        found["prev_kind"] = previous.kind
        found["prev_same_pid"] = float(previous.pid == current.pid)
        found["first_same_pid"] = float(first.pid == current.pid)
        found["rel_prev"] = _relation(_span(previous), span)
        found["rel_first"] = _relation(_span(first), span)
        found["overlap_prev"] = _overlap(_span(previous), span)
        found["overlap_first"] = _overlap(_span(first), span)
        if span and previous.scope_year is not None:
            found["dy_prev"] = span[0] - previous.scope_year
        if span and first.scope_year is not None:
            found["dy_first"] = span[0] - first.scope_year
        found["same_span_before"] = sum(_span(shape) == span for shape in earlier)
    if current.kind == "yes_no" and current.asked is not None:
        asked = _fold(current.asked)
        found["asked_is_first_answer"] = float(bool(answers) and answers[0] == asked)
        found["asked_is_prev_answer"] = float(bool(answers) and answers[-1] == asked)
        found["asked_in_answers"] = sum(answer == asked for answer in answers)
        before = [
            (index, shape) for index, shape in enumerate(earlier) if _fold(shape.asked) == asked
        ]
        found["asked_before"] = len(before)
        if before:
            index, shape = before[-1]
            found["asked_before_rel"] = _relation(_span(shape), span)
            found["asked_before_answer"] = answers[index] if index < len(answers) else "unseen"
        found["asked_prev"] = float(bool(earlier) and _fold(earlier[-1].asked) == asked)
    counts = [
        (number, _span(shape))
        for shape, answer in zip(earlier, answers, strict=False)
        if shape.kind == "count" and (number := _number(answer)) is not None
    ]
    if counts:
        values = [number for number, _ in counts]
        previous_count, previous_span = counts[-1]
        found["prev_count"] = previous_count
        found["max_count"] = max(values)
        found["min_count"] = min(values)
        found["counts_seen"] = len(set(values))
        for value in range(1, 6):
            found[f"count_{value}_seen"] = float(value in values)
        if previous_span and span:
            length = previous_span[1] - previous_span[0] + 1
            found["prev_span_len"] = length
            found["expected_count"] = previous_count / length * (span[1] - span[0] + 1)
    return found


def _answer_kind(answer: str) -> str:
    if answer in ("yes", "no"):
        return answer
    if _number(answer) is not None:
        return "number"
    return "entity" if answer else "none"


def candidates(view: View) -> list[tuple[str, dict[str, Any]]]:
    """The entities the conversation holds (earlier answers of entity turns, latest first),
    each with its features as an answer to the current turn."""
    current = view.current
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    times = Counter(_fold(answer) for answer in view.answers)
    for index in range(len(view.answers) - 1, -1, -1):
        answer, shape = view.answers[index], view.shapes[index]
        key = _fold(answer)
        if shape.kind != "entity" or not key or key in found:
            continue
        found[key] = (
            answer,
            {
                "family": current.family,
                "pid": current.pid,
                "index": current.turn_index,
                "explicit": float(current.explicit),
                "back": current.turn_index - shape.turn_index,
                "order": len(found),
                "same_pid": float(shape.pid == current.pid),
                "same_scope": float(_span(shape) == _span(current)),
                "cand_explicit": float(shape.explicit),
                "cand_first": float(shape.turn_index == 0),
                "times": times[key],
                "rel": _relation(_span(shape), _span(current)),
            },
        )
    return list(found.values())


class _Classifier:
    """A categorical-and-numeric classifier over feature dicts; a constant where the training
    set holds one class (or none)."""

    def __init__(self, rows: Sequence[dict[str, Any]], labels: Sequence[str], seed: int):
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.feature_extraction import DictVectorizer

        self.constant: str | None = None
        self.classes: list[str] = []
        distinct = sorted(set(labels))
        if len(distinct) < 2:
            self.constant = distinct[0] if distinct else ""
            return
        self.vectorizer = DictVectorizer(sparse=False, sort=True)
        matrix = self.vectorizer.fit_transform(rows)
        self.model = HistGradientBoostingClassifier(
            max_iter=60, learning_rate=0.2, max_leaf_nodes=15, min_samples_leaf=5,
            max_bins=64, l2_regularization=1.0, early_stopping=False, random_state=seed,
        )  # fmt: skip
        self.model.fit(matrix, np.asarray(labels))
        self.classes = [str(label) for label in self.model.classes_]

    def probabilities(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        if self.constant is not None or not rows:
            return np.ones((len(rows), max(1, len(self.classes))))
        return self.model.predict_proba(self.vectorizer.transform(rows))

    def predict(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        if self.constant is not None or not rows:
            return [self.constant or ""] * len(rows)
        picks = self.probabilities(rows).argmax(axis=1)
        return [self.classes[pick] for pick in picks]


@dataclass(frozen=True)
class Example:
    """A scored turn to learn from: its view and the gold (the answer, and every text that
    counts as it: labels and aliases of the gold values)."""

    view: View
    answer: str
    accepted: tuple[str, ...]


class BlindModel:
    """The classifiers of one training half."""

    def __init__(self, examples: Sequence[Example], seed: int):
        by_kind: dict[str, list[Example]] = {kind: [] for kind in KINDS}
        for example in examples:
            by_kind[example.view.current.kind].append(example)
        self.labels = {
            kind: _Classifier(
                [features(e.view) for e in by_kind[kind]],
                [_fold(e.answer) for e in by_kind[kind]],
                seed,
            )
            for kind in ("yes_no", "count")
        }
        rows, picked = [], []
        for example in by_kind["entity"]:
            accepted = {_fold(text) for text in example.accepted}
            for answer, row in candidates(example.view):
                rows.append(row)
                picked.append("right" if _fold(answer) in accepted else "wrong")
        self.entities = _Classifier(rows, picked, seed)

    def answer_all(self, views: Sequence[View]) -> list[str]:
        """The answers to many views, classified in one batch per kind."""
        answers = [""] * len(views)
        for kind, classifier in self.labels.items():
            picked = [index for index, view in enumerate(views) if view.current.kind == kind]
            predicted = classifier.predict([features(views[index]) for index in picked])
            for index, answer in zip(picked, predicted, strict=True):
                answers[index] = answer
        options = [
            (index, candidates(view))
            for index, view in enumerate(views)
            if view.current.kind == "entity"
        ]
        rows = [row for _, found in options for _, row in found]
        if not rows:
            return answers
        if self.entities.constant is not None:
            scores = np.full(len(rows), float(self.entities.constant == "right"))
        else:
            column = self.entities.classes.index("right")
            scores = self.entities.probabilities(rows)[:, column]
        start = 0
        for index, found in options:
            if found:
                best = int(scores[start : start + len(found)].argmax())
                answers[index] = found[best][0] if scores[start + best] > 0 else ""
            start += len(found)
        return answers


def correct(answer: str, example: Example) -> bool:
    """Whether the blind answer is the gold (texts compared case and spacing aside)."""
    return _fold(answer) in {_fold(text) for text in (example.answer, *example.accepted)}


VIEW_COLUMNS = ("family", "turn_index", "answer_kind", "pid", "scope_year", "scope_end_year",
                "asked_label", "is_explicit", "subject_qid")  # fmt: skip
"""The ``turns`` columns of a turn's shape, and its subject (which half answers it)."""
SHAPE_COLUMNS = ("chain_id", *VIEW_COLUMNS, "answer", "gold_labels", "gold_aliases")
"""The ``turns`` columns the blind system learns from."""


def shape_of(row: dict[str, Any]) -> Shape:
    return Shape(
        family=row["family"],
        turn_index=int(row["turn_index"]),
        kind=row["answer_kind"],
        pid=row["pid"],
        scope_year=row["scope_year"],
        scope_end_year=row["scope_end_year"],
        asked=row.get("asked_label"),
        explicit=bool(row["is_explicit"]),
    )


@dataclass(frozen=True)
class BlindChain:
    chain_id: str
    subjects: frozenset[str]
    rows: tuple[dict[str, Any], ...]

    def examples(self, first_scored_turn: int = 1) -> list[Example]:
        """Every scored turn as seen in gold context: each earlier turn shown with its gold."""
        shapes = [shape_of(row) for row in self.rows]
        return [
            Example(
                View(tuple(shapes[: index + 1]), tuple(row["answer"] for row in self.rows[:index])),
                row["answer"],
                (*row["gold_labels"], *row["gold_aliases"]),
            )
            for index, row in enumerate(self.rows)
            if index >= first_scored_turn
        ]


def blind_chains(turns: pa.Table) -> list[BlindChain]:
    """The chains of a ``turns`` table, by chain id."""
    by_chain: dict[str, list[dict[str, Any]]] = {}
    present = [column for column in SHAPE_COLUMNS if column in turns.column_names]
    for row in turns.select(present).to_pylist():
        by_chain.setdefault(row["chain_id"], []).append(row)
    return [
        BlindChain(
            chain_id,
            frozenset(row["subject_qid"] for row in rows),
            tuple(sorted(rows, key=lambda row: row["turn_index"])),
        )
        for chain_id, rows in sorted(by_chain.items())
    ]


def half_of(subject: str, seed: int) -> int:
    digest = hashlib.blake2b(f"{seed}:{subject}".encode(), digest_size=8).digest()
    return digest[0] & 1


def subjects_half(subjects: frozenset[str], seed: int) -> int | None:
    """The half all of a chain's subjects fall in, or None when they fall in both."""
    halves = {half_of(subject, seed) for subject in subjects}
    return halves.pop() if len(halves) == 1 else None


def answering_half(subjects: frozenset[str], seed: int) -> int:
    """The half whose model answers a chain of these subjects: the one that holds them, or,
    where they fall in both, that of the first subject by QID number."""
    half = subjects_half(subjects, seed)
    if half is not None:
        return half
    return half_of(min(subjects, key=lambda qid: int(qid[1:])), seed)


@dataclass(frozen=True)
class BlindResult:
    """Per (family, answer kind): scored turns answered out of fold, and how many right."""

    family: str
    kind: str
    turns: int
    right: int

    @property
    def accuracy(self) -> float:
        return self.right / self.turns if self.turns else 0.0


def _examples_by_half(chains: Sequence[BlindChain], seed: int) -> dict[int, list[Example]]:
    """The scored turns of the chains whose subjects fall in one half, by half."""
    halves: dict[int, list[Example]] = {0: [], 1: []}
    for chain in chains:
        half = subjects_half(chain.subjects, seed)
        if half is not None:
            halves[half].extend(chain.examples())
    return halves


def _fit(halves: dict[int, list[Example]], seed: int, threads: int) -> dict[int, BlindModel]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        return {half: BlindModel(halves[1 - half], seed) for half in (0, 1)}


def fitted_halves(
    chains: Sequence[BlindChain], seed: int, threads: int = 1
) -> dict[int, BlindModel]:
    """The model trained on each half, keyed by the half it answers (the other one), with
    ``threads`` threads for the classifiers."""
    return _fit(_examples_by_half(chains, seed), seed, threads)


def _answered_out_of_fold(turns: pa.Table, seed: int, threads: int) -> list[tuple[Example, str]]:
    """Every scored turn of the chains within one half, with the answer of the model trained
    on the other half."""
    halves = _examples_by_half(blind_chains(turns), seed)
    models = _fit(halves, seed, threads)
    return [
        pair
        for half, examples in halves.items()
        for pair in zip(examples, models[half].answer_all([e.view for e in examples]), strict=True)
    ]


def _results(answered: list[tuple[Example, str]]) -> list[BlindResult]:
    """Per (family, kind), by family then kind: turns answered and how many right."""
    totals: Counter[tuple[str, str]] = Counter()
    right: Counter[tuple[str, str]] = Counter()
    for example, answer in answered:
        key = (example.view.current.family, example.view.current.kind)
        totals[key] += 1
        right[key] += correct(answer, example)
    return [
        BlindResult(family, kind, totals[(family, kind)], right[(family, kind)])
        for family, kind in sorted(totals)
    ]


def cross_fitted(turns: pa.Table, seed: int = 0, threads: int = 1) -> list[BlindResult]:
    """The blind system's accuracy on every chain whose subjects fall in one half, answered
    by the model trained on the other half; per (family, kind), by family then kind."""
    return _results(_answered_out_of_fold(turns, seed, threads))


BLIND_COLUMNS = ("blind_turns", "blind_entity_turns", "blind_entity_acc", "blind_yes_no_turns",
                 "blind_yes_no_acc", "blind_count_turns", "blind_count_acc",
                 "blind_count_bound")  # fmt: skip
"""The validity figures of ``benchmark_stats``: scored turns the blind system answered out of
fold, its accuracy per answer kind, and the bound of its count accuracy."""
ENTITY_BOUND = 0.25
YES_NO_BOUND = 0.60
COUNT_MARGIN = 0.10
"""Above these the structure answers what knowledge should: entity turns at most 0.25 (a
choice among the conversation's entities), yes/no at most 0.60, counts at most the modal
count's share plus 0.10."""
MIN_MEASURED = 30
"""A family's figure of fewer turns of a kind is reported but not held to its bound: 7 right
of 11 yes/no turns is chance."""


def validity_figures(
    turns: pa.Table, seed: int = 0, threads: int = 1
) -> dict[str, dict[str, float | int | None]]:
    """Per family and ``overall``: the ``BLIND_COLUMNS`` (accuracies as fractions; None where
    the family has no turn of the kind) and each kind's turns (``blind_<kind>_turns``). The
    count bound is the modal count's share among the scored count turns answered, plus
    ``COUNT_MARGIN``."""
    answered = _answered_out_of_fold(turns, seed, threads)
    results = _results(answered)
    modal = _modal_shares([example for example, _ in answered])
    families = sorted({result.family for result in results})
    figures = {}
    for family in [*families, "overall"]:
        chosen = [r for r in results if family in ("overall", r.family)]
        row: dict[str, float | int | None] = {"blind_turns": sum(r.turns for r in chosen)}
        for kind in KINDS:
            of_kind = [r for r in chosen if r.kind == kind]
            n = sum(r.turns for r in of_kind)
            row[f"blind_{kind}_turns"] = n
            row[f"blind_{kind}_acc"] = round(sum(r.right for r in of_kind) / n, 4) if n else None
        share = modal.get(family)
        row["blind_count_bound"] = round(share + COUNT_MARGIN, 4) if share is not None else None
        figures[family] = row
    return figures


def _modal_shares(examples: list[Example]) -> dict[str, float]:
    """Per family and overall, the modal answer's share of the scored count turns among
    ``examples``."""
    counts: dict[str, Counter[str]] = {"overall": Counter()}
    for example in examples:
        if example.view.current.kind == "count":
            family = example.view.current.family
            counts.setdefault(family, Counter())[example.answer] += 1
            counts["overall"][example.answer] += 1
    return {
        family: max(found.values()) / sum(found.values())
        for family, found in counts.items()
        if found
    }


def bound_misses(figures: dict[str, dict[str, float | int | None]]) -> dict[str, str]:
    """Per family, each figure of at least ``MIN_MEASURED`` turns above its bound, in words."""
    misses = {}
    for family, row in figures.items():
        if family == "overall":
            continue
        found = []
        for kind, bound in (
            ("entity", ENTITY_BOUND),
            ("yes_no", YES_NO_BOUND),
            ("count", row.get("blind_count_bound")),
        ):
            value, n = row.get(f"blind_{kind}_acc"), row.get(f"blind_{kind}_turns") or 0
            if value is not None and bound is not None and n >= MIN_MEASURED and value > bound:
                found.append(f"{kind} {value:.3f} > {bound:.3f} (n={n})")
        if found:
            misses[family] = "; ".join(found)
    return misses
