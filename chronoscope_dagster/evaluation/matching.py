"""Whether a model's answer is right: three matchers, and the counts behind token and char-3gram
F1.

Modes (every one reads the top-1 ``prediction`` and the top-k ``candidates`` of a scored turn):

* ``relaxed`` (this project's default): both sides normalised (``normalize``), and a prediction
  is correct when a value of the turn's gold set (``answer``, ``gold_labels``, ``gold_aliases``)
  occurs in it on whole-token boundaries. Only gold-in-prediction counts: "2" does not match
  "12", "Party" does not match "Nazi Party", "The Prime Minister is David Cameron." matches
  "David Cameron". A prediction that names the gold and also a rival (another candidate answer
  of the turn, ``turn_rivals``) is a hedge, and wrong: "yes or no", "1, 2 or 3", "Bill Clinton
  or Donald Trump". Otherwise naming every candidate would score.
* ``exact``: the normalised prediction equals a normalised value of the gold set.
* ``reference``: the authors' matcher (spec 4.6) against the single gold string ``answer``,
  quirks included (substring both ways, no aliases, hedges credited), so numbers compare with
  published ones.

Token and char-3gram overlap counts are the reference's (spec 4.7) in every mode. A null
prediction (a backend error) is never correct and overlaps nothing.

There are two implementations that must agree exactly. The per-turn functions here
(``matches``, ``reference_match``, ``token_counts``, ``char3_counts``, ``score_turn``) are the
specification, and ``score_turns_loop`` runs them row by row; ``evaluation.scoring`` does the
same on whole Arrow tables, fast, and ``tests/evaluation/test_matching.py`` holds them to each
other.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cached_property, lru_cache
from typing import NamedTuple

import numpy as np
import pyarrow as pa

MODES = ("relaxed", "exact", "reference")
MODE_METADATA_KEY = b"match_mode"  # in the schema metadata of a scored table, for the metrics

# --- relaxed and exact ---------------------------------------------------------------------

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_CASEFOLD = str.maketrans({"ß": "ss", "ς": "σ"})
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
COLON_PREFIXES = (r"final[ \t]+answer[ \t]*:", r"answer[ \t]*:", r"assistant[ \t]*:")
WORD_PREFIXES = (r"the[ \t]+answer[ \t]+is", r"it[ \t]+is", r"it's")
_ANSWER_PREFIX = re.compile("|".join(COLON_PREFIXES + WORD_PREFIXES))
NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip


def is_token_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNM"


def _fold(text: str) -> str:
    """NFKC, straight quotes, lowercase (with casefold's ß -> ss and ς -> σ), accents dropped
    (NFKD, then every nonspacing mark removed): "Côte d’Ivoire" -> "cote d'ivoire"."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).lower().translate(_CASEFOLD)
    return "".join(
        c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) != "Mn"
    )


def _tokens(text: str) -> str:
    """Runs of letters, digits and marks, joined by single spaces; everything else separates."""
    return " ".join("".join(c if is_token_char(c) else " " for c in text).split())


def normalize(text: str) -> str:
    """A gold value as the relaxed and exact matchers compare it. Symbols separate like
    punctuation ("C++" is "c"), and a script written without spaces is compared in whole runs
    ("東京" does not match "東京都")."""
    return _tokens(_fold(text))


def normalize_prediction(text: str) -> str:
    """A prediction as the relaxed and exact matchers compare it: folded like a gold value, from
    its first letter or digit to the end of that line, without one answer prefix ("answer:",
    "final answer:", "assistant:", or the words "the answer is", "it is", "it's")."""
    folded = _fold(text)
    start = next((i for i, char in enumerate(folded) if is_token_char(char)), len(folded))
    line = (folded[start:].splitlines() or [""])[0]
    prefix = _ANSWER_PREFIX.match(line)
    if prefix is not None:
        rest = line[prefix.end() :]
        if prefix.group().endswith(":") or not rest or not is_token_char(rest[0]):
            line = rest
    return _tokens(line)


def _number_word(value: str) -> str | None:
    return (
        NUMBER_WORDS[int(value)]
        if value.isascii() and value.isdigit() and int(value) <= 20
        else None
    )


def gold_values(golds: Iterable[str | None]) -> list[str]:
    """The normalised, non-empty, distinct values of a gold set. A count from 0 to 20 is also
    accepted spelt out ("12" or "twelve"); other number words are not recognised."""
    values: list[str] = []
    for gold in golds:
        if gold is None:
            continue
        value = normalize(gold)
        for accepted in (value, _number_word(value)):
            if accepted and accepted not in values:
                values.append(accepted)
    return values


