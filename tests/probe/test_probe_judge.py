"""The deterministic checker's tolerance, the LLM judge's plumbing, the sign test, the report."""

from __future__ import annotations

import json
from datetime import date
from math import comb

import pytest

from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.probe import judge as judge_module
from chronoscope_dagster.probe.agents import ChatAgent
from chronoscope_dagster.probe.assemble import build_corpus
from chronoscope_dagster.probe.corpus import ids_fingerprint, load_authored
from chronoscope_dagster.probe.judge import (
    Check,
    LLMJudge,
    check_answer,
    gold_from_text,
    gold_of,
    judge_for_model,
    judge_templates_fingerprint,
    template_name,
)
from chronoscope_dagster.probe.report import (
    build_report,
    paired_comparison,
    render_markdown,
    sign_test,
)
from chronoscope_dagster.probe.rules import Gold
from chronoscope_dagster.probe.runs import ProbeRow, ProbeRun, run_probe
from tests.probe_helpers import recording

FOLLOW_UP = Gold("date", "26 March 2026", day=date(2026, 3, 26))
PUPPY = Gold("count", "14 weeks", count=14, unit="weeks")
ARRIVED = Gold("yes_no", "Yes — ...", day=date(2026, 1, 5), yes=True)
GYM = Gold("choice", "Boulder Barn", choice="Boulder Barn", options=("Boulder Barn", "Crux Hall"))


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("26 March 2026", True),
        ("It is on Thursday, 26th of March 2026.", True),
        ("March 27th", True),
        ("2026-03-25", True),
        ("3/26/2026", True),
        ("26/03/2026", True),
        ("28 March 2026", False),
        ("24 March 2026", False),
        ("26 March 2025", False),
        ("in three weeks", False),
        ("", False),
    ],
)
def test_dates_are_correct_within_one_day(answer, correct):
    assert check_answer(answer, FOLLOW_UP).correct is correct


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("14 weeks", True),
        ("She was fifteen weeks old.", True),
        ("13", True),
        ("about 13 weeks, having come home at 9 weeks", True),
        ("16 weeks", False),
        ("14 days", False),
        ("98 days", False),
        ("twelve weeks", False),
    ],
)
def test_counts_are_correct_within_one_unit(answer, correct):
    assert check_answer(answer, PUPPY).correct is correct


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("Yes, you started on the first Monday of the month.", True),
        ("yes", True),
        ("No, not yet.", False),
        ("Not yet.", False),
        ("I don't know, there is no information about it.", False),
        ("You have started, yes.", True),
    ],
)
def test_yes_no_answers_are_judged_by_their_side(answer, correct):
    assert check_answer(answer, ARRIVED).correct is correct


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("You were at Boulder Barn.", True),
        ("boulder barn, before moving to Crux Hall", True),
        ("Crux Hall; you had left Boulder Barn.", False),
        ("I am not sure.", False),
    ],
)
def test_choices_are_judged_by_the_first_option_named(answer, correct):
    assert check_answer(answer, GYM).correct is correct


def test_golds_without_a_spec_are_read_from_their_text():
    near = date(2023, 5, 30)
    assert gold_from_text(7, near).count == 7
    assert (gold_from_text("18 days", near).count, gold_from_text("18 days", near).unit) == (
        18,
        "days",
    )
    assert gold_from_text("Yes, twice.", near).yes is True
    assert gold_from_text("15 March 2023", near).day == date(2023, 3, 15)
    assert gold_from_text("Sarah", near).kind == "text"
    assert check_answer("It was Sarah.", gold_from_text("Sarah", near)).correct


def test_spec_golds_match_the_item_answers():
    corpus = load_authored()
    for item in corpus.items:
        gold = gold_of(item, corpus.specs[item.question_id])
        assert gold.text == item.answer
        assert check_answer(str(item.answer), gold).correct, item.question_id


