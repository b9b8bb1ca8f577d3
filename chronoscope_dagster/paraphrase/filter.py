"""The paraphrased subset (the paper's section 5 and App. B): every question of a stratified
sample of chains rewritten by a model, kept only where an answer-equivalence filter passes.

The filter is conservative and purely lexical. A paraphrase is rejected, with the reason in
``REASONS``, when it
- talks about the task or to the reader, or starts with a label such as "Fantasy:"
  (``meta_text``); is not one question (``not_a_question``) or asks for another kind of
  answer: a count, a value, yes or no (``question_kind_changed``); repeats the original;
- drops, adds or reuses a year, or breaks a span of years (``year_changed``), adds a year to
  an implicit turn, moves the time to the present (a word or the tense) or elsewhere, or
  drops the reference back to the scope ("then", "at the time"), or the word that asks
  about a whole span ("throughout", "the entire time"; ``whole_span_dropped``: without it
  "did X hold it throughout 2010-2015?" becomes "at any time in 2010-2015?");
- drops every word naming the property (the templates' ``keywords``; ``keywords_lost``);
- loses the subject: its name where the original names it (or swaps it with another
  entity), a pronoun or reference where the original uses one (``subject_lost``);
- drops another entity the original names (``entity_missing``), brings in an entity, a
  proper noun or, in place of the subject's pronoun, a noun the original lacks
  (``entity_added``), gives an elliptical question ("And in 2019?") content of its own
  (``content_added``), or brings in a gold answer or a number (``answer_added``).
A chain is kept only if every one of its turns passes, so the paraphrased chains ask exactly
what the originals ask. ``tests/data/paraphrase_labelled.json`` holds the embedded model's
replies labelled by hand, against which the filter is measured.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from chronoscope_dagster.chains.templates import default_templates

REASONS = (
    "empty",
    "meta_text",
    "not_a_question",
    "question_kind_changed",
    "identical",
    "year_changed",
    "year_added_to_implicit",
    "present_added",
    "time_shift_added",
    "time_reference_dropped",
    "whole_span_dropped",
    "keywords_lost",
    "subject_lost",
    "entity_missing",
    "entity_added",
    "content_added",
    "answer_added",
)
"""Every reason ``paraphrase_problems`` can give, in the order it gives them."""

_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb\u201e\u201a"
_STRAIGHTEN = str.maketrans(
    {
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'", "\u201a": "'",
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "ß": "ss", "ς": "σ",
    }
)  # fmt: skip
_YEAR = re.compile(r"(?<![\w.,])\d{4}s?(?!\w|[.,]\d)")
_WORD = re.compile(r"\w+")
_LABEL = re.compile(
    r"^(?:[-*•>#]+\s*|\d{1,2}[.)]\s+)?(?:\*\*|__)?\s*"
    r"(?:(?:here\s+is|here's)\s+(?:the|a|my)\s+)?"
    r"(?:(?:the\s+|a\s+)?(?:original|paraphrased|rewritten|reworded|revised|new)"
    r"\s+(?:question|version)(?:\s+(?:was|is))?"
    r"|same\s+question|paraphrased?|rewrite|rewritten|reworded|question|output)"
    r"\s*(?:\*\*|__)?\s*[:\uff1a]\s*(?:\*\*|__)?\s*",
    re.IGNORECASE,
)
PRESENT_WORDS = ("now", "currently", "current", "today", "nowadays", "presently", "at present")
"""Words that move a question to the present: a paraphrase may not add one (the drift the
benchmark measures would then be the question's, not the model's)."""
TIME_SHIFT_WORDS = (
    "before", "after", "earlier", "later", "previous", "previously", "prior", "next", "first",
    "last", "former", "formerly", "future", "ago", "since", "until", "recent", "recently",
    "originally", "initially", "subsequently", "the time of",
)  # fmt: skip
"""Words that move a question to another time than its scope; a paraphrase may not add one
("at the time of the event" sets a time of its own)."""
BACK_REFERENCES = (
    "then", "at the time", "at that time", "that time", "at that point", "that point",
    "that year", "the same year", "the same time", "those days", "that period", "that date",
    "back then", "by then", "meanwhile", "concurrently", "simultaneously",
)  # fmt: skip
"""Phrases that tie an implicit question to the scope set earlier in the chain; a paraphrase
of a question with one must keep one (not necessarily the same)."""
WHOLE_SPAN = (
    "throughout", "the whole", "the entire", "entire time", "all the time", "all along",
    "without interruption", "continuously", "the full", "every year",
)  # fmt: skip
"""Phrases that ask whether something held over a whole span; a paraphrase of a question with
one must keep one."""
_SENTENCE_END = re.compile(r"([.?!\uff1f])[\"'\u201d\u2019)]*\s+\W*(\w)")
PAST_MARKERS = (
    "was", "were", "did", "had", "held", "led", "headed", "owned", "ran", "served", "chaired",
    "coached", "employed", "played", "belonged", "worked", "attended", "studied", "occupied",
    "represented", "counted",
)  # fmt: skip
PRESENT_MARKERS = (
    "is", "are", "am", "does", "has", "holds", "leads", "heads", "owns", "runs", "serves",
    "chairs", "coaches", "employs", "plays", "belongs", "works", "attends", "studies",
    "occupies", "represents", "counts",
)  # fmt: skip
"""Auxiliaries, and the templates' verbs, in the past and the present tense: an implicit
question in the past may not be put in the present ("were they affiliated" -> "are they
affiliated"), which asks about now."""
_SPAN = re.compile(
    r"between (?:the years )?(\d{4}s?) and (\d{4}s?)|(\d{4}s?) ?(?:to|through|until|-) ?(\d{4}s?)"
)
"""A span of years in a folded text: "between 1990 and 2000", "from 1990 to 2000", "1990-2000"."""
ELLIPSIS_WORDS = frozenset(
    {
        "and", "what", "about", "how", "in", "the", "year", "years", "from", "to", "between",
        "during", "of", "period", "so", "as", "by", "for", "at", "through", "until", "then",
        "finally", "lastly", "throughout", "whole", "entire", "time",
    }
)  # fmt: skip
"""The words of an elliptical question ("And in 2019?", "What about from 1990 to 1995?"),
which asks the previous question again: its paraphrase may add no other word."""
_LIST_MARKER = re.compile(r"^(?:[-*•>#]+\s+|\d{1,2}[.)]\s+)")
META_WORDS = (
    "rephrase", "rephrased", "rephrasing", "paraphrase", "paraphrased", "paraphrasing",
    "rewrite", "rewritten", "reworded", "rewording", "question", "answer", "here is",
    "here's", "surface form", "constraints", "i", "me", "my", "you", "your", "we", "our",
)  # fmt: skip
"""Talk about the task, or to the reader, rather than the question; a paraphrase may not add
any (names are masked first: "Charles I")."""
WH_WORDS = ("who", "whom", "whose", "what", "which", "where", "when", "how")
AUXILIARIES = (
    "did", "was", "were", "is", "are", "does", "do", "has", "have", "had", "can", "could",
)  # fmt: skip
_LEADS = frozenset({"and", "so", "but", "then", "now", "also"})
"""Words that may start a clause before its question word ("And who ...")."""
_PREFIX = re.compile(r"^\W*((?:[^\W_][\w'.-]*\s*){1,3}):\s")
"""A leading label of up to three words and a colon ("Fantasy: ...", "Quick question: ...")."""
SUBJECT_REFERENCES = (
    "they", "them", "their", "theirs", "themselves", "it", "its", "itself", "he", "him",
    "his", "she", "her", "hers", "there", "that person", "this person", "the person",
    "the team", "that team", "this team", "that place",
)  # fmt: skip
"""Words that refer back to a subject an implicit question does not name."""
_DETERMINED = re.compile(r"(?<!\w)(?:the|a|an|this|that|these|those)\s+(\w+)")
GENERIC_NOUNS = frozenset(
    {
        "time", "times", "same", "period", "moment", "point", "year", "years", "date", "day",
        "days", "era", "one", "person", "people", "individual", "team", "place",
    }
)  # fmt: skip
"""Nouns a determiner may bring into a paraphrase of a pronoun-only question: they name a
time or refer back, and add no entity."""
_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*")
MIN_NAME_LENGTH = 3
"""Names shorter than this ("US") are too often ordinary words to show an added entity."""


class ParaphraseTurn(NamedTuple):
    """One question to paraphrase. ``entity_names`` holds one entry per entity that may be
    named in the question: its label first, then its aliases. ``answers`` are the gold entity
    labels (not yes/no or numbers), which a paraphrase must not introduce. ``pid`` selects
    the property's keywords; ``subject`` holds the subject's label and aliases."""

    chain_id: str
    turn_index: int
    question: str
    entity_names: Sequence[Sequence[str]]
    is_explicit: bool
    answers: Sequence[str] = ()
    pid: str = ""
    subject: Sequence[str] = ()


def clean_reply(text: str) -> str:
    """The paraphrase in a model's reply: the first line with text once a leading list marker,
    label ("Paraphrase:", "Rewritten question:", ...) and surrounding quotes or markdown
    emphasis are removed; a label alone on its line announces the next line."""
    for raw in text.splitlines():
        line = _LABEL.sub("", raw.strip(), count=1)
        line = _LIST_MARKER.sub("", line).strip()
        line = line.strip(_QUOTES + "*_ \t").strip()
        if line:
            return line
    return ""


def year_tokens(text: str) -> frozenset[str]:
    """Standalone 4-digit numbers, with a decade's "s" kept ("1990s" is not "1990"); digits
    inside longer numbers, decimals or thousands groups ("12,000", "3 times") are not years."""
    return frozenset(_YEAR.findall(unicodedata.normalize("NFKC", text)))


def fold(text: str) -> str:
    """Case-, accent-, quote-, dash- and whitespace-insensitive form of a text."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_STRAIGHTEN)
    text = "".join(
        c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) != "Mn"
    )
    return " ".join(text.split())


@functools.lru_cache(maxsize=65536)
def _name_pattern(name: str) -> re.Pattern[str] | None:
    folded = fold(name)
    if not folded:
        return None
    return re.compile(rf"(?<!\w){re.escape(folded)}(?!\w)")


def mentions(folded_text: str, name: str) -> bool:
    """Whether ``name`` occurs in an already folded text on word boundaries."""
    pattern = _name_pattern(name)
    return pattern is not None and pattern.search(folded_text) is not None


def _has_any(folded_text: str, words: Sequence[str]) -> bool:
    return any(mentions(folded_text, word) for word in words)


def _is_question(text: str, names: Sequence[str] = ()) -> bool:
    """One question: it ends with a question mark (closing quotes and spaces after it
    tolerated) and no sentence ends before ("What about 2012? Who ...?", "Nice question. Who
    ...?"). ``names`` are masked first, so "Inc." or "Michael D. Higgins" end no sentence."""
    text = text.rstrip().rstrip(_QUOTES + " \t")
    if not text.endswith(("?", "\uff1f")):
        return False
    for name in sorted(names, key=len, reverse=True):
        if name.strip():
            text = re.sub(re.escape(name), "X", text, flags=re.IGNORECASE)
    for match in _SENTENCE_END.finditer(text[:-1]):
        if match.group(1) in "?!\uff1f" or match.group(2).isupper():
            return False
    return True


def paraphrase_problems(
    original: str,
    paraphrase: str,
    *,
    entity_names: Sequence[Sequence[str]],
    is_explicit: bool,
    answers: Sequence[str] = (),
    pid: str = "",
    subject: Sequence[str] = (),
) -> list[str]:
    """Why ``paraphrase`` does not ask what ``original`` asks (empty when it does), as tokens
    of ``REASONS`` in that order. An entity counts as named only if its label (the first name
    of its entry) occurs in the original, so callers may pass every candidate entity; the
    paraphrase may then name it by label or any alias. "identical" compares words after
    case, accent and punctuation folding. ``pid`` gives the property's keywords (in the
    templates) and ``subject`` holds the subject's names, label first; the subject is
    checked by ``subject_lost``, not ``entity_missing``."""
    if not any(c.isalnum() for c in paraphrase):
        return ["empty"]
    folded_original, folded_paraphrase = fold(original), fold(paraphrase)
    named = [names for names in (*entity_names, subject) if _has_any(folded_original, names)]
    keyword_words = [word for group in property_keywords(pid) for word in group]
    subject_named = _has_any(folded_original, subject)
    pronoun_only = not subject_named and _has_any(folded_original, SUBJECT_REFERENCES)
    kinds = (_kind(folded_original), _kind(folded_paraphrase))
    checks = {
        "meta_text": _meta_text(folded_original, _masked(folded_paraphrase, named)),
        "not_a_question": not _is_question(paraphrase, [n for ns in named for n in ns])
        or _questions(folded_paraphrase) > max(_questions(folded_original), 1),
        "question_kind_changed": None not in kinds and kinds[0] != kinds[1],
        "identical": _WORD.findall(folded_original) == _WORD.findall(folded_paraphrase),
        **_time_problems(original, paraphrase, is_explicit),
        "keywords_lost": _has_any(folded_original, keyword_words)
        and not _has_any(folded_paraphrase, keyword_words),
        "subject_lost": _subject_lost(folded_original, folded_paraphrase, subject, named)
        if subject_named
        else pronoun_only and not _has_any(folded_paraphrase, (*SUBJECT_REFERENCES, *subject)),
        "entity_missing": any(
            names
            and mentions(folded_original, names[0])
            and not _same(names, subject)
            and not _has_any(folded_paraphrase, names)
            for names in entity_names
        ),
        "entity_added": _entity_added(
            original,
            paraphrase,
            entity_names,
            named,
            keyword_words,
            answers,
            pronoun_only and not _has_any(folded_paraphrase, SUBJECT_REFERENCES),
        ),
        "content_added": _words(folded_original) <= ELLIPSIS_WORDS
        and not _words(folded_paraphrase) <= ELLIPSIS_WORDS | _words(folded_original),
        "answer_added": any(
            mentions(folded_paraphrase, a) and not mentions(folded_original, a) for a in answers
        )
        or bool(_numbers(folded_paraphrase) - _numbers(folded_original)),
    }
    return [reason for reason in REASONS if checks.get(reason)]


def _time_problems(original: str, paraphrase: str, is_explicit: bool) -> dict[str, bool]:
    """The years are kept, each as often ("From 2010 to 2017 ... in 2017?" uses 2017 anew) and
    a span as a span (not "in 2010 and 2013"); an implicit turn gets no year, no word moves
    the time, and a back reference is kept."""
    folded_original, folded_paraphrase = fold(original), fold(paraphrase)
    years = Counter(_YEAR.findall(unicodedata.normalize("NFKC", original)))
    new_years = Counter(_YEAR.findall(unicodedata.normalize("NFKC", paraphrase)))
    added = set(new_years) - set(years)
    present = _has_any(folded_paraphrase, PRESENT_WORDS) or (
        not is_explicit
        and _has_any(folded_original, PAST_MARKERS)
        and not _has_any(folded_original, PRESENT_MARKERS)
        and _has_any(folded_paraphrase, PRESENT_MARKERS)
        and not _has_any(folded_paraphrase, PAST_MARKERS)
    )
    return {
        "year_changed": bool(set(years) - set(new_years) or (added and is_explicit))
        or any(n > years[year] for year, n in new_years.items() if year in years)
        or bool(_spans(folded_original) - _spans(folded_paraphrase)),
        "year_added_to_implicit": bool(added) and not is_explicit,
        "present_added": present and not _has_any(folded_original, PRESENT_WORDS),
        "time_shift_added": _has_any(folded_paraphrase, TIME_SHIFT_WORDS)
        and not _has_any(folded_original, TIME_SHIFT_WORDS),
        "time_reference_dropped": _has_any(folded_original, BACK_REFERENCES)
        and not _has_any(folded_paraphrase, BACK_REFERENCES),
        "whole_span_dropped": _has_any(folded_original, WHOLE_SPAN)
        and not _has_any(folded_paraphrase, WHOLE_SPAN),
    }


def _words(folded_text: str) -> set[str]:
    """The words of a folded text but numbers (years are checked on their own)."""
    return {word for word in _WORD.findall(folded_text) if not word.isdigit()}


def _spans(folded_text: str) -> set[frozenset[str]]:
    return {frozenset(y for y in m.groups() if y) for m in _SPAN.finditer(folded_text)}


def _subject_lost(
    folded_original: str,
    folded_paraphrase: str,
    subject: Sequence[str],
    named: Sequence[Sequence[str]],
) -> bool:
    """A subject the original names is not named, or trades places with another entity (the
    paraphrase is the original with the two names exchanged: "was Blogger owned by Google" ->
    "was Google owned by Blogger")."""
    if not _has_any(folded_paraphrase, subject):
        return True
    own = next(n for n in subject if mentions(folded_original, n))
    for names in named:
        other = next((n for n in names if mentions(folded_original, n)), None)
        if other is None or _same(names, subject) or fold(other) == fold(own):
            continue
        if _marked(folded_paraphrase, other, own) == _marked(folded_original, own, other):
            return True
    return False


def _times_named(folded_text: str, names: Sequence[str]) -> int:
    """How often an entity is named, by any of its names (overlapping matches count once)."""
    spans = sorted(
        match.span()
        for name in names
        if (pattern := _name_pattern(name)) is not None
        for match in pattern.finditer(folded_text)
    )
    count, end = 0, -1
    for start, stop in spans:
        if start >= end:
            count += 1
        end = max(end, stop)
    return count


def _marked(folded_text: str, first: str, second: str) -> list[str]:
    """The words of ``folded_text`` with the names ``first`` and ``second`` as markers (the
    longer name replaced first, so one name inside the other is not split)."""
    for name, marker in sorted(((first, " \x01 "), (second, " \x02 ")), key=lambda x: -len(x[0])):
        pattern = _name_pattern(name)
        if pattern is not None:
            folded_text = pattern.sub(marker, folded_text)
    return re.findall(r"\w+|[\x01\x02]", folded_text)


def property_keywords(pid: str) -> tuple[tuple[str, ...], ...]:
    """The keywords of ``pid`` in the English templates (none for an unknown property)."""
    entry = default_templates().properties.get(pid)
    return entry.keywords if entry is not None else ()


def turn_problems(turn: ParaphraseTurn, paraphrase: str) -> list[str]:
    """``paraphrase_problems`` of a paraphrase of ``turn``."""
    return paraphrase_problems(
        turn.question,
        paraphrase,
        entity_names=turn.entity_names,
        is_explicit=turn.is_explicit,
        answers=turn.answers,
        pid=turn.pid,
        subject=turn.subject,
    )


def _same(names: Sequence[str], subject: Sequence[str]) -> bool:
    return bool(subject) and tuple(names) == tuple(subject)


def _meta_text(folded_original: str, folded: str) -> bool:
    """Talk about the task, or a leading label ("Fantasy: ...") with a word the original
    lacks (so "In 1996: who ...?" for "What about in 1996: who ...?" passes)."""
    if any(mentions(folded, w) and not mentions(folded_original, w) for w in META_WORDS):
        return True
    prefix = _PREFIX.match(folded)
    return prefix is not None and not set(_WORD.findall(prefix.group(1))) <= set(
        _WORD.findall(folded_original)
    )


def _masked(folded_text: str, named: Sequence[Sequence[str]]) -> str:
    for name in sorted((n for names in named for n in names), key=len, reverse=True):
        pattern = _name_pattern(name)
        if pattern is not None:
            folded_text = pattern.sub(" ", folded_text)
    return folded_text


def _clause_starts(folded_text: str) -> list[str]:
    """The first word of each clause (split at , ; : and brackets), leads like "and" skipped."""
    starts = []
    for clause in re.split(r"[,;:()\[\]]", folded_text):
        words = _WORD.findall(clause)
        while words and words[0] in _LEADS:
            words.pop(0)
        if words:
            starts.append(words[0])
    return starts


def _questions(folded_text: str) -> int:
    """Clauses that start with a question word ("Which party ..., which party ...?")."""
    return sum(start in WH_WORDS for start in _clause_starts(folded_text))


def _kind(folded_text: str) -> str | None:
    """What the question asks for: a count ("how many"), a value (a question word starts a
    clause), yes or no (an auxiliary does), or None (an elliptical "And in 2019?")."""
    if mentions(folded_text, "how many"):
        return "count"
    starts = _clause_starts(folded_text)
    if any(start in WH_WORDS for start in starts):
        return "value"
    return "yes_no" if any(start in AUXILIARIES for start in starts) else None


def _numbers(folded_text: str) -> set[str]:
    """Numbers other than years (a count's gold is one)."""
    return set(re.findall(r"\d+", _YEAR.sub(" ", folded_text)))


def _proper_words(text: str) -> list[str]:
    """Words that start with a capital letter and do not start a sentence or a clause after a
    colon; "I" aside."""
    found = []
    for match in _NAME_WORD.finditer(unicodedata.normalize("NFKC", text)):
        before = text[: match.start()].rstrip(" \t" + _QUOTES + "(*")
        word = match.group()
        if before and before[-1] not in ".:?!;" and word[0].isupper() and word != "I":
            found.append(word)
    return found


def _entity_added(
    original: str,
    paraphrase: str,
    entity_names: Sequence[Sequence[str]],
    named: Sequence[Sequence[str]],
    keyword_words: Sequence[str],
    answers: Sequence[str],
    pronoun_replaced: bool,
) -> bool:
    """Whether the paraphrase brings in what the original does not refer to: a candidate
    entity it does not name (gold answers are ``answer_added``'s), one it names more often
    than the original ("... belong to at the time was Chevron?"), a capitalized word that is
    neither in the original, a keyword, an answer, nor part of (or derived from, "German") a
    name the original uses; and, where the paraphrase replaces the pronoun that was the
    original's only reference to its subject, a noun after a determiner that is none of those
    nor generic ("Who owned it?" -> "Who owned the land?")."""
    folded_original, folded_paraphrase = fold(original), fold(paraphrase)
    answer_set = {fold(a) for a in answers}
    for names in entity_names:
        if answer_set & {fold(n) for n in names} or _has_any(folded_original, names):
            continue
        if any(len(fold(n)) >= MIN_NAME_LENGTH and mentions(folded_paraphrase, n) for n in names):
            return True
    if any(_times_named(folded_paraphrase, n) > _times_named(folded_original, n) for n in named):
        return True
    known = set(_WORD.findall(folded_original))
    known |= {w for word in keyword_words for w in _WORD.findall(fold(word))}
    name_words = {w for names in named for n in names for w in _WORD.findall(fold(n))}
    answer_words = {w for a in answers for w in _WORD.findall(fold(a))}
    for word in _proper_words(paraphrase):
        folded = fold(word)
        parts = [part for part in _WORD.findall(folded) if len(part) > 1]
        if all(
            part in known
            or part in name_words
            or part in answer_words
            or any(part[:5] == w[:5] and len(w) >= 4 for w in name_words)
            for part in parts
        ):
            continue
        return True
    if pronoun_replaced:
        allowed = known | name_words | GENERIC_NOUNS
        return any(noun not in allowed for noun in _DETERMINED.findall(folded_paraphrase))
    return False
