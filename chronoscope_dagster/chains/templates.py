"""Question templates (``data/templates/<language>.yaml``): typed loading and validation.

The file is validated as it is loaded; `TemplateError` lists every problem found. A name put
in a question takes its article here and nowhere else (`Articles`, from the file's
``articles``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from chronoscope_dagster.data import DATA_DIR
from chronoscope_dagster.wikidata.properties import default_catalog

TEMPLATES_DIR = DATA_DIR / "templates"
MIN_PHRASINGS = 3
SUBJECT_KINDS = frozenset({"country", "person", "organization", "place", "team", "thing"})
PROPERTY_FIELDS = ("surface", "plural", "subject_kind")
KEYWORDS_FIELD = "keywords"
PROPERTY_SLOTS: dict[str, frozenset[str]] = {
    "explicit_year": frozenset({"subject", "year"}),
    "explicit_date": frozenset({"subject", "date"}),
    "timeless": frozenset({"subject"}),
    "followup": frozenset(),
    "followup_then": frozenset(),
    "scope_switch": frozenset({"year"}),
    "interval_yes_no": frozenset({"subject", "value", "year", "year2"}),
    "interval_change": frozenset({"subject", "year", "year2"}),
    "count": frozenset({"subject", "year", "year2"}),
    "cross_entity": frozenset({"subject"}),
    "reintroduce": frozenset({"subject"}),
    "about_previous": frozenset(),
}
UNNAMED_SLOTS = frozenset({"interval_yes_no"})
"""Slots whose phrasings may name the property through the value alone; every other phrasing
names it by a keyword, never by reference ("who held that office?" after a question on another
property), and a paraphrase must keep one."""
GENERIC_SLOTS: dict[str, frozenset[str]] = {
    "scope_switch": frozenset({"year"}),
    "span_switch": frozenset({"year", "year2"}),
    "throughout_switch": frozenset({"year", "year2"}),
    "narrative_last": frozenset({"year"}),
}

TOP_LEVEL_KEYS = frozenset({"language", "properties", "generic", "articles"})
NAMED_SLOTS = ("subject", "value")
ARTICLE_LISTS = (
    "heads", "heads_before_preposition", "prepositions", "the", "bare", "indefinite_starts",
    "a_before", "indefinite_values",
)  # fmt: skip
_LEADING_ARTICLES = ("the ", "a ", "an ")

_LETTERS = re.compile(r"[^\W\d_]+")
_PLACEHOLDER_MARK = "\x00"
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)$")


class TemplateError(ValueError):
    """A template file is malformed; `problems` lists every problem found."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = tuple(problems)
        listing = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"{len(problems)} template problem(s) in {source}:\n{listing}")


@dataclass(frozen=True)
class PropertyTemplates:
    pid: str
    surface: str
    plural: str
    subject_kind: str
    slots: dict[str, tuple[str, ...]]
    keywords: tuple[tuple[str, ...], ...] = ()
    """Words that name the property, each entry a tuple of alternatives: a paraphrase of a
    question that uses one must keep one (``paraphrase.filter``)."""


