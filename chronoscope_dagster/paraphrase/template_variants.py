"""Template variants: the deterministic paraphraser ``templates``, which rewrites a question in
another phrasing of the same template slot, filled with the same values.

Every slot of the templates file holds interchangeable phrasings that ask the same question
with the same polarity, so another phrasing of the slot asks what the original asks in other
words. A turn does not record which phrasing produced its question; it is recovered here
(``recover``) by matching the question against every phrasing of the turn's property and the
generic slots, each read as literal text around placeholders that capture text (a year
captures digits). Every way of filling a phrasing that renders the question exactly is a
reading of it; a reading stands only if the names it captured are the turn's (its subject's
for ``{subject}``, one of its entities' for ``{value}``; ``fits``), which settles where
"Was {subject} {value} throughout ...?" splits "Andrzej Duda President of Poland". A captured
name keeps the article ``Articles`` gave it ("the United Kingdom", "a public company"):
``Articles.in_text`` leaves a phrase that starts with an article as it is, so the other
phrasing renders it unchanged; an article capitalized at the start of a question is put back
in lower case where ``Articles`` would have added it ("The Hague" stays).

The paraphrased subset's seed chooses, per (seed, chain, turn), the order in which the other
phrasings of the slot are tried (``rng_for``; a wording another turn of the chain already
got is tried last, so a chain does not ask the same words twice); the first that passes the
answer-equivalence filter (``turn_problems``) is the paraphrase. A question no phrasing reads
is rejected as ``no_matching_phrasing``, one read by phrasings of two slots as
``ambiguous_phrasing``, one whose slot renders nothing else as ``no_other_phrasing``
(``TEMPLATE_REASONS``); a question whose every variant the filter rejects keeps the filter's
reasons for the first variant tried. Same turns, same seed: same output.

Template variants are a weaker test of wording than a model's paraphrases: they vary only the
wording the templates already vary, from which the benchmark's own questions are drawn.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import groupby
from typing import Any

from chronoscope_dagster.chains.rng import rng_for
from chronoscope_dagster.chains.templates import (
    GENERIC_SLOTS,
    NAMED_SLOTS,
    Templates,
    default_templates,
)
from chronoscope_dagster.paraphrase.filter import ParaphraseTurn, fold, turn_problems
from chronoscope_dagster.paraphrase.rewrite import (
    ParaphraseCounts,
    ParaphraseResult,
    count_results,
)

TEMPLATES_PARAPHRASER = "templates"
"""The paraphraser's name (``BenchmarkSettings.paraphraser``, ``--paraphraser``)."""
TEMPLATE_REASONS = ("no_matching_phrasing", "ambiguous_phrasing", "no_other_phrasing")
"""Why a question got no template variant to put to the filter."""
GENERIC = "generic"
"""The owner of the generic slots (``Reading.owner``), where a property slot's is its PID."""
_YEAR_SLOTS = frozenset({"year", "year2"})
_YEAR = re.compile(r"-?\d+")
_ARTICLES = ("The ", "A ", "An ")
_LOWER_ARTICLES = ("the ", "a ", "an ")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)$")


@dataclass(frozen=True)
class Reading:
    """One way a phrasing renders a question: ``owner`` is a PID or ``GENERIC``, ``index``
    the phrasing's place in the slot, ``values`` the text of each placeholder."""

    owner: str
    slot: str
    index: int
    values: tuple[tuple[str, str], ...]

    def value(self, name: str) -> str | None:
        return dict(self.values).get(name)


def uses_templates(paraphraser: str) -> bool:
    """Whether the settings' ``paraphraser`` means the template variants: when it is empty (the
    default) or ``templates``; any other value names the registry model that paraphrases.

    The default is the template variants because no registry model is known to be a capable
    paraphraser unless the user names one: the embedded CPU model, the only model every
    machine has, gets no chain past the filter, and a registry entry does not say whether its
    model can paraphrase. ``--paraphraser MODEL`` takes the model path (the embedded model
    too, by its registry name); a registry entry named ``templates`` cannot be chosen."""
    return paraphraser in ("", TEMPLATES_PARAPHRASER)


