"""The paraphrased subset (the paper's section 5 and App. B): every question of a stratified
sample of chains rewritten by a model, kept only where an answer-equivalence filter passes.

The filter is conservative and purely lexical: a paraphrase keeps the original's year tokens,
names every entity the original names (by label or alias), adds no year to an implicit turn,
adds no word that moves the time (to the present, or before or after the scope), keeps a
reference back to the scope where the original has one ("then", "at the time"), leaks no
gold answer, differs from the original and is a question. A chain is kept only if
every one of its turns passes, so the paraphrased chains ask exactly what the originals ask.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import pyarrow as pa

from chronoscope_dagster.llm.base import ChatRequest, Decoding
from chronoscope_dagster.llm.cache import CachedChat

PARAPHRASE_PROMPT = (
    "Rewrite the following question so that it has a different surface form while preserving "
    "the same meaning, entities, and time references.\n"
    "Original question: {question}\n"
    "Constraints:\n"
    "- Preserve all entities.\n"
    "- Preserve temporal references and years.\n"
    "- Do not change the factual answer."
)
"""App. B's template verbatim, ``[QUESTION]`` written ``{question}``; one user message."""

REASONS = (
    "empty",
    "not_a_question",
    "identical",
    "year_changed",
    "year_added_to_implicit",
    "present_added",
    "time_shift_added",
    "time_reference_dropped",
    "entity_missing",
    "answer_added",
)
"""Every reason ``paraphrase_problems`` can give, in the order it gives them."""

RETRY_TEMPERATURE = 0.7
PARAPHRASE_MAX_NEW_TOKENS = 48

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
    "originally", "initially", "subsequently",
)  # fmt: skip
"""Words that move a question to another time than its scope; a paraphrase may not add one."""
BACK_REFERENCES = (
    "then", "at the time", "at that time", "that time", "at that point", "that point",
    "that year", "the same year", "the same time", "those days", "that period", "that date",
    "back then", "by then", "meanwhile", "concurrently", "simultaneously",
)  # fmt: skip
"""Phrases that tie an implicit question to the scope set earlier in the chain; a paraphrase
of a question with one must keep one (not necessarily the same)."""
_LIST_MARKER = re.compile(r"^(?:[-*•>#]+\s+|\d{1,2}[.)]\s+)")


class ParaphraseTurn(NamedTuple):
    """One question to paraphrase. ``entity_names`` holds one entry per entity that may be
    named in the question: its label first, then its aliases. ``answers`` are the gold entity
    labels (not yes/no or numbers), which a paraphrase must not introduce."""

    chain_id: str
    turn_index: int
    question: str
    entity_names: Sequence[Sequence[str]]
    is_explicit: bool
    answers: Sequence[str] = ()


@dataclass(frozen=True)
class ParaphraseResult:
    """The outcome for one turn: ``paraphrase`` is set only when accepted; ``reasons`` are the
    last attempt's rejection reasons; ``error`` is a backend failure (never accepted)."""

    chain_id: str
    turn_index: int
    original: str
    paraphrase: str | None
    attempts: int
    reasons: tuple[str, ...] = ()
    error: str | None = None
    last_reply: str | None = None

    @property
    def accepted(self) -> bool:
        return self.paraphrase is not None

    @property
    def status(self) -> str:
        if self.paraphrase is not None:
            return "accepted"
        return "error" if self.error is not None else "rejected"


@dataclass(frozen=True)
class ParaphraseCounts:
    """``accepted + rejected + errors == turns``; ``rejected_by_reason`` counts each rejected
    turn once per reason of its final attempt; ``attempts`` is the number of requests."""

    turns: int = 0
    accepted: int = 0
    accepted_after_retry: int = 0
    rejected: int = 0
    errors: int = 0
    attempts: int = 0
    batches: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, int]:
        return {
            "turns": self.turns,
            "accepted": self.accepted,
            "accepted_after_retry": self.accepted_after_retry,
            "rejected": self.rejected,
            "errors": self.errors,
            "attempts": self.attempts,
            "batches": self.batches,
            **{f"rejected_{reason}": n for reason, n in self.rejected_by_reason.items()},
        }


def paraphrase_request(question: str) -> ChatRequest:
    return ChatRequest(messages=(("user", PARAPHRASE_PROMPT.format(question=question)),))


def paraphrase_decoding(
    base: Decoding, max_new_tokens: int = PARAPHRASE_MAX_NEW_TOKENS
) -> Decoding:
    """A registry model's decoding made fit for rewriting: one candidate, and room for a whole
    question (evaluation budgets of ~24 tokens would cut paraphrases short)."""
    return replace(base, k=1, max_new_tokens=max(base.max_new_tokens, max_new_tokens))


def attempt_decoding(
    decoding: Decoding, attempt: int, retry_temperature: float = RETRY_TEMPERATURE
) -> Decoding:
    """Attempt 0 decodes as configured; retry n uses seed + n and, if the configured decoding
    is greedy, ``retry_temperature``, since greedy decoding would repeat the rejected reply."""
    if attempt == 0:
        return replace(decoding, k=1)
    temperature = decoding.temperature if decoding.temperature > 0 else retry_temperature
    return replace(decoding, k=1, seed=decoding.seed + attempt, temperature=temperature)


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


