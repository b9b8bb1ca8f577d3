"""The corpus contract, as checks that return problems instead of raising, so generation can
refuse a bad corpus and a blocking asset check can list every violation at once.

Rules (the ``rule`` of a :class:`Problem`):

- ``shape``: parallel session, date and id lists of equal length; roles user or assistant;
  no empty message;
- ``date_format``: the question date and every session date parse;
- ``weekday``: a weekday label, where written, is the date's weekday;
- ``chronological``: sessions in time order (equal instants allowed);
- ``before_question``: every session strictly before the question;
- ``unique_id``: question ids unique across items, session ids unique within an item;
- ``gold_sessions``: at least one gold session, each one in the haystack;
- ``evidence_turn``: every gold session marks an evidence turn (``has_answer``), and no turn
  outside the gold sessions is marked;
- ``date_like``: no question and no message holds date-like text (see ``dates``);
- ``question_type``: one of the allowed types, when a list is given;
- ``empty`` (of a whole corpus, ``Corpus.validate``; its item id is the corpus id): at
  least one item;
- with answer specs: ``derivation`` (every item has one, it names only gold sessions, and
  evaluating it against the item's timestamps gives the item's answer) and ``ambiguous`` (a
  yes/no or choice decision at least two days from its boundary, so neither the ±1-day
  tolerance nor the time of day can flip it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from chronoscope_dagster.probe.dates import date_mentions
from chronoscope_dagster.probe.longmemeval import (
    Item,
    UnparseableDate,
    label_matches,
    parse_date,
    weekday_label,
)
from chronoscope_dagster.probe.rules import AnswerSpec, anchors
from chronoscope_dagster.probe.scenario import PROBE_TYPES, gold_for

MIN_MARGIN_DAYS = 2
RULES = (
    "shape",
    "date_format",
    "weekday",
    "chronological",
    "before_question",
    "unique_id",
    "gold_sessions",
    "evidence_turn",
    "date_like",
    "question_type",
    "derivation",
    "ambiguous",
)


@dataclass(frozen=True)
class Problem:
    item_id: str
    rule: str
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.item_id}: {self.rule}: {self.detail}"


def validate_items(
    items: Sequence[Item],
    specs: Mapping[str, AnswerSpec] | None = None,
    *,
    types: Iterable[str] | None = PROBE_TYPES,
) -> list[Problem]:
    """Every violation in ``items``; ``specs`` (question id -> answer spec) adds the
    derivation checks, ``types=None`` allows any question type (upstream files)."""
    allowed = None if types is None else set(types)
    problems: list[Problem] = []
    counts = Counter(item.question_id for item in items)
    for question_id, count in sorted(counts.items()):
        if count > 1:
            problems.append(Problem(question_id, "unique_id", f"question id used {count} times"))
    for item in items:
        problems += _check_item(item, allowed)
        if specs is not None:
            problems += _check_derivation(item, specs.get(item.question_id))
    return problems


def _check_item(item: Item, allowed: set[str] | None) -> list[Problem]:
    out: list[Problem] = []

    def problem(rule: str, detail: str) -> None:
        out.append(Problem(item.question_id, rule, detail))

    n = len(item.haystack_sessions)
    if not len(item.haystack_dates) == len(item.haystack_session_ids) == n:
        problem(
            "shape",
            f"{n} sessions, {len(item.haystack_dates)} dates, "
            f"{len(item.haystack_session_ids)} session ids",
        )
    for s, session in enumerate(item.haystack_sessions):
        for t, turn in enumerate(session):
            if turn.role not in ("user", "assistant"):
                problem("shape", f"haystack_sessions[{s}][{t}]: role {turn.role!r}")
            if not turn.content.strip():
                problem("shape", f"haystack_sessions[{s}][{t}]: empty message")
    if allowed is not None and item.question_type not in allowed:
        problem("question_type", f"{item.question_type!r} is not one of {sorted(allowed)}")

    question_at = parse_date(item.question_date)
    if question_at is None:
        problem(
            "date_format",
            str(UnparseableDate(item.question_id, "question_date", item.question_date)),
        )
    fields = [("question_date", item.question_date, question_at)]
    instants = []
    for index, value in enumerate(item.haystack_dates):
        instant = parse_date(value)
        if instant is None:
            problem(
                "date_format",
                str(UnparseableDate(item.question_id, f"haystack_dates[{index}]", value)),
            )
        fields.append((f"haystack_dates[{index}]", value, instant))
        instants.append(instant)
    for name, value, instant in fields:
        label = weekday_label(value)
        if instant is not None and label is not None and not label_matches(label, instant):
            problem("weekday", f"{name} {value!r}: the date is a {instant:%A}, not {label}")
    for index in range(1, len(instants)):
        earlier, later = instants[index - 1], instants[index]
        if earlier is not None and later is not None and later < earlier:
            problem(
                "chronological",
                f"haystack_dates[{index}] {item.haystack_dates[index]!r} is before "
                f"haystack_dates[{index - 1}] {item.haystack_dates[index - 1]!r}",
            )
    if question_at is not None:
        for index, instant in enumerate(instants):
            if instant is not None and instant >= question_at:
                problem(
                    "before_question",
                    f"haystack_dates[{index}] {item.haystack_dates[index]!r} is not before "
                    f"the question date {item.question_date!r}",
                )

    for session_id, count in sorted(Counter(item.haystack_session_ids).items()):
        if count > 1:
            problem("unique_id", f"session id {session_id!r} used {count} times")
    if not item.answer_session_ids:
        problem("gold_sessions", "no gold session")
    gold = set(item.answer_session_ids)
    for session_id in item.answer_session_ids:
        if session_id not in item.haystack_session_ids:
            problem("gold_sessions", f"gold session {session_id!r} is not in the haystack")
    for session_id, session in zip(item.haystack_session_ids, item.haystack_sessions, strict=False):
        marked = any(turn.has_answer for turn in session)
        if session_id in gold and not marked:
            problem("evidence_turn", f"gold session {session_id!r} marks no evidence turn")
        if session_id not in gold and marked:
            problem("evidence_turn", f"session {session_id!r} is not gold but marks evidence")

    for mention in date_mentions(item.question):
        problem("date_like", f"question: {mention.rule} {mention.text!r}")
    for s, session in enumerate(item.haystack_sessions):
        for t, turn in enumerate(session):
            for mention in date_mentions(turn.content):
                problem(
                    "date_like", f"haystack_sessions[{s}][{t}]: {mention.rule} {mention.text!r}"
                )
    return out


def _check_derivation(item: Item, spec: AnswerSpec | None) -> list[Problem]:
    if spec is None:
        return [Problem(item.question_id, "derivation", "no answer spec")]
    out = []
    gold_ids = set(item.answer_session_ids)
    for anchor in anchors(spec):
        if anchor not in gold_ids:
            out.append(
                Problem(
                    item.question_id,
                    "derivation",
                    f"the answer depends on {anchor!r}, not a gold session",
                )
            )
    try:
        gold = gold_for(item, spec)
    except (UnparseableDate, KeyError, ValueError) as error:
        return [*out, Problem(item.question_id, "derivation", f"cannot evaluate: {error}")]
    if str(item.answer) != gold.text:
        out.append(
            Problem(
                item.question_id,
                "derivation",
                f"answer {item.answer!r} differs from the derived {gold.text!r}",
            )
        )
    if gold.kind == "choice" and gold.choice is None:
        out.append(Problem(item.question_id, "derivation", "no option holds on the asked day"))
    if gold.margin_days is not None and gold.margin_days < MIN_MARGIN_DAYS:
        out.append(
            Problem(
                item.question_id,
                "ambiguous",
                f"the decision is {gold.margin_days} day(s) from its boundary "
                f"(at least {MIN_MARGIN_DAYS} needed)",
            )
        )
    return out
