"""Modes, the typed channel, the refusal before any call, and the four arms."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from chronoscope_dagster.llm.cache import CachedChat, ResponseCache
from chronoscope_dagster.probe.agents import BlindFloor, ChatAgent, OracleReader
from chronoscope_dagster.probe.assemble import build_corpus
from chronoscope_dagster.probe.corpus import Corpus, load_authored
from chronoscope_dagster.probe.dates import is_date_like
from chronoscope_dagster.probe.generator import generate
from chronoscope_dagster.probe.grounding import (
    AgentAnswer,
    GroundingMode,
    TextEpisode,
    TimestampedHistoryAgent,
    text_episode,
    timestamped_episode,
)
from chronoscope_dagster.probe.judge import LLMJudge
from chronoscope_dagster.probe.longmemeval import UnparseableDate, parse_date
from chronoscope_dagster.probe.runs import (
    ARMS,
    GroundingRefused,
    ordering_floor,
    run_arm,
    run_probe,
)
from tests.probe_helpers import recording


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_authored()


class TextOnlyAgent:
    """A system with no typed channel: it reads the history as text only."""

    name = "text-only-agent"

    def __init__(self, chat) -> None:
        self.chat = ChatAgent(chat)

    def answer_text(self, episodes: Sequence[TextEpisode]) -> list[AgentAnswer]:
        return self.chat.answer_text(episodes)


def test_timestamps_only_delivers_time_through_the_channel_alone(corpus):
    for item in corpus.items:
        episode = timestamped_episode(item, GroundingMode.TIMESTAMPS_ONLY)
        assert episode.query == item.question and "Current Date" not in episode.query
        assert episode.history.query_time == parse_date(item.question_date)
        sessions = [parse_date(d) for d in item.haystack_dates]
        for turn in episode.history.turns:
            assert turn.timestamp == sessions[turn.session_index]
            assert not is_date_like(turn.content)
        headers = [t.content for t in episode.history.turns if t.synthetic]
        assert headers == [f"--- Session {k} ---" for k in range(1, len(sessions) + 1)]


def test_control_delivers_the_dates_in_text_as_well(corpus):
    item = corpus.items[0]
    episode = timestamped_episode(item, GroundingMode.TIMESTAMPS_AND_TEXT)
    assert episode.query.startswith(f"Current Date: {item.question_date}\n\n")
    headers = [t.content for t in episode.history.turns if t.synthetic]
    assert headers[0] == f"--- Session 1 ({item.haystack_dates[0]}) ---"
    assert all(is_date_like(h) for h in headers)
    text = text_episode(item)
    assert text.query == episode.query
    assert [t.content for t in text.turns if t.synthetic] == headers
    with pytest.raises(ValueError, match="mode None"):
        timestamped_episode(item, GroundingMode.NONE)


def test_the_delivered_record(corpus):
    agent = OracleReader(corpus.items, corpus.specs)
    probe = run_arm(agent, corpus.items, GroundingMode.TIMESTAMPS_ONLY).delivered
    sessions = sum(len(i.haystack_sessions) for i in corpus.items)
    turns = sum(len(s) for i in corpus.items for s in i.haystack_sessions)
    assert probe.mode == "TimestampsOnly" and probe.questions == len(corpus.items)
    assert (probe.sessions_timestamped, probe.turns_timestamped) == (sessions, turns)
    stamps = [parse_date(d) for i in corpus.items for d in i.haystack_dates]
    assert probe.earliest == min(stamps).isoformat() and probe.latest == max(stamps).isoformat()
    assert probe.in_text_dates_removed and probe.sessions_with_date_like_content == 0
    control = run_arm(agent, corpus.items, GroundingMode.TIMESTAMPS_AND_TEXT).delivered
    assert not control.in_text_dates_removed
    oracle = run_arm(agent, corpus.items, GroundingMode.TIMESTAMPS_ONLY, gold_only=True).delivered
    assert oracle.sessions_timestamped == sum(len(i.answer_session_ids) for i in corpus.items)


def test_mode_none_uses_the_text_path(corpus):
    backend = recording("oracle")
    run = run_arm(TextOnlyAgent(CachedChat(backend, None)), corpus.items, GroundingMode.NONE)
    assert [a.text for a in run.answers] == [str(i.answer) for i in corpus.items]
    assert run.delivered.sessions_timestamped == 0 and run.delivered.earliest is None
    prompt = backend.requests[0].messages[1][1]
    assert "Current Date:" in prompt and "(Mon) 19:20) ---" in prompt and "[2025-" not in prompt


@pytest.mark.parametrize("mode", [GroundingMode.TIMESTAMPS_ONLY, GroundingMode.TIMESTAMPS_AND_TEXT])
def test_a_grounded_run_refuses_an_agent_without_the_channel_before_any_call(
    corpus, tmp_path, mode
):
    backend, judge_backend = recording("oracle"), recording("oracle")
    agent = TextOnlyAgent(CachedChat(backend, ResponseCache(tmp_path / "cache.sqlite")))
    assert not isinstance(agent, TimestampedHistoryAgent)
    with pytest.raises(GroundingRefused, match="'text-only-agent' does not implement"):
        run_arm(agent, corpus.items, mode)
    with pytest.raises(GroundingRefused, match="text-only-agent"):
        run_probe(corpus, agent, judge=LLMJudge(CachedChat(judge_backend, None)))
    assert backend.calls == [] and judge_backend.calls == []


def test_an_unparseable_date_fails_the_run_before_any_call(corpus):
    backend = recording("oracle")
    broken_item = replace(corpus.items[3], haystack_dates=("2026/02/07 (Sat) 11:30", "soon", "x"))
    broken = Corpus(corpus.id, (*corpus.items[:3], broken_item), corpus.specs)
    with pytest.raises(UnparseableDate) as caught:
        run_probe(broken, ChatAgent(CachedChat(backend, None)))
    assert (caught.value.question_id, caught.value.field, caught.value.value) == (
        "tg-asof-04",
        "haystack_dates[1]",
        "soon",
    )
    assert backend.calls == []


def test_the_oracle_reader_scores_one_and_the_blind_floor_scores_low(corpus):
    for source in (corpus, generate(120)):
        reader = OracleReader(source.items, source.specs)
        run = run_arm(reader, source.items, GroundingMode.TIMESTAMPS_ONLY, gold_only=True)
        assert [a.text for a in run.answers] == [str(i.answer) for i in source.items]
        correct, n = ordering_floor(source)
        assert n == len(source.items) and correct / n < 0.35


def test_the_blind_floor_restamps_with_ingestion_time(corpus):
    backend = recording("present_day")
    agent = ChatAgent(CachedChat(backend, None))
    run_arm(BlindFloor(agent), corpus.items[:1], GroundingMode.TIMESTAMPS_ONLY)
    run_arm(agent, corpus.items[:1], GroundingMode.TIMESTAMPS_ONLY)
    blind, seeing = (call[0].messages[1][1] for call in backend.calls)
    assert "[2025-10-06 (Mon) 19:20]" in seeing and "[2025-10-06" not in blind
    assert blind.count("[2026-03-03 (Tue) 17:59]") == 10
    with pytest.raises(TypeError, match="text-only-agent"):
        BlindFloor(TextOnlyAgent(None))  # type: ignore[arg-type]


def test_four_arms_with_the_reference_oracle_model_and_every_call_cached(tmp_path):
    corpus = build_corpus(n_generated=9)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    backend = recording("oracle")
    agent = ChatAgent(CachedChat(backend, cache), name="oracle")
    run = run_probe(corpus, agent, judge=LLMJudge(CachedChat(recording("oracle"), None)))
    assert [row.arm for row in run.rows] == [arm for arm in ARMS for _ in corpus.items]
    assert all(row.check_correct and row.judge_correct for row in run.rows)
    assert {row.agent for row in run.rows if row.arm == "floor"} == {"oracle+ingestion-time"}
    assert {row.agent for row in run.rows if row.arm == "oracle"} == {"oracle-reader"}
    assert set(run.delivered) == {"control", "probe", "oracle", "floor"}
    assert len(backend.requests) == 3 * len(corpus.items)
    assert run.question_ids == tuple(i.question_id for i in corpus.items)
    row = run.rows[0].as_dict()
    assert row["model"] == "oracle" and row["item_id"] == corpus.items[0].question_id


def test_present_day_scores_nothing_while_the_oracle_arm_stays_at_one(corpus):
    run = run_probe(corpus, ChatAgent(CachedChat(recording("present_day"), None)), model="pd")
    by_arm = {arm: [r.check_correct for r in run.rows if r.arm == arm] for arm in ARMS}
    assert not any(by_arm["control"]) and not any(by_arm["probe"]) and not any(by_arm["floor"])
    assert all(by_arm["oracle"])
    assert {r.model for r in run.rows} == {"pd"}
