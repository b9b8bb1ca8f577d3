"""Judging a probe answer: a deterministic checker, and optionally an LLM judge; both verdicts
are recorded, and the checker's is the one reports score by (it needs no model and cannot drift).

The checker compares what it can read in a free-text answer with the gold's kind:

- ``date``: any date written in the answer (any common format; a date without a year takes the
  year nearest the gold) within ±1 calendar day of the gold;
- ``count``: any number (digits or words, not inside a date) carrying the gold's unit, or a
  bare number when the answer names no unit at all, within ±1 unit of the gold;
- ``yes_no``: the answer's side (its leading yes/no, else its first yes/no unless it says it
  cannot tell) equals the gold's; the date that explains the gold is not required;
- ``choice``: the first option the answer names is the gold one;
- ``text`` (an upstream item with no spec): the normalised gold occurs in the answer.

An empty or failed answer is wrong for the checker and is not sent to the LLM judge.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from chronoscope_dagster.llm.base import ChatRequest, Decoding
from chronoscope_dagster.llm.registry import ModelSpec
from chronoscope_dagster.llm.session import open_chat
from chronoscope_dagster.probe.agents import Completer
from chronoscope_dagster.probe.dates import NUMBER_WORD, date_mentions, extract_dates, number_word
from chronoscope_dagster.probe.longmemeval import Item, parse_date
from chronoscope_dagster.probe.rules import AnswerSpec, Gold
from chronoscope_dagster.probe.scenario import PROBE_TYPES, gold_for

DATE_TOLERANCE_DAYS = 1
COUNT_TOLERANCE = 1

_LEADING = re.compile(r"^\W*(yes|yeah|yep|correct|no|nope|not yet)\b", re.IGNORECASE)
_ANY_SIDE = re.compile(r"\b(yes|no|not yet)\b", re.IGNORECASE)
_CANNOT_TELL = re.compile(
    r"\b(?:i don'?t know|i do not know|not sure|no information|no record"
    r"|can(?:'|no)t (?:tell|say|determine)|unable to|not mentioned|no way to)\b",
    re.IGNORECASE,
)
_UNIT_WORD = r"(?P<unit>days?|weeks?|months?|years?|hours?|times?)"
_COUNT = re.compile(rf"\b(?P<n>\d+|{NUMBER_WORD})(?:[\s-]+{_UNIT_WORD})?\b", re.IGNORECASE)
_GOLD_COUNT = re.compile(
    rf"^\s*(?P<n>\d+|{NUMBER_WORD})(?:\s+{_UNIT_WORD})?\s*\.?\s*$", re.IGNORECASE
)


@dataclass(frozen=True)
class Check:
    correct: bool
    kind: str
    detail: str


def _side(text: str) -> bool | None:
    match = _LEADING.match(text)
    if not match and _CANNOT_TELL.search(text):
        return None
    match = match or _ANY_SIDE.search(text)
    if not match:
        return None
    return match.group(1).lower() in ("yes", "yeah", "yep", "correct")


def _normalise(text: str) -> str:
    text = re.sub(r"[^\w\s]", " ", text.lower())
    text = re.sub(r"^the\s+|\s+the\s+", " ", f" {text} ")
    return " ".join(text.split())


def gold_from_text(answer: str | int | float, near: date) -> Gold:
    """The gold's kind read from its text, for items without an answer spec."""
    text = str(answer).strip()
    side = _side(text) if _LEADING.match(text) else None
    if side is not None:
        return Gold("yes_no", text, yes=side)
    count = _GOLD_COUNT.match(text)
    if count:
        n = count["n"]
        value = int(n) if n.isdigit() else number_word(n)
        unit = (count["unit"] or "").lower()
        unit = unit if not unit or unit.endswith("s") else unit + "s"
        return Gold("count", text, count=value, unit=unit)
    dates = extract_dates(text, near)
    if dates and re.search(r"\d{4}", text):
        return Gold("date", text, day=dates[0])
    return Gold("text", text)


def gold_of(item: Item, spec: AnswerSpec | None = None) -> Gold:
    if spec is not None:
        return gold_for(item, spec)
    asked = parse_date(item.question_date)
    return gold_from_text(item.answer, asked.date() if asked else date(2000, 1, 1))


def check_answer(response: str, gold: Gold) -> Check:
    """The deterministic verdict on one free-text answer."""
    if not response.strip():
        return Check(False, gold.kind, "empty answer")
    if gold.kind == "date" and gold.day is not None:
        found = extract_dates(response, gold.day)
        near = [d for d in found if abs((d - gold.day).days) <= DATE_TOLERANCE_DAYS]
        if near:
            return Check(
                True, "date", f"{near[0].isoformat()} within ±1 day of {gold.day.isoformat()}"
            )
        seen = ", ".join(d.isoformat() for d in found) or "no date"
        return Check(False, "date", f"{seen}; expected {gold.day.isoformat()} ±1 day")
    if gold.kind == "count" and gold.count is not None:
        numbers = []
        dates = [(m.start, m.start + len(m.text)) for m in date_mentions(response)]
        for match in _COUNT.finditer(response):
            if any(start < match.end() and match.start() < end for start, end in dates):
                continue
            n = match["n"]
            value = int(n) if n.isdigit() else number_word(n)
            unit = (match["unit"] or "").lower()
            if value is not None:
                numbers.append((value, unit if not unit or unit.endswith("s") else unit + "s"))
        any_unit = any(unit for _, unit in numbers)
        usable = [v for v, u in numbers if (u == gold.unit if any_unit else True) or not gold.unit]
        hit = [v for v in usable if abs(v - gold.count) <= COUNT_TOLERANCE]
        if hit:
            return Check(True, "count", f"{hit[0]} within ±1 of {gold.count} {gold.unit}".strip())
        seen = ", ".join(map(str, usable)) or "no count"
        return Check(False, "count", f"{seen}; expected {gold.count} {gold.unit} ±1".strip())
    if gold.kind == "yes_no" and gold.yes is not None:
        side = _side(response)
        if side is None:
            return Check(False, "yes_no", "takes no side")
        expected = "yes" if gold.yes else "no"
        return Check(
            side == gold.yes, "yes_no", f"says {'yes' if side else 'no'}, expected {expected}"
        )
    if gold.kind == "choice" and gold.choice is not None:
        said = _normalise(response)
        positions = []
        for option in gold.options:
            match = re.search(rf"\b{re.escape(_normalise(option))}\b", said)
            if match:
                positions.append((match.start(), option))
        if not positions:
            return Check(False, "choice", f"names no option; expected {gold.choice}")
        first = min(positions)[1]
        return Check(first == gold.choice, "choice", f"names {first} first; expected {gold.choice}")
    expected = _normalise(gold.text)
    found = bool(expected) and expected in _normalise(response)
    return Check(found, "text", "contains the gold" if found else "does not contain the gold")


