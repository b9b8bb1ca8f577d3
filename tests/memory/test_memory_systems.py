"""The two memory systems on one SQLite store: same rows but for the time, same recall, and
the probe separates them with the rule reader (no model)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.memory.readers import Recall, RuleReader
from chronoscope_dagster.memory.runs import (
    RULE_READER,
    MemoryRun,
    rule_reader_runs,
    run_memory,
    store_problems,
)
from chronoscope_dagster.memory.store import MessageStore, match_expression
from chronoscope_dagster.memory.systems import (
    TOP_K,
    SQLiteMemory,
    Stamping,
    ingest_time_memory,
    valid_time_memory,
)
from chronoscope_dagster.probe.assemble import build_corpus
from chronoscope_dagster.probe.corpus import Corpus, load_authored
from chronoscope_dagster.probe.grounding import GroundingMode, timestamped_episode
from chronoscope_dagster.probe.report import memory_notes, memory_scores, render_memory_markdown
from tests.probe_helpers import recording

MODES = (GroundingMode.TIMESTAMPS_AND_TEXT, GroundingMode.TIMESTAMPS_ONLY)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_corpus()


@pytest.fixture(scope="module")
def rule_runs(corpus) -> list[MemoryRun]:
    return rule_reader_runs(corpus)


def _memory(stamping: Stamping, corpus: Corpus) -> SQLiteMemory:
    return SQLiteMemory(RuleReader(corpus.items, corpus.specs), stamping)


def test_the_store_recalls_by_text_best_first_ties_in_the_order_stored():
    at = datetime(2026, 1, 1, tzinfo=UTC)
    with MessageStore() as store:
        store.add_session(0, "--- Session 1 ---")
        for text in ("the piano exam", "a piano", "a piano", "tea and toast", "my dentist"):
            store.add_message(0, "user", text, at)
        store.set_now(at)
        assert [m.id for m in store.recall("When is the piano exam?", 3)] == [1, 2, 3]
        assert [m.content for m in store.recall("my dental check", 5)] == ["my dentist"]
        assert store.recall("", 5) == [] and store.recall("nothing matches", 5) == []
        assert store.recall("piano", 0) == []
        assert store.now == at and store.messages()[0].session_header == "--- Session 1 ---"
    assert match_expression('What "about" it?') == '"what" OR "about" OR "abou"* OR "it"'


@pytest.mark.parametrize("mode", MODES)
def test_the_two_stores_differ_only_in_the_time_stored_and_recall_the_same(corpus, mode):
    ingest, valid = _memory(Stamping.INGEST_TIME, corpus), _memory(Stamping.VALID_TIME, corpus)
    for item in corpus.items[:30]:
        episode = timestamped_episode(item, mode)
        turns = [t for t in episode.history.turns if not t.synthetic]
        with ingest.ingest(episode.history) as a, valid.ingest(episode.history) as b:
            rows_a, rows_b = a.messages(), b.messages()
            untimed = [(m.id, m.session_index, m.session_header, m.role, m.content) for m in rows_a]
            assert untimed == [
                (m.id, m.session_index, m.session_header, m.role, m.content) for m in rows_b
            ]
            assert [m.stamp for m in rows_b] == [t.timestamp for t in turns]
            now = episode.history.query_time
            assert [m.stamp for m in rows_a] == [
                now - timedelta(seconds=len(turns) - k) for k in range(len(turns))
            ]
            assert a.now == b.now == now
            assert a.sessions() == b.sessions()
            recalled = [m.id for m in a.recall(episode.query, TOP_K)]
            assert recalled == [m.id for m in b.recall(episode.query, TOP_K)]
            assert 0 < len(recalled) <= TOP_K


def test_the_rule_reader_separates_valid_time_from_ingestion_time(corpus, rule_runs):
    scores = {s.system: s for s in memory_scores([m.run for m in rule_runs])}
    valid, ingest = scores["valid_time_memory"], scores["ingest_time_memory"]
    n = len(corpus.items)
    assert (valid.n, valid.control.correct, valid.probe.correct) == (n, n, n)
    assert valid.paired.p_value == 1.0 and valid.control_minus_probe == 0
    assert (ingest.n, ingest.control.correct, ingest.paired.second_only) == (n, n, 0)
    assert ingest.probe.correct < 0.35 * n and ingest.paired.p_value < 1e-20
    assert valid.control.errors == valid.probe.errors == 0
    markdown = render_memory_markdown(tuple(scores.values()), RULE_READER)
    assert "| valid_time_memory | rule-reader | 135 | 100.0% (135) | 100.0% (135) |" in markdown


def test_what_the_stores_hold_has_no_date_in_any_message(corpus, rule_runs):
    for memory_run in rule_runs:
        control, probe = memory_run.stored["control"], memory_run.stored["probe"]
        assert control.episodes == probe.episodes == len(corpus.items)
        assert (
            control.messages
            == probe.messages
            == sum(len(s) for item in corpus.items for s in item.haystack_sessions)
        )
        assert control.date_like_messages == probe.date_like_messages == 0
        assert probe.date_like_headers == 0
        assert control.date_like_headers == control.sessions, "the control arm's crutch"
    assert store_problems(rule_runs) == []


class StampInText(SQLiteMemory):
    """A memory that also writes each message's time into its text: what the check refuses."""

    def ingest(self, history):
        store = super().ingest(history)
        for message in store.messages():
            store._connection.execute(
                "UPDATE messages SET content = ? WHERE id = ?",
                (f"[{message.stamp:%Y-%m-%d}] {message.content}", message.id),
            )
        return store