def matches(
    prediction: str | None,
    golds: Sequence[str | None],
    mode: str = "relaxed",
    distractors: Sequence[str | None] = (),
    rivals: Sequence[str | None] = (),
) -> bool:
    """Whether ``prediction`` answers a turn whose gold set is ``golds``; the reference mode
    reads only ``golds[0]`` (the reference has one gold string).

    Relaxed only: a ``distractor`` (another known answer, such as the present-day value) that
    contains a gold value is removed from the prediction first, so "Auvergne-Rhône-Alpes" does
    not answer "Rhône-Alpes" when the former is the other answer the turn is about; and a
    prediction that also names one of ``rivals`` hedges (``judge``) and is wrong."""
    return judge(prediction, golds, mode, distractors, rivals)[0]


def judge(
    prediction: str | None,
    golds: Sequence[str | None],
    mode: str = "relaxed",
    distractors: Sequence[str | None] = (),
    rivals: Sequence[str | None] = (),
) -> tuple[bool, bool]:
    """(correct, hedged): hedged when, in relaxed mode, the prediction names a gold value and a
    rival. A rival equal to a gold value is none, and one named only inside a named gold value
    ("Rhône-Alpes" in "Auvergne-Rhône-Alpes") does not count."""
    return Judge(golds, mode, distractors, rivals)(prediction)


class Judge:
    """``judge`` of one turn, its values normalised once for all the answers judged."""

    def __init__(
        self,
        golds: Sequence[str | None],
        mode: str = "relaxed",
        distractors: Sequence[str | None] = (),
        rivals: Sequence[str | None] = (),
    ) -> None:
        _check_mode(mode)
        self.golds, self.mode, self._distractors, self._rivals = golds, mode, distractors, rivals
        self.values = gold_values(golds) if mode != "reference" else []

    @cached_property
    def distractors(self) -> list[str]:
        """The distractors that are no gold value but contain one."""
        return [
            distractor
            for distractor in gold_values(self._distractors)
            if distractor not in self.values
            and any(f" {v} " in f" {distractor} " for v in self.values)
        ]

    @cached_property
    def rivals(self) -> list[str]:
        found = dict.fromkeys(_normalize_rival(r) for r in self._rivals if r is not None)
        return [rival for rival in found if rival and rival not in self.values]

    def __call__(self, prediction: str | None) -> tuple[bool, bool]:
        if prediction is None:
            return False, False
        if self.mode == "reference":
            gold = self.golds[0] if self.golds else None
            return gold is not None and reference_match(prediction, gold), False
        predicted = normalize_prediction(prediction)
        if not predicted:
            return False, False
        if self.mode == "exact":
            return predicted in self.values, False
        padded = masked = f" {predicted} "
        for distractor in self.distractors:
            masked = re.sub(rf"(?<= ){re.escape(distractor)}(?= )", "|", masked)
        if not any(f" {value} " in masked for value in self.values):
            return False, False
        named = [span for value in self.values for span in _occurrences(padded, value)]
        for rival in self.rivals:
            for start, end in _occurrences(padded, rival):
                if not any(low <= start and end <= high for low, high in named):
                    return False, True
        return True, False


_normalize_rival = lru_cache(maxsize=1 << 16)(normalize)


def _occurrences(padded: str, value: str) -> list[tuple[int, int]]:
    """The (start, end) of every whole-token occurrence of ``value`` in ``padded``, overlapping
    ones included."""
    needle, found = f" {value} ", []
    start = padded.find(needle)
    while start >= 0:
        found.append((start + 1, start + 1 + len(value)))
        start = padded.find(needle, start + 1)
    return found


COUNT_RIVALS = (*(str(n) for n in range(101)), *NUMBER_WORDS)
"""What a count answer must not name beside its gold: a whole number up to 100 (a year is
none: "2 (between 2005 and 2010)" does not hedge), or one spelt out up to twenty."""
YES_NO_RIVALS = {"yes": "no", "no": "yes"}


def turn_rivals(
    answer_kind: str | None,
    answer: str | None,
    rival_labels: Sequence[str | None] | None,
    present_labels: Sequence[str | None] | None,
) -> list[str | None]:
    """The rivals of a turn (``judge``): of a yes/no turn the other word, of a count turn
    ``COUNT_RIVALS``, of an entity turn (any other kind) its ``rival_labels`` (the property's
    other values at any time, the chain's other answers) and present-day values."""
    if answer_kind == "yes_no":
        other = YES_NO_RIVALS.get(normalize(answer or ""))
        return [] if other is None else [other]
    if answer_kind == "count":
        return list(COUNT_RIVALS)
    return [*(rival_labels or ()), *(present_labels or ())]


# --- the reference matcher (spec 4.6) ------------------------------------------------------