TEMPORAL_TEMPLATE = """\
You are grading an answer to a question about the user's own earlier conversations, where \
time matters.

Question: {question}
Correct answer: {answer}
Response to grade: {response}

Say yes if the response gives the correct answer or an equivalent one. Dates count as equal \
when they are at most one calendar day apart; numbers of days, weeks or months count as equal \
when they are at most one unit apart. For a yes-or-no question the response must take the \
same side as the correct answer; the date given with the correct answer only explains it. Say \
no if the response gives a different answer, only part of what the answer needs, several \
conflicting answers, or no answer.

Reply with yes or no only."""

STANDARD_TEMPLATE = """\
You are grading an answer to a question about the user's own earlier conversations.

Question: {question}
Correct answer: {answer}
Response to grade: {response}

Say yes if the response contains the correct answer or an equivalent one. Say no if it gives \
a different answer or only part of what the answer needs.

Reply with yes or no only."""

ABSTENTION_TEMPLATE = """\
You are grading an answer to a question that cannot be answered from the user's earlier \
conversations.

Question: {question}
Why it cannot be answered: {answer}
Response to grade: {response}

Say yes if the response recognises that it cannot answer, for example by saying the \
information is missing or that only related information is known. Say no if it gives an \
answer as if it knew.

Reply with yes or no only."""

JUDGE_TEMPLATES = {
    "temporal": TEMPORAL_TEMPLATE,
    "standard": STANDARD_TEMPLATE,
    "abstention": ABSTENTION_TEMPLATE,
}
TEMPORAL_TYPES = (*PROBE_TYPES, "temporal-reasoning")
JUDGE_DECODING = Decoding(max_new_tokens=8)


def template_name(item: Item) -> str:
    if item.is_abstention:
        return "abstention"
    return "temporal" if item.question_type in TEMPORAL_TYPES else "standard"


def judge_templates_fingerprint() -> str:
    """SHA-256 over every template, each rendered with fixed placeholders and prefixed by its
    name, line endings normalised: any wording change changes it."""
    rendered = [
        f"{name}\n"
        + template.format(question="<QUESTION>", answer="<ANSWER>", response="<RESPONSE>")
        for name, template in sorted(JUDGE_TEMPLATES.items())
    ]
    text = "\n\n".join(rendered).replace("\r\n", "\n")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class JudgeVerdict:
    correct: bool | None
    """None: not judged (the answer failed, or the judge's call did)."""
    reply: str | None
    error: str | None = None


class LLMJudge:
    """A model asked, per answer, whether it matches the gold under the temporal criteria;
    correct when its reply says yes. Calls go through ``chat`` (a CachedChat, so they are
    cached). A reference judge (the registry's ``oracle``) answers the checker's verdict."""

    def __init__(
        self, chat: Completer, decoding: Decoding = JUDGE_DECODING, name: str = "judge"
    ) -> None:
        self.chat = chat
        self.decoding = decoding
        self.name = name

    def request(self, item: Item, response: str, check: Check) -> ChatRequest:
        template = JUDGE_TEMPLATES[template_name(item)]
        prompt = template.format(question=item.question, answer=item.answer, response=response)
        return ChatRequest((("user", prompt),), gold="yes" if check.correct else "no")

    def judge(self, cases: Sequence[tuple[Item, str, str | None, Check]]) -> list[JudgeVerdict]:
        """One verdict per (item, answer, answer error, checker verdict)."""
        verdicts: list[JudgeVerdict | None] = []
        requests, positions = [], []
        for position, (item, response, error, check) in enumerate(cases):
            if error:
                verdicts.append(JudgeVerdict(None, None, "answer failed"))
            elif not response.strip():
                verdicts.append(JudgeVerdict(False, None, "empty answer"))
            else:
                verdicts.append(None)
                requests.append(self.request(item, response, check))
                positions.append(position)
        if requests:
            completions = self.chat.complete(requests, self.decoding)
            for position, completion in zip(positions, completions, strict=True):
                if completion.error or completion.text is None:
                    verdicts[position] = JudgeVerdict(None, None, completion.error or "no reply")
                else:
                    reply = completion.text.strip()
                    said_yes = bool(re.search(r"\byes\b", reply.lower()))
                    verdicts[position] = JudgeVerdict(said_yes, reply)
        return [v for v in verdicts if v is not None]


@contextmanager
def judge_for_model(spec: ModelSpec, cache_path: str | Path | None) -> Iterator[LLMJudge]:
    """An LLM judge over a registry model behind the on-disk response cache, closed on
    leaving."""
    with open_chat(spec, cache_path) as chat:
        yield LLMJudge(chat, name=spec.name)
