"""The probe corpus: the authored items, the generated ones, their answer specs, and its file.

A corpus is LongMemEval items plus, per item, the answer spec the gold was computed from. The
items alone are the LongMemEval file (what is hashed and what a run delivers); the specs travel
beside it in a sidecar (``<name>.specs.json``), which the oracle reader and the checker use and
which is not part of the hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from chronoscope_dagster.data import DATA_DIR
from chronoscope_dagster.files import atomic_write
from chronoscope_dagster.probe.longmemeval import (
    Item,
    Turn,
    dump_items,
    items_to_json,
    load_items,
)
from chronoscope_dagster.probe.rules import AnswerSpec, RuleError, spec_from_json, spec_to_json
from chronoscope_dagster.probe.scenario import SessionDraft, build_item, parse_instant
from chronoscope_dagster.probe.validate import Problem, validate_items

PROBE_DATA_DIR = DATA_DIR / "probe"
AUTHORED_FILE = PROBE_DATA_DIR / "corpus.yaml"
DEFAULT_GENERATED = 120
DEFAULT_SEED = 0


class CorpusError(ValueError):
    """A corpus file is malformed or a corpus breaks its contract; lists what and where."""

    def __init__(self, message: str, problems: Sequence[Problem] = ()) -> None:
        self.problems = list(problems)
        lines = [message, *(f"  {problem}" for problem in self.problems[:50])]
        if len(self.problems) > 50:
            lines.append(f"  ... and {len(self.problems) - 50} more")
        super().__init__("\n".join(lines))


def text_sha256(text: str) -> str:
    """SHA-256 of UTF-8 text after CRLF/CR -> LF, so checkouts on any OS agree."""
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def ids_fingerprint(question_ids: Iterable[str]) -> str:
    """SHA-256 of the selected question ids joined by newlines, in run order."""
    return hashlib.sha256("\n".join(question_ids).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Corpus:
    id: str
    items: tuple[Item, ...]
    specs: Mapping[str, AnswerSpec] = field(default_factory=dict)

    def text(self) -> str:
        return items_to_json(self.items)

    def sha256(self) -> str:
        return text_sha256(self.text())

    def validate(self) -> list[Problem]:
        if not self.items:
            return [Problem(self.id, "empty", "the corpus holds no items")]
        return validate_items(self.items, self.specs)

    def select(self, question_ids: Iterable[str]) -> Corpus:
        wanted = list(question_ids)
        by_id = {item.question_id: item for item in self.items}
        missing = [qid for qid in wanted if qid not in by_id]
        if missing:
            raise KeyError(f"not in corpus {self.id}: {', '.join(missing)}")
        return Corpus(self.id, tuple(by_id[qid] for qid in wanted), self.specs)


def first_per_type(corpus: Corpus, count: int) -> Corpus:
    """The first ``count`` items of each question type, in corpus order (all when 0)."""
    if not count:
        return corpus
    taken: dict[str, int] = {}
    chosen = []
    for item in corpus.items:
        if taken.get(item.question_type, 0) < count:
            taken[item.question_type] = taken.get(item.question_type, 0) + 1
            chosen.append(item.question_id)
    return corpus.select(chosen)


def _turns(raw: Any, where: str) -> tuple[Turn, ...]:
    if not isinstance(raw, list) or not raw:
        raise CorpusError(f"{where}: turns must be a non-empty list")
    turns = []
    for position, entry in enumerate(raw, 1):
        roles = [
            role for role in ("user", "assistant") if isinstance(entry, dict) and role in entry
        ]
        if len(roles) != 1 or not set(entry) <= {roles[0], "evidence"}:
            raise CorpusError(f"{where}: turn {position} must be {{user|assistant: text}}")
        content = entry[roles[0]]
        if not isinstance(content, str):
            raise CorpusError(f"{where}: turn {position}: the message must be text")
        turns.append(Turn(roles[0], " ".join(content.split()), bool(entry.get("evidence", False))))
    return tuple(turns)


def authored_from_document(document: Any, source: str = "corpus") -> Corpus:
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise CorpusError(f"{source}: a mapping with `id`, `distractors` and `items` expected")
    corpus_id = document.get("id")
    if not isinstance(corpus_id, str) or not corpus_id:
        raise CorpusError(f"{source}: field `id` is required")
    distractors = {
        name: _turns(turns, f"{source}: distractor {name}")
        for name, turns in (document.get("distractors") or {}).items()
    }
    items: list[Item] = []
    specs: dict[str, AnswerSpec] = {}
    for position, raw in enumerate(document["items"], 1):
        where = f"{source}: item #{position}"
        if not isinstance(raw, dict):
            raise CorpusError(f"{where}: must be a mapping")
        try:
            question_id = str(raw["id"])
            where = f"{source}: {question_id}"
            sessions = []
            for number, session in enumerate(raw["sessions"], 1):
                at = parse_instant(session["at"], f"{where} session {number}")
                if "distractor" in session:
                    name = session["distractor"]
                    if name not in distractors:
                        raise CorpusError(f"{where} session {number}: no distractor {name!r}")
                    turns = tuple(Turn(t.role, t.content, False) for t in distractors[name])
                else:
                    turns = _turns(session.get("turns"), f"{where} session {number}")
                gold = session.get("gold", any(turn.has_answer for turn in turns))
                sessions.append(SessionDraft(at, turns, bool(gold)))
            item, spec = build_item(
                question_id,
                str(raw["type"]),
                " ".join(str(raw["question"]).split()),
                parse_instant(raw["asked"], f"{where} asked"),
                sessions,
                raw["answer"],
            )
        except KeyError as error:
            raise CorpusError(f"{where}: missing field {error}") from None
        except RuleError as error:
            raise CorpusError(f"{where}: {error}") from None
        items.append(item)
        specs[question_id] = spec
    return Corpus(corpus_id, tuple(items), specs)


def load_authored(path: str | Path = AUTHORED_FILE, *, check: bool = True) -> Corpus:
    """The authored corpus from its YAML file, golds computed; refused if it breaks a rule."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise CorpusError(f"{path}: not valid YAML: {error}") from error
    corpus = authored_from_document(document, str(path))
    if check:
        refuse_problems(corpus)
    return corpus