@dataclass(frozen=True)
class Articles:
    """The article a label takes in running text; the rule is stated beside ``articles`` in
    the templates file. Word lists are casefolded, ``the``/``bare`` hold whole labels."""

    heads: frozenset[str] = frozenset()
    heads_before_preposition: frozenset[str] = frozenset()
    prepositions: frozenset[str] = frozenset()
    the: frozenset[str] = frozenset()
    bare: frozenset[str] = frozenset()
    indefinite_starts: tuple[str, ...] = ()
    a_before: tuple[str, ...] = ()
    indefinite_values: frozenset[str] = frozenset()

    @classmethod
    def from_raw(cls, raw: dict[str, list[str]]) -> Articles:
        def folded(key: str) -> tuple[str, ...]:
            return tuple(entry.casefold() for entry in raw.get(key, ()))

        return cls(
            heads=frozenset(folded("heads")),
            heads_before_preposition=frozenset(folded("heads_before_preposition")),
            prepositions=frozenset(folded("prepositions")),
            the=frozenset(raw.get("the", ())),
            bare=frozenset(raw.get("bare", ())),
            indefinite_starts=tuple(f"{start} " for start in folded("indefinite_starts")),
            a_before=folded("a_before"),
            indefinite_values=frozenset(raw.get("indefinite_values", ())),
        )

    def in_text(self, label: str, *, indefinite: bool = False) -> str:
        """``label`` as a noun phrase mid-sentence: a name with "the" when it takes one, or
        (``indefinite``: what a subject is or serves as) a common noun with "a"/"an"."""
        if indefinite:
            return f"{self._a_or_an(label)} {label}" if self._common_noun(label) else label
        return f"the {label}" if self.takes_the(label) else label

    def takes_the(self, label: str) -> bool:
        if label in self.the:
            return True
        if label in self.bare:
            return False
        words = _words(_DISAMBIGUATION.sub("", label))
        if len(words) < 2 or not label[0].isupper() or words[0].casefold() == "the":
            return False
        folded = [word.casefold() for word in words]
        before = self._preposition_at(folded)
        return folded[-1] in self.heads or (
            before is not None and folded[before - 1] in self.heads | self.heads_before_preposition
        )

    def _common_noun(self, label: str) -> bool:
        words = _words(label)
        folded = [word.casefold() for word in words]
        if not words or folded[0] in ("the", "a", "an"):
            return False
        head = (self._preposition_at(folded) or len(words)) - 1
        return words[head][:1].islower() or label.casefold().startswith(self.indefinite_starts)

    def _preposition_at(self, folded: list[str]) -> int | None:
        """Where the first preposition of a label is (not its first word), or None."""
        return next((i for i, word in enumerate(folded) if i and word in self.prepositions), None)

    def _a_or_an(self, label: str) -> str:
        folded = label.casefold()
        return "an" if folded[:1] in "aeiou" and not folded.startswith(self.a_before) else "a"


def _words(label: str) -> list[str]:
    return [word.strip(",;:") for word in label.split()]


@dataclass(frozen=True)
class Templates:
    language: str
    properties: dict[str, PropertyTemplates]
    generic: dict[str, tuple[str, ...]]
    articles: Articles = Articles()

    def phrasings(self, pid: str, slot: str) -> tuple[str, ...]:
        return self.properties[pid].slots[slot]

    def render(self, pid: str, slot: str, index: int, **values: object) -> str:
        """Fill phrasing `index` of a property slot; `values` must be exactly its placeholders."""
        text = _fill(
            f"{pid}.{slot}",
            PROPERTY_SLOTS[slot],
            self.phrasings(pid, slot)[index],
            {name: self._in_text(pid, name, value) for name, value in values.items()},
        )
        return text[0].upper() + text[1:] if text.startswith(_LEADING_ARTICLES) else text

    def _in_text(self, pid: str, slot: str, value: object) -> object:
        if slot not in NAMED_SLOTS or not isinstance(value, str) or not value:
            return value
        indefinite = slot == "value" and pid in self.articles.indefinite_values
        return self.articles.in_text(value, indefinite=indefinite)

    def generic_phrasings(self, slot: str) -> tuple[str, ...]:
        return self.generic[slot]

    def render_generic(self, slot: str, index: int, **values: object) -> str:
        """Fill phrasing `index` of a generic slot; `values` must be exactly its placeholders."""
        return _fill(f"generic.{slot}", GENERIC_SLOTS[slot], self.generic[slot][index], values)


def _fill(where: str, expected: frozenset[str], text: str, values: dict[str, object]) -> str:
    if set(values) != expected:
        raise TemplateError(where, [f"render needs {sorted(expected)}, got {sorted(values)}"])
    return text.format(**values)


def template_path(language: str) -> Path:
    return TEMPLATES_DIR / f"{language}.yaml"