REFERENCE_PREFIXES = ("assistant:", "answer:", "final answer:", "the answer is", "it is", "it's")
PUNCTUATION_AND_SPACE = string.punctuation + " "
# ASCII only, as the reference strips candidates: curly quotes stay (and are deleted later, after
# the prefix check, so "“The answer is Paris”" keeps its "the answer is").
CANDIDATE_STRIP = PUNCTUATION_AND_SPACE
# The reference's r"(?i)\banswer\s*:\s*(.+)$": "final_answer:" is no answer prefix ("_" is a word
# character), "final answer:" and "(answer:" are.
_REFERENCE_ANSWER = re.compile(r"\banswer\s*:\s*(.+)$", flags=re.IGNORECASE)


def _reference_first_line(text: str) -> str:
    """Stripped (all Unicode whitespace), cut at the first line feed only, stripped again."""
    return str(text).strip().split("\n")[0].strip()


def postprocess_pred(text: str) -> str:
    """Stripped first line, at most one prefix cut off without a word-boundary check ("It
    issues" loses "it is"), then stripped of whitespace and, once, of ASCII punctuation and
    spaces ("It is\xa0_Paris" -> "Paris", but "_\xa0Paris" -> "\xa0Paris")."""
    text = _reference_first_line(text)
    lowered = text.lower()
    for prefix in REFERENCE_PREFIXES:
        if lowered.startswith(prefix):
            text = text[len(prefix) :].strip(" :\t")
            break
    return text.strip().strip(PUNCTUATION_AND_SPACE)


def normalize_text(text: str | None) -> str:
    if text is None:
        return ""
    text = str(text).translate(_QUOTES).strip().lower()
    return re.sub(r"\s+", " ", text)


def normalize_for_match(text: str) -> str:
    """Every character that is neither a word character nor whitespace deleted (not replaced by
    a space: "U.S." becomes "us"); accents stay."""
    text = re.sub(r"[^\w\s]", "", normalize_text(postprocess_pred(text)))
    return re.sub(r"\s+", " ", text).strip()


def extract_candidate_answers(prediction: str) -> list[str]:
    """The first line (after a word "answer:" when it says so), stripped of ASCII punctuation
    and spaces; plus a copy without " (...)" groups and the part before the first comma. The
    strip runs first, so "Paris (France)" loses its ")" and keeps its parenthetical."""
    line = _reference_first_line(prediction)
    found = _REFERENCE_ANSWER.search(line)
    if found is not None:
        line = found.group(1)
    primary = line.strip().strip(CANDIDATE_STRIP)
    candidates = [primary]
    if "(" in primary and ")" in primary:
        candidates.append(re.sub(r"\s*\([^)]*\)", "", primary).strip())
    if "," in primary:
        candidates.append(primary.split(",")[0].strip())
    distinct: dict[str, str] = {}
    for candidate in candidates:
        key = normalize_for_match(candidate)
        if key:
            distinct.setdefault(key, candidate)
    return list(distinct.values())


def match_relaxed(prediction: str, gold: str) -> bool:
    """Equality or a substring in either direction, then each of , ; / | as a last resort."""
    predicted, expected = normalize_for_match(prediction), normalize_for_match(gold)
    if not predicted or not expected:
        return False
    if predicted == expected or expected in predicted or predicted in expected:
        return True
    processed = postprocess_pred(prediction)
    return any(
        normalize_for_match(part) == expected
        for separator in (",", ";", "/", "|")
        if separator in processed
        for part in processed.split(separator)
    )


def reference_candidates(prediction: str) -> list[str]:
    """What the reference's ``is_match`` tries: the extracted candidates or, when none survives
    ("Paris answer: ?" leaves only "?"), the whole prediction."""
    return extract_candidate_answers(prediction) or [prediction]


def reference_match(prediction: str | None, gold: str) -> bool:
    if prediction is None:
        return False
    return any(match_relaxed(c, gold) for c in reference_candidates(prediction))


# --- overlap counts (spec 4.7) -------------------------------------------------------------


def _reference_tokens(text: str | None) -> list[str]:
    return [] if text is None else normalize_for_match(text).split()


def _char3_grams(text: str | None) -> list[str]:
    joined = "" if text is None else normalize_for_match(text).replace(" ", "")
    if len(joined) < 3:
        return [joined] if joined else []
    return [joined[i : i + 3] for i in range(len(joined) - 2)]


def _overlap_counts(predicted: list[str], expected: list[str]) -> tuple[int, int, int]:
    return sum((Counter(predicted) & Counter(expected)).values()), len(predicted), len(expected)


def token_counts(prediction: str | None, gold: str) -> tuple[int, int, int]:
    """(shared tokens as multisets, predicted tokens, gold tokens), to be summed over turns."""
    return _overlap_counts(_reference_tokens(prediction), _reference_tokens(gold))