def recover(templates: Templates, pid: str, question: str) -> list[Reading]:
    """Every reading of ``question`` by a phrasing of ``pid``'s slots or of the generic slots
    (a property not in the templates has only those), in the templates' order: each renders
    ``question`` exactly."""
    found = []
    for owner, slot, index, phrasing in _phrasings(templates, pid):
        if _pattern(phrasing).fullmatch(question) is None:
            continue
        for captured in _fillings(_parts(phrasing), question, 0):
            values = {
                name: _uncapitalized(templates, owner, name, text, start == 0)
                for name, (text, start) in captured.items()
            }
            reading = Reading(owner, slot, index, tuple(sorted(values.items())))
            if render(templates, reading) == question and reading not in found:
                found.append(reading)
    return found


def render(templates: Templates, reading: Reading, index: int | None = None) -> str:
    """The question ``reading`` renders, or (``index``) another phrasing of its slot filled
    with the same values."""
    index = reading.index if index is None else index
    values: dict[str, Any] = dict(reading.values)
    if reading.owner == GENERIC:
        return templates.render_generic(reading.slot, index, **values)
    return templates.render(reading.owner, reading.slot, index, **values)


def variants(templates: Templates, reading: Reading) -> list[str]:
    """The other phrasings of ``reading``'s slot filled with its values, in the templates'
    order, without the question itself or repeats."""
    own = render(templates, reading)
    found: list[str] = []
    for index in range(len(_slot_phrasings(templates, reading.owner, reading.slot))):
        text = render(templates, reading, index)
        if text != own and text not in found:
            found.append(text)
    return found


def fits(reading: Reading, turn: ParaphraseTurn) -> bool:
    """Whether the names ``reading`` captured are the turn's: ``{subject}`` one of the
    subject's names, ``{value}`` one of an entity's (a role the turn gives no names for is
    not checked). A name is compared without the article ``Articles`` adds or a trailing
    "(description)", ignoring case and accents."""
    entities = [name for names in turn.entity_names for name in names]
    for slot, names in (("subject", turn.subject), ("value", entities)):
        text = reading.value(slot)
        if text is not None and names and not _named(text, names):
            return False
    return True


def template_paraphrase_turns(
    turns: Iterable[ParaphraseTurn | tuple[Any, ...]],
    seed: int,
    templates: Templates | None = None,
) -> tuple[list[ParaphraseResult], ParaphraseCounts]:
    """A template variant of every turn (see the module's docstring), results in (chain_id,
    turn_index) order. ``attempts`` counts the variants put to the filter (0 when there was
    none); no model is called, so ``batches`` is 0."""
    templates = templates or default_templates()
    items = sorted((ParaphraseTurn(*t) for t in turns), key=lambda t: (t.chain_id, t.turn_index))
    keys = [(t.chain_id, t.turn_index) for t in items]
    if len(set(keys)) != len(keys):
        raise ValueError("a turn is given twice")
    results: list[ParaphraseResult] = []
    for _, chain in groupby(items, key=lambda t: t.chain_id):
        asked: list[str] = []
        for turn in chain:
            result = template_variant(templates, turn, seed, asked)
            if result.paraphrase is not None:
                asked.append(result.paraphrase)
            results.append(result)
    return results, count_results(results, batches=0)


def template_variant(
    templates: Templates, turn: ParaphraseTurn, seed: int, asked: Sequence[str] = ()
) -> ParaphraseResult:
    """The template variant of one turn: the other phrasings of its slot in the order the
    generator of (``seed``, chain, turn) shuffles them, those in ``asked`` (given to other
    turns of the chain) last; the first the filter passes is the paraphrase."""
    base = ParaphraseResult(turn.chain_id, turn.turn_index, turn.question, None, 0)
    readings = [r for r in recover(templates, turn.pid, turn.question) if fits(r, turn)]
    if not readings:
        return _rejected(base, "no_matching_phrasing")
    if len({(r.owner, r.slot) for r in readings}) > 1:
        return _rejected(base, "ambiguous_phrasing")
    candidates: list[str] = []
    for reading in readings:
        candidates += [text for text in variants(templates, reading) if text not in candidates]
    if not candidates:
        return _rejected(base, "no_other_phrasing")
    rng_for(seed, "paraphrase_templates", turn.chain_id, turn.turn_index).shuffle(candidates)
    candidates.sort(key=lambda text: text in asked)
    first: tuple[str, list[str]] | None = None
    for attempt, candidate in enumerate(candidates, start=1):
        problems = turn_problems(turn, candidate)
        if not problems:
            return ParaphraseResult(
                turn.chain_id, turn.turn_index, turn.question, candidate, attempt,
                last_reply=candidate,
            )  # fmt: skip
        first = first or (candidate, problems)
    assert first is not None
    return ParaphraseResult(
        turn.chain_id, turn.turn_index, turn.question, None, len(candidates),
        reasons=tuple(first[1]), last_reply=first[0],
    )  # fmt: skip