def load_templates(language: str = "en", path: Path | None = None) -> Templates:
    """Read and validate the templates of `language` (from `path` when given)."""
    path = path or template_path(language)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    problems = validate(raw, language, default_catalog().chain_pids, set(default_catalog().pids))
    if problems:
        raise TemplateError(str(path), problems)
    return Templates(
        language=raw["language"],
        properties={
            pid: PropertyTemplates(
                pid=pid,
                surface=entry["surface"],
                plural=entry["plural"],
                subject_kind=entry["subject_kind"],
                slots={slot: tuple(entry[slot]) for slot in PROPERTY_SLOTS},
                keywords=tuple(
                    (k,) if isinstance(k, str) else tuple(k) for k in entry[KEYWORDS_FIELD]
                ),
            )
            for pid, entry in raw["properties"].items()
        },
        generic={slot: tuple(raw["generic"][slot]) for slot in GENERIC_SLOTS},
        articles=Articles.from_raw(raw.get("articles", {})),
    )


@cache
def default_templates() -> Templates:
    return load_templates()


def validate(
    raw: Any, language: str, chain_pids: tuple[str, ...], known_pids: set[str]
) -> list[str]:
    """Every problem of a parsed template file, as readable lines (empty when valid)."""
    if not isinstance(raw, dict):
        return ["the file is not a mapping"]
    problems: list[str] = []
    if raw.get("language") != language:
        problems.append(f"language: expected {language!r}, found {raw.get('language')!r}")
    properties = raw.get("properties")
    if not isinstance(properties, dict):
        problems.append("properties: missing or not a mapping")
        properties = {}
    problems += [
        f"{pid}: no entry for this chain property" for pid in chain_pids if pid not in properties
    ]
    for pid, entry in properties.items():
        if pid not in known_pids:
            problems.append(f"{pid}: not a property of properties.yaml")
        problems += _check_property(str(pid), entry)
    generic = raw.get("generic")
    if not isinstance(generic, dict):
        problems.append("generic: missing or not a mapping")
    else:
        problems += _check_slots("generic", generic, GENERIC_SLOTS)
    problems += _check_articles(raw.get("articles", {}), set(properties))
    problems += [f"{key}: unknown top-level key" for key in raw.keys() - TOP_LEVEL_KEYS]
    return problems


def _check_articles(articles: Any, pids: set[str]) -> list[str]:
    if not isinstance(articles, dict):
        return ["articles: not a mapping"]
    problems = [f"articles.{key}: unknown list" for key in articles if key not in ARTICLE_LISTS]
    for key, entries in articles.items():
        if not isinstance(entries, list) or not all(_is_keyword(e) for e in entries):
            problems.append(f"articles.{key}: not a list of non-empty strings")
    if problems:
        return problems
    problems += [
        f"articles: {label!r} is in both `the` and `bare`"
        for label in set(articles.get("the", ())) & set(articles.get("bare", ()))
    ]
    problems += [
        f"articles.indefinite_values: {pid} has no templates"
        for pid in articles.get("indefinite_values", ())
        if pid not in pids
    ]
    return problems


def _check_property(pid: str, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{pid}: entry is not a mapping"]
    problems = [
        f"{pid}.{field}: missing or not a non-empty string"
        for field in PROPERTY_FIELDS
        if not isinstance(entry.get(field), str) or not entry[field].strip()
    ]
    if "subject_kind" in entry and entry["subject_kind"] not in SUBJECT_KINDS:
        problems.append(
            f"{pid}.subject_kind: {entry['subject_kind']!r} is not one of {sorted(SUBJECT_KINDS)}"
        )
    keywords = entry.get(KEYWORDS_FIELD)
    if not (
        isinstance(keywords, list)
        and keywords
        and all(_is_keyword(k) or (isinstance(k, list) and k and all(map(_is_keyword, k)))
                for k in keywords)
    ):  # fmt: skip
        problems.append(
            f"{pid}.{KEYWORDS_FIELD}: missing or not a non-empty list of non-empty strings "
            "(or of lists of them)"
        )
    fields = (*PROPERTY_FIELDS, KEYWORDS_FIELD)
    slots = {key: value for key, value in entry.items() if key not in fields}
    problems += _check_slots(pid, slots, PROPERTY_SLOTS)
    if problems:
        return problems
    words = [word.casefold() for k in keywords for word in ([k] if isinstance(k, str) else k)]
    return [
        f"{pid}.{slot}: {text!r} names no keyword of the property"
        for slot in PROPERTY_SLOTS.keys() - UNNAMED_SLOTS
        for text in slots[slot]
        if not any(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text.casefold()) for word in words)
    ]