def char3_counts(prediction: str | None, gold: str) -> tuple[int, int, int]:
    """As token_counts, over character 3-grams of the space-free normalised text; a text under
    three characters is one gram."""
    return _overlap_counts(_char3_grams(prediction), _char3_grams(gold))


# --- a turn, and a table turn by turn ------------------------------------------------------

INPUT_COLUMNS = (
    "prediction",
    "candidates",
    "answer",
    "gold_labels",
    "gold_aliases",
    "present_labels",
    "drift_eligible",
    "answer_kind",
    "rival_labels",
)
SCORE_SCHEMA = pa.schema(
    [pa.field(name, pa.bool_(), nullable=False) for name in (
        "correct_at1", "correct_atk", "present_match_at1", "present_match_atk",
        "drift_at1", "drift_atk", "hedged_at1",
    )]
    + [pa.field(name, pa.int64(), nullable=False) for name in (
        "tok_tp", "tok_pred", "tok_gold", "ch_tp", "ch_pred", "ch_gold",
    )]
)  # fmt: skip


class TurnScore(NamedTuple):
    correct_at1: bool
    correct_atk: bool
    present_match_at1: bool
    present_match_atk: bool
    drift_at1: bool
    drift_atk: bool
    hedged_at1: bool
    tok_tp: int
    tok_pred: int
    tok_gold: int
    ch_tp: int
    ch_pred: int
    ch_gold: int


def score_turn(
    prediction: str | None,
    candidates: Sequence[str | None] | None,
    answer: str | None,
    gold_labels: Sequence[str | None] | None,
    gold_aliases: Sequence[str | None] | None,
    present_labels: Sequence[str | None] | None,
    drift_eligible: bool | None,
    answer_kind: str | None,
    rival_labels: Sequence[str | None] | None,
    mode: str = "relaxed",
) -> TurnScore:
    """Each of the top-k is judged alone: one that hedges is not correct. Drift: a drift-eligible
    turn answered wrongly with a present-day value, by an answer that does not hedge (one naming
    the gold too). In reference mode (spec 4.8) any wrong turn answered with its present value
    drifts, eligible or not (the present value may be one of the gold set)."""
    answer = answer if answer is not None else ""
    golds = [answer, *(gold_labels or ()), *(gold_aliases or ())]
    presents = list(present_labels or ())
    rivals = turn_rivals(answer_kind, answer, rival_labels, present_labels)
    gold, present = Judge(golds, mode, presents, rivals), Judge(presents, mode, golds)
    judged: dict[str | None, tuple[bool, bool, bool]] = {}
    for text in (prediction, *(candidates or ())):
        if text not in judged:
            judged[text] = (*gold(text), present(text)[0])
    ok1, hedged1, present1 = top = judged[prediction]
    every = [top, *(judged[c] for c in candidates or ())]
    okk = any(ok for ok, _, _ in every)
    eligible = bool(drift_eligible) or mode == "reference"
    return TurnScore(
        ok1,
        okk,
        present1,
        any(present for _, _, present in every),
        eligible and not ok1 and not hedged1 and present1,
        eligible and not okk and any(present and not hedged for _, hedged, present in every),
        hedged1,
        *token_counts(prediction, answer),
        *char3_counts(prediction, answer),
    )


def score_turns_loop(turns: pa.Table, mode: str = "relaxed") -> pa.Table:
    """``score_turns`` one row at a time with the per-turn functions (baseline and oracle)."""
    check_turns(turns, mode)
    columns = [turns.column(name).to_pylist() for name in INPUT_COLUMNS]
    scores = [score_turn(*row, mode) for row in zip(*columns, strict=True)]
    return with_scores(
        turns,
        {name: [score[i] for score in scores] for i, name in enumerate(SCORE_SCHEMA.names)},
        mode,
    )


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"match mode {mode!r} is not one of {', '.join(MODES)}")


def check_turns(turns: pa.Table, mode: str) -> None:
    _check_mode(mode)
    missing = [name for name in INPUT_COLUMNS if name not in turns.column_names]
    if missing:
        raise ValueError(f"scored turns lack the columns {', '.join(missing)}")


def with_scores(turns: pa.Table, scores: dict[str, Sequence | np.ndarray], mode: str) -> pa.Table:
    """The score columns set, and the mode recorded in the schema metadata: the reference's
    drift has another denominator, so the metrics must know which mode scored the turns."""
    for field in SCORE_SCHEMA:
        column = pa.array(scores[field.name], field.type)
        if field.name in turns.column_names:
            turns = turns.set_column(turns.column_names.index(field.name), field, column)
        else:
            turns = turns.append_column(field, column)
    metadata = {**(turns.schema.metadata or {}), MODE_METADATA_KEY: mode.encode()}
    return turns.replace_schema_metadata(metadata)