def _is_question(text: str) -> bool:
    """Ends with a question mark, closing quotes and spaces after it tolerated."""
    return text.rstrip().rstrip(_QUOTES + " \t").endswith(("?", "\uff1f"))


def paraphrase_problems(
    original: str,
    paraphrase: str,
    *,
    entity_names: Sequence[Sequence[str]],
    is_explicit: bool,
    answers: Sequence[str] = (),
) -> list[str]:
    """Why ``paraphrase`` does not ask what ``original`` asks (empty when it does), as tokens
    of ``REASONS`` in that order. An entity counts as named only if its label (the first name
    of its entry) occurs in the original, so callers may pass every candidate entity; the
    paraphrase may then name it by label or any alias. "identical" compares words after
    case, accent and punctuation folding."""
    if not any(c.isalnum() for c in paraphrase):
        return ["empty"]
    problems = []
    if not _is_question(paraphrase):
        problems.append("not_a_question")
    folded_original, folded_paraphrase = fold(original), fold(paraphrase)
    if _WORD.findall(folded_original) == _WORD.findall(folded_paraphrase):
        problems.append("identical")
    years, new_years = year_tokens(original), year_tokens(paraphrase)
    added = new_years - years
    if years - new_years or (added and is_explicit):
        problems.append("year_changed")
    if added and not is_explicit:
        problems.append("year_added_to_implicit")
    for reason, words in (("present_added", PRESENT_WORDS), ("time_shift_added", TIME_SHIFT_WORDS)):
        if _has_any(folded_paraphrase, words) and not _has_any(folded_original, words):
            problems.append(reason)
    if _has_any(folded_original, BACK_REFERENCES) and not _has_any(
        folded_paraphrase, BACK_REFERENCES
    ):
        problems.append("time_reference_dropped")
    for names in entity_names:
        if not names or not mentions(folded_original, names[0]):
            continue
        if not any(mentions(folded_paraphrase, name) for name in names):
            problems.append("entity_missing")
            break
    if any(mentions(folded_paraphrase, a) and not mentions(folded_original, a) for a in answers):
        problems.append("answer_added")
    return problems


def paraphrase_turns(
    turns: Sequence[ParaphraseTurn | tuple[Any, ...]],
    chat: CachedChat,
    decoding: Decoding,
    *,
    retries: int = 2,
    retry_temperature: float = RETRY_TEMPERATURE,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[ParaphraseResult], ParaphraseCounts]:
    """Paraphrase every turn: one batch of first attempts, then one batch per retry of the
    turns still rejected (see ``attempt_decoding``). A backend error ends that turn's attempts
    (errors are not cached, so a rerun asks again). Results are in (chain_id, turn_index)
    order; through the cache a rerun costs no call."""
    items = sorted((ParaphraseTurn(*t) for t in turns), key=lambda t: (t.chain_id, t.turn_index))
    keys = [(t.chain_id, t.turn_index) for t in items]
    if len(set(keys)) != len(keys):
        duplicate = next(k for k, n in Counter(keys).items() if n > 1)
        raise ValueError(f"turn {duplicate[1]} of chain {duplicate[0]} is given twice")
    outcome: dict[tuple[str, int], ParaphraseResult] = {}
    pending = items
    batches = 0
    for attempt in range(retries + 1):
        if not pending:
            break
        completions = chat.complete(
            [paraphrase_request(t.question) for t in pending],
            attempt_decoding(decoding, attempt, retry_temperature),
            progress,
        )
        batches += 1
        rejected = []
        for turn, completion in zip(pending, completions, strict=True):
            base = ParaphraseResult(
                turn.chain_id, turn.turn_index, turn.question, None, attempt + 1
            )
            key = (turn.chain_id, turn.turn_index)
            if completion.text is None:
                outcome[key] = replace(base, error=completion.error or "no candidates")
                continue
            reply = clean_reply(completion.text)
            problems = paraphrase_problems(
                turn.question,
                reply,
                entity_names=turn.entity_names,
                is_explicit=turn.is_explicit,
                answers=turn.answers,
            )
            if problems:
                outcome[key] = replace(base, reasons=tuple(problems), last_reply=reply)
                rejected.append(turn)
            else:
                outcome[key] = replace(base, paraphrase=reply, last_reply=reply)
        pending = rejected
    results = [outcome[key] for key in keys]
    return results, _count(results, batches)


def _count(results: Sequence[ParaphraseResult], batches: int) -> ParaphraseCounts:
    by_reason = Counter(reason for r in results if r.status == "rejected" for reason in r.reasons)
    return ParaphraseCounts(
        turns=len(results),
        accepted=sum(r.accepted for r in results),
        accepted_after_retry=sum(r.accepted and r.attempts > 1 for r in results),
        rejected=sum(r.status == "rejected" for r in results),
        errors=sum(r.status == "error" for r in results),
        attempts=sum(r.attempts for r in results),
        batches=batches,
        rejected_by_reason={reason: by_reason[reason] for reason in REASONS if by_reason[reason]},
    )


