"""The probe report: accuracy per arm with its n, control minus probe, a paired per-item
comparison with an exact sign test, what was delivered, and the provenance that pins it.

Reading it honestly: n stands beside every score; the probe says whether a system honours the
timestamps it is given, not which memory is better; every instant is read as UTC. The sign test
counts the items one arm got right and the other wrong (discordant pairs): under "the arms are
equally good" each such item falls either way with probability one half, and the two-sided
p-value is the chance of a split at least as uneven.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from chronoscope_dagster.markdown import markdown_table
from chronoscope_dagster.probe.corpus import Corpus, ids_fingerprint
from chronoscope_dagster.probe.grounding import DeliveredRecord
from chronoscope_dagster.probe.judge import (
    COUNT_TOLERANCE,
    DATE_TOLERANCE_DAYS,
    JUDGE_TEMPLATES,
    judge_templates_fingerprint,
)
from chronoscope_dagster.probe.runs import Arm, ProbeRow, ProbeRun, ordering_floor


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test over ``wins + losses`` discordant pairs, each a fair coin
    under the null: ``min(1, 2 * P(X <= min(wins, losses)))`` with X ~ Binomial(n, 1/2).
    No pairs: 1.0."""
    if wins < 0 or losses < 0:
        raise ValueError("counts cannot be negative")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True)
class ArmScore:
    arm: str
    agent: str
    n: int
    correct: int
    accuracy: float | None
    errors: int
    judge_n: int = 0
    judge_correct: int = 0
    judge_accuracy: float | None = None
    judge_agreement: float | None = None
    """Share of judged rows where the LLM judge and the checker agree."""


@dataclass(frozen=True)
class TypeScore:
    arm: str
    question_type: str
    n: int
    correct: int
    accuracy: float | None


@dataclass(frozen=True)
class PairedComparison:
    first: str
    second: str
    n: int
    both_correct: int
    first_only: int
    second_only: int
    neither: int
    difference: float | None
    """Accuracy of ``first`` minus that of ``second`` over the paired items."""
    p_value: float


@dataclass(frozen=True)
class Provenance:
    corpus_id: str
    corpus_sha256: str
    corpus_questions: int
    selected_questions: int
    selected_ids_fingerprint: str
    judge_templates_fingerprint: str
    judge_templates: tuple[str, ...]
    judge_model: str | None
    checker: str = (
        f"dates ±{DATE_TOLERANCE_DAYS} day, counts ±{COUNT_TOLERANCE} unit, yes/no by side, "
        "choice by first option named"
    )
    time_zone: str = "UTC (the corpus carries none)"


@dataclass(frozen=True)
class ProbeReport:
    model: str
    arms: tuple[ArmScore, ...]
    by_type: tuple[TypeScore, ...]
    control_minus_probe: float | None
    paired: PairedComparison | None
    delivered: dict[str, DeliveredRecord]
    provenance: Provenance
    ordering_floor: tuple[int, int] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(correct: int, n: int) -> float | None:
    return correct / n if n else None


def _arm_score(arm: str, rows: Sequence[ProbeRow]) -> ArmScore:
    judged = [row for row in rows if row.judge_correct is not None]
    agree = sum(row.judge_correct == row.check_correct for row in judged)
    return ArmScore(
        arm=arm,
        agent=rows[0].agent if rows else "",
        n=len(rows),
        correct=sum(row.check_correct for row in rows),
        accuracy=_ratio(sum(row.check_correct for row in rows), len(rows)),
        errors=sum(row.error is not None for row in rows),
        judge_n=len(judged),
        judge_correct=sum(bool(row.judge_correct) for row in judged),
        judge_accuracy=_ratio(sum(bool(row.judge_correct) for row in judged), len(judged)),
        judge_agreement=_ratio(agree, len(judged)),
    )


def paired_comparison(rows: Sequence[ProbeRow], first: str, second: str) -> PairedComparison:
    """Items answered in both arms, cross-tabulated by the checker's verdicts."""
    a = {row.item_id: row.check_correct for row in rows if row.arm == first}
    b = {row.item_id: row.check_correct for row in rows if row.arm == second}
    common = [item for item in a if item in b]
    both = sum(a[i] and b[i] for i in common)
    first_only = sum(a[i] and not b[i] for i in common)
    second_only = sum(b[i] and not a[i] for i in common)
    return PairedComparison(
        first=first,
        second=second,
        n=len(common),
        both_correct=both,
        first_only=first_only,
        second_only=second_only,
        neither=len(common) - both - first_only - second_only,
        difference=_ratio(first_only - second_only, len(common)),
        p_value=sign_test(first_only, second_only),
    )