def _is_keyword(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_slots(owner: str, slots: dict[str, Any], spec: dict[str, frozenset[str]]) -> list[str]:
    problems = [f"{owner}.{slot}: unknown slot" for slot in slots if slot not in spec]
    for slot, expected in spec.items():
        where = f"{owner}.{slot}"
        phrasings = slots.get(slot)
        if phrasings is None:
            problems.append(f"{where}: missing slot")
            continue
        if not isinstance(phrasings, list):
            problems.append(f"{where}: not a list of phrasings")
            continue
        if len(phrasings) < MIN_PHRASINGS:
            problems.append(
                f"{where}: {len(phrasings)} phrasing(s), at least {MIN_PHRASINGS} needed"
            )
        seen: set[str] = set()
        for index, text in enumerate(phrasings):
            if not isinstance(text, str):
                problems.append(f"{where}[{index}]: not a string: {text!r}")
                continue
            key = " ".join(text.casefold().split())
            if key in seen:
                problems.append(f"{where}[{index}]: duplicate phrasing {text!r}")
            seen.add(key)
            problems += [
                f"{where}[{index}]: {issue}: {text!r}" for issue in check_phrasing(text, expected)
            ]
    return problems


def check_phrasing(text: str, expected: frozenset[str]) -> list[str]:
    """The problems of one phrasing whose placeholders must be exactly `expected`.

    Rules: the placeholders (read with `string.Formatter().parse`) are exactly `expected`,
    each once, as bare names; the text has no stray whitespace, starts with an uppercase
    letter or a placeholder, ends with "?", and has no capital letter mid-sentence.
    Capital rule: replace each placeholder by a non-letter mark (so its contents are never
    checked), split on whitespace, and skip the first word; a remaining word breaks the rule
    when its first run of letters starts uppercase and is not all uppercase, one trailing "s"
    aside ("CEO" and "CEOs" pass, "Who" fails).
    """
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as error:
        return [f"malformed braces ({error})"]
    problems = []
    names = [name for _, name, _, _ in fields if name is not None]
    if set(names) != expected or len(names) != len(set(names)):
        problems.append(f"placeholders {sorted(names)} should be exactly {sorted(expected)}")
    if any(spec or conversion for _, name, spec, conversion in fields if name is not None):
        problems.append("placeholders must not carry a conversion or format spec")
    if text != text.strip() or "  " in text:
        problems.append("stray whitespace")
    if not (text[:1].isupper() or text.startswith("{")):
        problems.append("does not start with a capital letter or a placeholder")
    if not text.endswith("?"):
        problems.append('does not end with "?"')
    capitals = mid_sentence_capitals(fields)
    if capitals:
        problems.append(f"capital letter mid-sentence: {', '.join(capitals)}")
    return problems


def mid_sentence_capitals(
    fields: list[tuple[str, str | None, str | None, str | None]],
) -> list[str]:
    """Words that break the capital rule of `check_phrasing`, from a parsed template."""
    text = "".join(
        literal + (_PLACEHOLDER_MARK if name is not None else "") for literal, name, _, _ in fields
    )
    found = []
    for word in text.split()[1:]:
        letters = _LETTERS.search(word)
        if letters is None or not letters.group()[0].isupper():
            continue
        run = letters.group()
        stem = run[:-1] if len(run) > 2 and run.endswith("s") else run
        if not stem.isupper():
            found.append(word.replace(_PLACEHOLDER_MARK, ""))
    return found
