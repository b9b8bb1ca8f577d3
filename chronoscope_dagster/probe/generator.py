"""Seeded generation of probe items from the scenario templates, so the probe can rank systems
and not only flag one.

Item k of a corpus takes its type round-robin (as-of, current, prospective) and draws
everything else from its own generator, seeded by (seed, k): the template, the names, the
relative phrase, the session instants and the question instant. Answers are balanced by
construction: the items of a type alternate between a yes and a no answer (yes/no kinds) and
between the new and the old value holding (switch kinds), and the question instant is then
drawn among the days that give that answer with at least two days to spare. Golds go through
the same evaluation as the authored corpus. The same seed and size give byte-identical items.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import yaml

from chronoscope_dagster.probe.corpus import PROBE_DATA_DIR, Corpus, CorpusError
from chronoscope_dagster.probe.dates import number_word
from chronoscope_dagster.probe.longmemeval import Item, Turn
from chronoscope_dagster.probe.rules import NOW, AnswerSpec, Event, RuleError, Step, parse_step
from chronoscope_dagster.probe.scenario import PROBE_TYPES, SessionDraft, build_item
from chronoscope_dagster.probe.validate import MIN_MARGIN_DAYS, validate_items

TEMPLATES_FILE = PROBE_DATA_DIR / "templates.yaml"
FIRST_DAY = date(2024, 1, 1)
LAST_DAY = date(2026, 12, 31)
TIMES = (
    time(8, 10),
    time(9, 35),
    time(12, 40),
    time(14, 5),
    time(17, 50),
    time(19, 25),
    time(21, 15),
)
SHORT_TYPES = {
    "temporal-as-of": "asof",
    "temporal-current": "current",
    "prospective-memory": "prospective",
}
MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class Phrase:
    text: str
    rule: tuple[Step, ...]


@dataclass(frozen=True)
class Templates:
    id: str
    future: tuple[Phrase, ...]
    past: tuple[Phrase, ...]
    replies: tuple[str, ...]
    follow_ups: tuple[str, ...]
    closings: tuple[str, ...]
    switch: tuple[dict[str, Any], ...]
    deadline: tuple[dict[str, Any], ...]
    appointment: tuple[dict[str, Any], ...]
    countdown: tuple[dict[str, Any], ...]
    age: tuple[dict[str, Any], ...]
    distractors: tuple[tuple[Turn, ...], ...]


def load_templates(path: str | Path = TEMPLATES_FILE) -> Templates:
    document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))

    def phrases(key: str) -> tuple[Phrase, ...]:
        try:
            return tuple(
                Phrase(entry["text"], tuple(parse_step(step) for step in entry["rule"]))
                for entry in document[key]
            )
        except (KeyError, TypeError, RuleError) as error:
            raise CorpusError(f"{path}: {key}: {error}") from None

    def text(value: str) -> str:
        return " ".join(value.split())

    return Templates(
        id=document["id"],
        future=phrases("future"),
        past=phrases("past"),
        replies=tuple(map(text, document["replies"])),
        follow_ups=tuple(map(text, document["follow_ups"])),
        closings=tuple(map(text, document["closings"])),
        switch=tuple(document["switch"]),
        deadline=tuple(document["deadline"]),
        appointment=tuple(document["appointment"]),
        countdown=tuple(document["countdown"]),
        age=tuple(document["age"]),
        distractors=tuple(
            tuple(
                Turn(role, text(content), False)
                for turn in conversation
                for role, content in turn.items()
            )
            for conversation in document["distractors"]
        ),
    )


def rng_for(seed: int, index: int) -> random.Random:
    digest = hashlib.sha256(f"probe-generator|{seed}|{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class _Draft:
    question_type: str
    question: str
    asked_at: datetime
    sessions: list[tuple[datetime, tuple[Turn, ...], bool, str]]
    """(instant, turns, gold, key); the answer names sessions by key until they are sorted."""
    answer: dict[str, Any]


def _fill(template: str, **slots: str) -> str:
    return " ".join(template.format(**slots).split())


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _instant(rng: random.Random, day: date) -> datetime:
    return datetime.combine(day, rng.choice(TIMES), tzinfo=UTC)


def _evidence(rng: random.Random, t: Templates, said: str) -> tuple[Turn, ...]:
    return (
        Turn("user", said, True),
        Turn("assistant", rng.choice(t.replies), False),
        Turn("user", rng.choice(t.follow_ups), False),
        Turn("assistant", rng.choice(t.closings), False),
    )


def _rule_json(rule: Sequence[Step]) -> list[dict[str, Any]]:
    return [step.to_json() for step in rule]


def _resolve(rule: Sequence[Step], day: date) -> date:
    return Event(NOW, tuple(rule)).resolve({NOW: datetime.combine(day, time(), tzinfo=UTC)})


def _query_day(
    rng: random.Random, after: date, span: int, accept: Callable[[date], bool]
) -> date | None:
    days = [after + timedelta(days=n) for n in range(1, span + 1)]
    good = [day for day in days if accept(day)]
    return rng.choice(good) if good else None


def _switch(rng: random.Random, t: Templates, question_type: str, want_new: bool) -> _Draft | None:
    template = rng.choice(t.switch)
    old, new = rng.sample(template["values"], 2)
    phrase = rng.choice(t.future)
    start_day = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days - 300))
    change_day = start_day + timedelta(days=rng.randint(20, 120))
    switch_day = _resolve(phrase.rule, change_day)
    as_of = question_type == "temporal-as-of"
    reference = rng.choice(t.past) if as_of else Phrase("now", ())

    def accept(day: date) -> bool:
        at = _resolve(reference.rule, day)
        if min(abs((at - start_day).days), abs((at - switch_day).days)) < MIN_MARGIN_DAYS:
            return False
        return at > switch_day if want_new else start_day < at < switch_day

    asked = _query_day(rng, change_day, 150, accept)
    if asked is None:
        return None
    slots = {"old": old, "new": new, "when": phrase.text}
    question = _fill(template["as_of"] if as_of else template["current"], ago=reference.text)
    return _Draft(
        question_type,
        question,
        _instant(rng, asked),
        [
            (
                _instant(rng, start_day),
                _evidence(rng, t, _fill(template["start"], **slots)),
                True,
                "a",
            ),
            (
                _instant(rng, change_day),
                _evidence(rng, t, _fill(template["change"], **slots)),
                True,
                "b",
            ),
        ],
        {
            "choice": {
                "at": {NOW: _rule_json(reference.rule)},
                "options": [
                    {"value": old, "since": {"session": "a"}},
                    {"value": new, "since": {"session": "b", "rule": _rule_json(phrase.rule)}},
                ],
            }
        },
    )


def _single_event(
    rng: random.Random,
    t: Templates,
    template: Mapping[str, Any],
    question_type: str,
    answer: Callable[[list[dict[str, Any]]], dict[str, Any]],
    accept: Callable[[date, date, date], bool],
    span: int = 120,
    **slots: str,
) -> _Draft | None:
    value = rng.choice(template["values"])
    phrase = rng.choice(t.future)
    said_day = FIRST_DAY + timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days - 200))
    event_day = _resolve(phrase.rule, said_day)
    asked = _query_day(rng, said_day, span, lambda day: accept(said_day, event_day, day))
    if asked is None:
        return None
    filled = {"value": value, "when": phrase.text, **slots}
    said = _capitalise(_fill(template["say"], **filled))
    return _Draft(
        question_type,
        _capitalise(_fill(template["question"], **filled)),
        _instant(rng, asked),
        [(_instant(rng, said_day), _evidence(rng, t, said), True, "a")],
        answer(_rule_json(phrase.rule)),
    )


def _deadline(
    rng: random.Random, t: Templates, question_type: str, want_yes: bool
) -> _Draft | None:
    template = rng.choice([d for d in t.deadline if d["type"] == question_type])
    happened_wanted = want_yes == (template["yes_if"] == "happened")

    def accept(said: date, event: date, day: date) -> bool:
        return abs((event - day).days) >= MIN_MARGIN_DAYS and (event <= day) == happened_wanted

    return _single_event(
        rng,
        t,
        template,
        question_type,
        lambda rule: {
            "yes_no": {"yes_if": template["yes_if"], "event": {"session": "a", "rule": rule}}
        },
        accept,
    )


def _appointment(rng: random.Random, t: Templates) -> _Draft | None:
    return _single_event(
        rng,
        t,
        rng.choice(t.appointment),
        "prospective-memory",
        lambda rule: {"date": {"session": "a", "rule": rule}},
        lambda said, event, day: day < event,
    )


def _countdown(rng: random.Random, t: Templates) -> _Draft | None:
    return _single_event(
        rng,
        t,
        rng.choice(t.countdown),
        "prospective-memory",
        lambda rule: {
            "count": {"unit": "days", "start": {NOW: []}, "end": {"session": "a", "rule": rule}}
        },
        lambda said, event, day: day < event,
    )


def _age(rng: random.Random, t: Templates) -> _Draft | None:
    template = rng.choice(t.age)
    age_word = rng.choice(template["ages"])
    base = number_word(age_word)
    if base is None:
        raise CorpusError(f"templates: age {age_word!r} is not a number in words")
    return _single_event(
        rng,
        t,
        template,
        "temporal-current",
        lambda rule: {
            "count": {"unit": "weeks", "base": base, "start": {"session": "a"}, "end": {NOW: []}}
        },
        lambda said, event, day: (day - said).days >= 7,
        span=200,
        animal=rng.choice(template["animals"]),
        age=age_word,
    )


def _draft(rng: random.Random, t: Templates, question_type: str, flip: bool) -> _Draft | None:
    if question_type == "temporal-as-of":
        return _switch(rng, t, question_type, flip)
    if question_type == "temporal-current":
        kind = rng.choice(("switch", "deadline", "age"))
        if kind == "switch":
            return _switch(rng, t, question_type, flip)
        return _deadline(rng, t, question_type, flip) if kind == "deadline" else _age(rng, t)
    kind = rng.choice(("deadline", "appointment", "countdown"))
    if kind == "deadline":
        return _deadline(rng, t, question_type, flip)
    return _appointment(rng, t) if kind == "appointment" else _countdown(rng, t)


def _with_distractor(rng: random.Random, t: Templates, draft: _Draft) -> list[SessionDraft]:
    first = min(at for at, *_ in draft.sessions)
    window = int((draft.asked_at - first).total_seconds() // 60)
    at = first + timedelta(minutes=rng.randint(1, max(1, window - 1)))
    return [*draft.sessions, (at, rng.choice(t.distractors), False, "d")]


def generate_item(index: int, seed: int, templates: Templates) -> tuple[Item, AnswerSpec]:
    """Item ``index`` (0-based) of the generated corpus and its answer spec."""
    question_type = PROBE_TYPES[index % len(PROBE_TYPES)]
    rng = rng_for(seed, index)
    flip = (index // len(PROBE_TYPES)) % 2 == 0
    for _ in range(MAX_ATTEMPTS):
        draft = _draft(rng, templates, question_type, flip)
        if draft is not None:
            break
    else:
        raise CorpusError(
            f"generator: item {index} found no valid scenario in {MAX_ATTEMPTS} draws"
        )
    sessions = sorted(_with_distractor(rng, templates, draft), key=lambda s: (s[0], s[3]))
    numbers = {key: number for number, (_, _, _, key) in enumerate(sessions, 1)}
    answer = _renumber(draft.answer, numbers)
    question_id = f"gen-{SHORT_TYPES[question_type]}-{index + 1:04d}"
    return build_item(
        question_id,
        question_type,
        draft.question,
        draft.asked_at,
        [SessionDraft(at, turns, gold) for at, turns, gold, _ in sessions],
        answer,
    )


def _renumber(value: Any, numbers: Mapping[str, int]) -> Any:
    if isinstance(value, dict):
        return {
            key: numbers[inner] if key == "session" else _renumber(inner, numbers)
            for key, inner in value.items()
        }
    if isinstance(value, list):
        return [_renumber(inner, numbers) for inner in value]
    return value


def generate(
    n: int = 120, seed: int = 0, templates: str | Path | Templates = TEMPLATES_FILE
) -> Corpus:
    """``n`` generated items, validated; refused if any breaks a corpus rule."""
    loaded = templates if isinstance(templates, Templates) else load_templates(templates)
    items, specs = [], {}
    for index in range(n):
        item, spec = generate_item(index, seed, loaded)
        items.append(item)
        specs[item.question_id] = spec
    corpus = Corpus(f"{loaded.id}-seed{seed}-n{n}", tuple(items), specs)
    problems = validate_items(corpus.items, corpus.specs)
    if problems:
        raise CorpusError(f"generated corpus {corpus.id} breaks {len(problems)} rule(s):", problems)
    return corpus