def _rejected(base: ParaphraseResult, reason: str) -> ParaphraseResult:
    return ParaphraseResult(base.chain_id, base.turn_index, base.original, None, 0, (reason,))


def _slot_phrasings(templates: Templates, owner: str, slot: str) -> tuple[str, ...]:
    if owner == GENERIC:
        return templates.generic_phrasings(slot)
    return templates.phrasings(owner, slot)


def _phrasings(templates: Templates, pid: str) -> Iterator[tuple[str, str, int, str]]:
    owners = [(GENERIC, slot) for slot in GENERIC_SLOTS]
    if pid in templates.properties:
        owners = [(pid, slot) for slot in templates.properties[pid].slots] + owners
    for owner, slot in owners:
        for index, phrasing in enumerate(_slot_phrasings(templates, owner, slot)):
            yield owner, slot, index, phrasing


@cache
def _parts(phrasing: str) -> tuple[tuple[str, str | None], ...]:
    """A phrasing as (literal, placeholder or None) pairs, empty literals left out."""
    parts: list[tuple[str, str | None]] = []
    for literal, name, _, _ in string.Formatter().parse(phrasing):
        if literal:
            parts.append((literal, None))
        if name is not None:
            parts.append(("", name))
    return tuple(parts)


@cache
def _pattern(phrasing: str) -> re.Pattern[str]:
    """A quick test that a phrasing can read a question: literals as they are, a year as
    digits, any other placeholder as some text."""
    parts = [
        re.escape(literal) if name is None else _placeholder_pattern(name)
        for literal, name in _parts(phrasing)
    ]
    return re.compile("".join(parts), re.DOTALL)


def _placeholder_pattern(name: str) -> str:
    return _YEAR.pattern if name in _YEAR_SLOTS else ".+?"


def _fillings(
    parts: tuple[tuple[str, str | None], ...], text: str, at: int
) -> Iterator[dict[str, tuple[str, int]]]:
    """Every way ``parts`` spell ``text[at:]``: placeholder -> (its text, where it starts).
    A text placeholder ends where the next literal occurs (any of its occurrences)."""
    if not parts:
        if at == len(text):
            yield {}
        return
    (literal, name), rest = parts[0], parts[1:]
    if name is None:
        if text.startswith(literal, at):
            yield from _fillings(rest, text, at + len(literal))
        return
    if name in _YEAR_SLOTS:
        ends = [m.end()] if (m := _YEAR.match(text, at)) else []
    elif not rest:
        ends = [len(text)]
    elif rest[0][1] is None:
        ends = [i for i in range(at + 1, len(text)) if text.startswith(rest[0][0], i)]
    else:
        ends = list(range(at + 1, len(text)))
    for end in ends:
        if end > at:
            for filling in _fillings(rest, text, end):
                yield {name: (text[at:end], at), **filling}


def _uncapitalized(templates: Templates, owner: str, name: str, text: str, first: bool) -> str:
    """A captured name as it reads mid-sentence: ``Templates.render`` capitalizes an article
    ``Articles`` added at the start of a question ("The United Kingdom ..."); it is lowered
    again only where ``Articles`` would add it to the rest ("The Hague" stays)."""
    if not (first and name in NAMED_SLOTS and text.startswith(_ARTICLES)):
        return text
    article, rest = text.split(" ", 1)
    indefinite = name == "value" and owner in templates.articles.indefinite_values
    lowered = f"{article.lower()} {rest}"
    return lowered if templates.articles.in_text(rest, indefinite=indefinite) == lowered else text


def _named(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` (a captured name) is one of ``names``, as ``fits`` compares them."""
    bare = _DISAMBIGUATION.sub("", text)
    forms = {fold(text), fold(bare)}
    for article in _LOWER_ARTICLES:
        forms |= {fold(form[len(article) :]) for form in (text, bare) if form.startswith(article)}
    return any(fold(name) in forms or fold(_DISAMBIGUATION.sub("", name)) in forms
               for name in names)  # fmt: skip