def test_the_llm_judge_goes_through_the_backend_and_records_its_reply():
    corpus = load_authored()
    backend = recording("oracle")
    judge = LLMJudge(CachedChat(backend, None))
    item = corpus.items[0]
    verdicts = judge.judge(
        [
            (item, "Boulder Barn", None, Check(True, "choice", "")),
            (item, "Crux Hall", None, Check(False, "choice", "")),
            (item, "", None, Check(False, "choice", "")),
            (item, "", "timeout: backend", Check(False, "choice", "")),
        ]
    )
    assert [(v.correct, v.reply) for v in verdicts] == [
        (True, "yes"),
        (False, "no"),
        (False, None),
        (None, None),
    ]
    assert len(backend.requests) == 2
    prompt = backend.requests[0].messages[0][1]
    assert "at most one calendar day apart" in prompt and item.question in prompt
    assert template_name(item) == "temporal"


def test_the_judge_template_fingerprint_is_stable_and_tracks_wording(monkeypatch):
    first = judge_templates_fingerprint()
    assert first == judge_templates_fingerprint() and len(first) == 64
    monkeypatch.setitem(
        judge_module.JUDGE_TEMPLATES, "temporal", "changed {question}{answer}{response}"
    )
    assert judge_templates_fingerprint() != first


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (0, 0, 1.0),
        (3, 3, 1.0),
        (5, 0, 0.0625),
        (0, 6, 0.03125),
        (1, 9, 2 * (1 + 10) / 1024),
        (2, 8, 2 * (1 + 10 + 45) / 1024),
        (12, 0, 2 / 4096),
        (4, 5, 1.0),
    ],
)
def test_the_sign_test_against_known_binomial_values(wins, losses, p):
    assert sign_test(wins, losses) == pytest.approx(p, rel=1e-12)


def test_the_sign_test_matches_the_binomial_sum_for_larger_n():
    n, k = 40, 12
    expected = 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n
    assert sign_test(k, n - k) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def _row(arm: str, item: str, correct: bool) -> ProbeRow:
    return ProbeRow("m", arm, "a", "x", item, "t", "", None, correct, "date", "")


def test_the_paired_comparison_counts_discordant_items():
    rows = [_row("control", f"i{k}", True) for k in range(8)]
    rows += [_row("probe", f"i{k}", k < 2) for k in range(8)]
    paired = paired_comparison(rows, "control", "probe")
    assert (paired.n, paired.both_correct, paired.first_only, paired.second_only) == (8, 2, 6, 0)
    assert paired.difference == pytest.approx(0.75)
    assert paired.p_value == pytest.approx(0.03125)


def test_the_report_and_its_markdown():
    corpus = build_corpus(n_generated=6)
    subset = corpus.select([item.question_id for item in corpus.items][:10])
    run = run_probe(subset, ChatAgent(CachedChat(recording("oracle"), None), name="oracle"))
    report = build_report(run, corpus)
    scores = {s.arm: s for s in report.arms}
    assert {arm: (s.correct, s.n) for arm, s in scores.items()} == {
        "control": (10, 10),
        "probe": (10, 10),
        "oracle": (10, 10),
        "floor": (10, 10),
    }
    assert report.control_minus_probe == 0.0 and report.paired.p_value == 1.0
    v = report.provenance
    assert v.corpus_id == corpus.id and v.corpus_sha256 == corpus.sha256()
    assert (v.corpus_questions, v.selected_questions) == (len(corpus.items), 10)
    assert v.selected_ids_fingerprint == ids_fingerprint(run.question_ids)
    assert v.judge_templates_fingerprint == judge_templates_fingerprint()
    assert report.ordering_floor is not None and report.ordering_floor[1] == 10
    markdown = render_markdown(report)
    assert "| control | oracle | 100.0% | 10 / 10 |" in markdown
    assert "(n = 10)" in markdown and "p = 1" in markdown
    assert corpus.sha256() in markdown and "too few to rank" in markdown
    assert report.as_dict()["delivered"]["probe"]["in_text_dates_removed"] is True
    assert ProbeRun.from_dict(json.loads(json.dumps(run.as_dict()))) == run


def test_a_registry_model_judges_through_the_cache(tmp_path):
    spec = parse_entry({"name": "oracle", "backend": "oracle"})
    item = load_authored().items[0]
    with judge_for_model(spec, tmp_path / "c") as judge:
        [verdict] = judge.judge([(item, "Boulder Barn", None, Check(True, "choice", ""))])
    assert (verdict.correct, judge.name) == (True, "oracle")