def build_report(run: ProbeRun, corpus: Corpus, *, with_ordering_floor: bool = True) -> ProbeReport:
    """The report of ``run``; ``corpus`` is the whole corpus it was drawn from (its hash and
    size are recorded, the run's own question ids are fingerprinted)."""
    arms = list(dict.fromkeys(row.arm for row in run.rows))
    scores = tuple(_arm_score(arm, [r for r in run.rows if r.arm == arm]) for arm in arms)
    by_type = []
    for arm in arms:
        types = dict.fromkeys(r.question_type for r in run.rows if r.arm == arm)
        for question_type in types:
            rows = [r for r in run.rows if r.arm == arm and r.question_type == question_type]
            correct = sum(r.check_correct for r in rows)
            by_type.append(
                TypeScore(arm, question_type, len(rows), correct, _ratio(correct, len(rows)))
            )
    paired = None
    if Arm.CONTROL in arms and Arm.PROBE in arms:
        paired = paired_comparison(run.rows, Arm.CONTROL, Arm.PROBE)
    floor = None
    if with_ordering_floor and corpus.specs:
        floor = ordering_floor(corpus.select(run.question_ids))
    provenance = Provenance(
        corpus_id=corpus.id,
        corpus_sha256=corpus.sha256(),
        corpus_questions=len(corpus.items),
        selected_questions=len(run.question_ids),
        selected_ids_fingerprint=ids_fingerprint(run.question_ids),
        judge_templates_fingerprint=judge_templates_fingerprint(),
        judge_templates=tuple(sorted(JUDGE_TEMPLATES)),
        judge_model=run.judge,
    )
    notes = []
    n = len(run.question_ids)
    if n < 30:
        notes.append(
            f"{n} questions: enough to show that a system ignores timestamps, too few to rank "
            "systems that do not."
        )
    return ProbeReport(
        model=run.model,
        arms=scores,
        by_type=tuple(by_type),
        control_minus_probe=paired.difference if paired else None,
        paired=paired,
        delivered=dict(run.delivered),
        provenance=provenance,
        ordering_floor=floor,
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class MemoryScore:
    """One memory system read by one reader (a registry model, or the rule reader), over the
    control and probe arms; ``paired`` compares them item by item (control first)."""

    system: str
    reader: str
    n: int
    control: ArmScore
    probe: ArmScore
    control_minus_probe: float | None
    paired: PairedComparison

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def memory_scores(runs: Sequence[ProbeRun]) -> tuple[MemoryScore, ...]:
    """A score per (system, reader) run of a memory system, in the order given."""
    scores = []
    for run in runs:
        control = [row for row in run.rows if row.arm == Arm.CONTROL]
        probe = [row for row in run.rows if row.arm == Arm.PROBE]
        paired = paired_comparison(run.rows, Arm.CONTROL, Arm.PROBE)
        scores.append(
            MemoryScore(
                system=run.system,
                reader=run.model,
                n=paired.n,
                control=_arm_score(Arm.CONTROL, control),
                probe=_arm_score(Arm.PROBE, probe),
                control_minus_probe=paired.difference,
                paired=paired,
            )
        )
    return tuple(scores)


SIGNIFICANT = 0.05


def memory_notes(scores: Sequence[MemoryScore], rule_reader: str) -> list[str]:
    """Where a model reader shows no significant drop for a system whose store loses it
    under ``rule_reader``: the model is too weak to show it, said with the numbers."""
    lost = {
        s.system: s
        for s in scores
        if s.reader == rule_reader
        and s.paired.p_value < SIGNIFICANT
        and (s.paired.difference or 0) > 0
    }
    notes = []
    for score in scores:
        store = lost.get(score.system)
        if store is None or score.reader == rule_reader or score.paired.p_value < SIGNIFICANT:
            continue
        best = sign_test(score.n, 0)
        why = (
            f"at n = {score.n} no split can reach p < {SIGNIFICANT} (at best p = {best:.3g}): "
            "probe more items"
            if best >= SIGNIFICANT
            else "the model reads too poorly for the stored time to decide its answers"
        )
        notes.append(
            f"{score.reader} does not show what {score.system}'s store loses: control "
            f"{_pct(score.control.accuracy)}, probe {_pct(score.probe.accuracy)} "
            f"({_points(score.paired.difference)}, p = {score.paired.p_value:.3g}, "
            f"n = {score.n}), where the rule reader loses {_points(store.paired.difference)} "
            f"(p = {store.paired.p_value:.3g}, n = {store.n}): {why}."
        )
    return notes


def render_memory_markdown(scores: Sequence[MemoryScore], rule_reader: str) -> str:
    """The memory systems side by side, for the top of the probe report."""
    lines = [
        "# Time-grounded probe: memory systems",
        "",
        "Each memory stores every message of a question's history in SQLite and answers from "
        "the messages FTS5 recalls for the question, shown with the time it stored for each: "
        "`valid_time_memory` the time the message was said, `ingest_time_memory` the time it "
        "was ingested (just before the question). Store, retrieval, prompt and reader are the "
        f"same; only the stored time differs. The {rule_reader} answers by the probe's rules "
        "from what was recalled, with no model: what each store makes possible. A model "
        "reader shows what a model makes of it.",
        "",
        markdown_table(
            ["system", "reader", "n", "control", "probe", "control − probe",
             "control only / probe only", "sign test p", "errors"],
            [
                (s.system, s.reader, s.n,
                 f"{_pct(s.control.accuracy)} ({s.control.correct})",
                 f"{_pct(s.probe.accuracy)} ({s.probe.correct})",
                 _points(s.paired.difference),
                 f"{s.paired.first_only} / {s.paired.second_only}",
                 f"{s.paired.p_value:.3g}", s.control.errors + s.probe.errors)
                for s in scores
            ],
        ),
    ]  # fmt: skip
    notes = memory_notes(scores, rule_reader)
    if notes:
        lines += ["", *(f"> {note}" for note in notes)]
    return "\n".join(lines) + "\n"


def _points(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.1f} points"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render_markdown(report: ProbeReport) -> str:
    """The report as Markdown, for the asset's metadata and the command line."""
    lines = [f"# Time-grounded probe: {report.model}", ""]
    lines += [
        "Does the system honour the timestamps it is given? Control delivers the dates both "
        "as timestamps and in the text; probe as timestamps only. A drop under the probe is "
        "the share of the score that came from dates printed in the prompt. Not comparable "
        "with LongMemEval scores; instants are read as UTC.",
        "",
        markdown_table(
            ["arm", "agent", "accuracy", "correct / n", "errors", "LLM judge", "judge n",
             "agreement"],
            [
                (s.arm, s.agent, _pct(s.accuracy), f"{s.correct} / {s.n}", s.errors,
                 _pct(s.judge_accuracy), s.judge_n, _pct(s.judge_agreement))
                for s in report.arms
            ],
        ),
    ]  # fmt: skip
    if report.ordering_floor:
        correct, n = report.ordering_floor
        lines += [
            "",
            f"Ordering-only floor (the oracle reader with ingestion-time stamps, no model): "
            f"{_pct(_ratio(correct, n))} ({correct} / {n}).",
        ]
    if report.paired:
        p = report.paired
        diff = "n/a" if p.difference is None else f"{100 * p.difference:+.1f} points"
        lines += [
            "",
            f"## Control minus probe: {diff} (n = {p.n})",
            "",
            markdown_table(
                ["", "probe right", "probe wrong"],
                [
                    ("control right", p.both_correct, p.first_only),
                    ("control wrong", p.second_only, p.neither),
                ],
            ),
            "",
            f"Exact two-sided sign test over {p.first_only + p.second_only} discordant items: "
            f"p = {p.p_value:.4g}.",
        ]
    if report.by_type:
        lines += [
            "",
            "## By question type",
            "",
            markdown_table(
                ["arm", "type", "accuracy", "correct / n"],
                [
                    (t.arm, t.question_type, _pct(t.accuracy), f"{t.correct} / {t.n}")
                    for t in report.by_type
                ],
            ),
        ]
    lines += [
        "",
        "## Delivered",
        "",
        markdown_table(
            ["arm", "mode", "questions", "sessions timestamped", "turns timestamped", "earliest",
             "latest", "in-text dates removed", "sessions with date-like content"],
            [
                (arm, d.mode, d.questions, d.sessions_timestamped, d.turns_timestamped,
                 d.earliest or "-", d.latest or "-", "yes" if d.in_text_dates_removed else "no",
                 d.sessions_with_date_like_content)
                for arm, d in report.delivered.items()
            ],
        ),
    ]  # fmt: skip
    v = report.provenance
    lines += [
        "",
        "## Provenance",
        "",
        f"- corpus: `{v.corpus_id}` ({v.corpus_questions} questions), SHA-256 `{v.corpus_sha256}`",
        f"- selected: {v.selected_questions} questions, "
        f"id fingerprint `{v.selected_ids_fingerprint}`",
        f"- judge templates ({', '.join(v.judge_templates)}): `{v.judge_templates_fingerprint}`",
        f"- LLM judge: {v.judge_model or 'none'}; checker: {v.checker}",
        f"- time zone: {v.time_zone}",
    ]
    if report.notes:
        lines += ["", *(f"> {note}" for note in report.notes)]
    return "\n".join(lines) + "\n"