def kept_chains(results: Sequence[ParaphraseResult]) -> list[str]:
    """Chains every turn of which was accepted, sorted; callers pass every turn of a chain."""
    accepted: dict[str, bool] = {}
    for result in results:
        accepted[result.chain_id] = accepted.get(result.chain_id, True) and result.accepted
    return sorted(chain_id for chain_id, ok in accepted.items() if ok)


def turns_for_paraphrase(
    turns: pa.Table, names: Mapping[str, Sequence[str]]
) -> list[ParaphraseTurn]:
    """Rows of a turns table as paraphrase inputs. ``names`` maps a QID to its label and
    aliases; the subject, the asked value, the gold and present-day values are candidate
    entities (only those the question names are checked), and an entity answer's gold labels
    and aliases must not appear."""
    columns = [
        "chain_id", "turn_index", "question", "is_explicit", "answer_kind", "subject_qid",
        "subject_label", "asked_qid", "gold_qids", "gold_labels", "gold_aliases", "present_qids",
    ]  # fmt: skip
    items = []
    for row in turns.select(columns).to_pylist():
        entities: list[tuple[str, ...]] = [
            tuple(names.get(row["subject_qid"], ())) or (row["subject_label"],)
        ]
        for qid in [row["asked_qid"], *row["gold_qids"], *row["present_qids"]]:
            if qid and names.get(qid):
                entities.append(tuple(names[qid]))
        answers = (
            (*row["gold_labels"], *row["gold_aliases"]) if row["answer_kind"] == "entity" else ()
        )
        items.append(
            ParaphraseTurn(
                row["chain_id"],
                row["turn_index"],
                row["question"],
                tuple(entities),
                row["is_explicit"],
                answers,
            )
        )
    return items


PARAPHRASES_SCHEMA = pa.schema(
    [
        pa.field("chain_id", pa.string(), nullable=False),
        pa.field("turn_index", pa.int16(), nullable=False),
        pa.field("original_question", pa.string(), nullable=False),
        pa.field("paraphrase", pa.string()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("reasons", pa.list_(pa.string()), nullable=False),
        pa.field("attempts", pa.int16(), nullable=False),
        pa.field("last_reply", pa.string()),
        pa.field("error", pa.string()),
        pa.field("chain_kept", pa.bool_(), nullable=False),
    ]
)


def paraphrases_table(results: Sequence[ParaphraseResult]) -> pa.Table:
    """One row per paraphrased turn, in (chain_id, turn_index) order; ``chain_kept`` marks the
    turns of chains every turn of which was accepted (``kept_chains``)."""
    kept = set(kept_chains(results))
    rows = [
        {
            "chain_id": r.chain_id,
            "turn_index": r.turn_index,
            "original_question": r.original,
            "paraphrase": r.paraphrase,
            "status": r.status,
            "reasons": list(r.reasons),
            "attempts": r.attempts,
            "last_reply": r.last_reply,
            "error": r.error,
            "chain_kept": r.chain_id in kept,
        }
        for r in sorted(results, key=lambda r: (r.chain_id, r.turn_index))
    ]
    return pa.Table.from_pylist(rows, schema=PARAPHRASES_SCHEMA)


def entity_names(labels: pa.Table) -> dict[str, tuple[str, ...]]:
    """QID -> its names for the filter: the label of the latest snapshot first, then the other
    snapshots' labels and every alias, without repeats. ``labels`` has the columns of the
    ``labels`` view (``qid``, ``label``, ``aliases``, ``snapshot_year``)."""
    names: dict[str, list[str]] = {}
    rows = labels.select(["qid", "snapshot_year", "label", "aliases"]).to_pylist()
    rows.sort(key=lambda row: (row["qid"], -int(row["snapshot_year"])))
    for row in rows:
        known = names.setdefault(row["qid"], [])
        for name in [row["label"], *(row["aliases"] or ())]:
            if name and name not in known:
                known.append(name)
    return {qid: tuple(found) for qid, found in names.items() if found}


def subset_sql(chains: str, size: int, seed: int) -> str:
    """About ``size`` chains (exactly, if there are that many) spread evenly over the (family,
    length) strata: within a stratum chains are ranked by a seeded hash of the id, and
    strata take turns, rank by rank (the order of strata in the last round also by seeded
    hash), so every stratum gets its share or all its chains if it has fewer. A larger size
    only adds chains."""
    return f"""
    WITH ranked AS (
        SELECT chain_id, family, length,
               row_number() OVER (PARTITION BY family, length
                                  ORDER BY sha256('{int(seed)}:' || chain_id), chain_id)
                   AS stratum_rank
        FROM {chains}
    ), ordered AS (
        SELECT *, row_number() OVER (
                      ORDER BY stratum_rank,
                               sha256('{int(seed)}:' || family || ':' || CAST(length AS VARCHAR)),
                               family, length) AS pick
        FROM ranked
    )
    SELECT chain_id, family, length, stratum_rank
    FROM ordered WHERE pick <= {int(size)}
    ORDER BY family, length, stratum_rank
    """