def refuse_problems(corpus: Corpus) -> None:
    """Raise ``CorpusError`` with every rule the corpus breaks, if any."""
    problems = corpus.validate()
    if problems:
        raise CorpusError(f"corpus {corpus.id} breaks {len(problems)} rule(s):", problems)


def combine(corpus_id: str, *parts: Corpus) -> Corpus:
    items = tuple(item for part in parts for item in part.items)
    specs = {qid: spec for part in parts for qid, spec in part.specs.items()}
    return Corpus(corpus_id, items, specs)


def specs_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.stem + ".specs.json")


def export_corpus(corpus: Corpus, path: str | Path, *, with_specs: bool = True) -> Path:
    """Write the corpus as a LongMemEval file at ``path`` (and its specs beside it)."""
    path = dump_items(corpus.items, path)
    if with_specs:
        sidecar = {
            "corpus_id": corpus.id,
            "corpus_sha256": corpus.sha256(),
            "specs": {qid: spec_to_json(spec) for qid, spec in corpus.specs.items()},
        }
        with atomic_write(specs_path(path)) as temporary:
            temporary.write_text(
                json.dumps(sidecar, indent=2, ensure_ascii=False) + "\n",
                encoding="utf-8",
                newline="\n",
            )
    return path


def read_corpus(path: str | Path, corpus_id: str | None = None) -> Corpus:
    """A corpus from a LongMemEval file, with its specs when a sidecar sits beside it (an
    upstream file has none: its items are then judged from their answer text). A file with
    no items is refused: a run over it would have nothing to score."""
    path = Path(path)
    items = tuple(load_items(path))
    if not items:
        raise CorpusError(f"{path}: holds no items (a probe needs at least one LongMemEval item)")
    sidecar = specs_path(path)
    specs: dict[str, AnswerSpec] = {}
    if sidecar.is_file():
        document = json.loads(sidecar.read_text(encoding="utf-8"))
        corpus_id = corpus_id or document.get("corpus_id")
        specs = {
            qid: spec_from_json(raw, where=f"{sidecar}: {qid}")
            for qid, raw in document.get("specs", {}).items()
        }
    return Corpus(corpus_id or path.stem, items, specs)