def test_a_store_that_writes_a_date_into_a_message_is_caught(corpus):
    memory = StampInText(RuleReader(corpus.items, corpus.specs), Stamping.VALID_TIME)
    run = run_memory(corpus.select(["tg-asof-01"]), memory, name="stamp-in-text", reader="rule")
    problems = store_problems([run])
    assert problems == [
        f"stamp-in-text (rule), {arm} arm: 10 stored message(s) hold a date: "
        + "; ".join(f"message {k}: iso_date '2025-10-06'" for k in range(1, 5))
        + "; message 5: iso_date '2025-11-14'"
        for arm in ("control", "probe")
    ]


def test_the_valid_time_memory_answers_from_the_time_it_stored(corpus, monkeypatch):
    """Move every stored instant a year on: the answers follow the store, not the episode."""
    original = MessageStore.add_message

    def a_year_later(self, session_index, role, content, stamp):
        return original(self, session_index, role, content, stamp + timedelta(days=365))

    monkeypatch.setattr(MessageStore, "add_message", a_year_later)
    run = run_memory(corpus, _memory(Stamping.VALID_TIME, corpus), name="v", reader="rule")
    [score] = memory_scores([run.run])
    assert score.control.correct == len(corpus.items), "the printed dates still decide control"
    assert score.probe.correct < 0.5 * len(corpus.items)


def test_runs_are_byte_identical(corpus, rule_runs):
    again = rule_reader_runs(corpus)
    assert [json.dumps(r.as_dict(), sort_keys=True, default=str) for r in again] == [
        json.dumps(r.as_dict(), sort_keys=True, default=str) for r in rule_runs
    ]
    assert (
        MemoryRun.from_dict(json.loads(json.dumps(rule_runs[0].as_dict(), default=str)))
        == (rule_runs[0])
    )


def test_the_model_reader_prompts_differ_only_in_the_stamps():
    corpus = load_authored().select(["tg-asof-01", "tg-current-01"])
    prompts = {}
    for factory in (ingest_time_memory, valid_time_memory):
        backend = recording("oracle")
        memory = factory(CachedChat(backend, None))
        run = run_memory(corpus, memory, name=memory.name, reader="oracle")
        assert all(row.answer == "" for row in run.run.rows), "no gold reaches the model"
        assert all(request.gold == "" for request in backend.requests)
        prompts[memory.name] = [request.messages for request in backend.requests]
    stamps = re.compile(r"\[\d{4}-\d{2}-\d{2} \(\w{3}\) \d{2}:\d{2}\]")
    ingest, valid = prompts["ingest_time_memory"], prompts["valid_time_memory"]
    assert ingest != valid
    assert [[stamps.sub("[]", m[1]) for m in p] for p in ingest] == [
        [stamps.sub("[]", m[1]) for m in p] for p in valid
    ]
    user = valid[-1][1][1]
    assert user.startswith("Recalled from earlier conversations:\n\n--- Session")
    assert "\n[2026-01-14 (Wed) 21:10] User: I started the forty-five-day free trial" in user
    assert user.endswith("\n\nIs my Inkwell trial still running?")
    assert valid[-1][0][1].endswith("Current date and time: 2026-03-04 (Wed) 10:00 UTC.")


def test_a_recall_holds_only_rows_of_the_store(corpus):
    seen: list[Recall] = []

    class Spy(RuleReader):
        def read(self, recalls):
            seen.extend(recalls)
            return super().read(recalls)

    memory = SQLiteMemory(Spy(corpus.items, corpus.specs), Stamping.VALID_TIME)
    item = corpus.items[0]
    episode = timestamped_episode(item, GroundingMode.TIMESTAMPS_ONLY)
    memory.answer_timestamped([episode])
    with memory.ingest(episode.history) as store:
        rows = set(store.messages())
        assert set(seen[0].messages) <= rows and seen[0].now == store.now


def test_the_report_says_when_a_model_reader_cannot_show_the_loss(corpus, rule_runs):
    weak = []
    for items in (corpus, corpus.select(["tg-asof-01", "tg-asof-02", "tg-asof-03"])):
        memory = ingest_time_memory(CachedChat(recording("present_day"), None))
        weak.append(run_memory(items, memory, name=memory.name, reader="weak").run)
    scores = memory_scores([*(m.run for m in rule_runs), *weak])
    notes = memory_notes(scores, RULE_READER)
    assert notes == [
        "weak does not show what ingest_time_memory's store loses: control 0.0%, probe 0.0% "
        "(+0.0 points, p = 1, n = 135), where the rule reader loses +76.3 points "
        "(p = 1.97e-31, n = 135): the model reads too poorly for the stored time to decide "
        "its answers.",
        "weak does not show what ingest_time_memory's store loses: control 0.0%, probe 0.0% "
        "(+0.0 points, p = 1, n = 3), where the rule reader loses +76.3 points "
        "(p = 1.97e-31, n = 135): at n = 3 no split can reach p < 0.05 (at best p = 0.25): "
        "probe more items.",
    ]
    assert f"> {notes[0]}" in render_memory_markdown(scores, RULE_READER)
