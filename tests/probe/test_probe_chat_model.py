"""The in-context chat agent over the real embedded model (it answers poorly; structure only)."""

from __future__ import annotations

import pytest

from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.probe.agents import chat_agent_for_model
from chronoscope_dagster.probe.corpus import load_authored
from chronoscope_dagster.probe.grounding import TimestampedHistoryAgent
from chronoscope_dagster.probe.report import build_report, render_markdown
from chronoscope_dagster.probe.runs import run_probe

LOCAL = {
    "name": "local",
    "backend": "local",
    "model": "smollm2-135m-instruct",
    "max_new_tokens": 16,
    "options": {"threads": 1},
}


@pytest.mark.timeout(180)
def test_the_chat_agent_runs_the_embedded_model_through_the_cache(tmp_path):
    pytest.importorskip("torch")
    corpus = load_authored()
    subset = corpus.select(["tg-prospective-02", "tg-current-03"])
    with chat_agent_for_model(parse_entry(LOCAL), tmp_path / "responses.sqlite") as agent:
        assert isinstance(agent, TimestampedHistoryAgent)
        run = run_probe(subset, agent, arms=("control", "probe", "floor"))
        assert agent.chat.stats.misses == 6 and agent.chat.stats.hits == 0
        assert [(r.arm, r.item_id) for r in run.rows] == [
            (arm, item) for arm in ("control", "probe", "floor") for item in subset_ids(subset)
        ]
        for row in run.rows:
            assert row.error is None and isinstance(row.answer, str)
            assert row.check_kind in ("date", "count") and row.check_detail
            assert row.model == "local" and row.agent.startswith("local")
        report = build_report(run, corpus)
        assert [(s.arm, s.n) for s in report.arms] == [("control", 2), ("probe", 2), ("floor", 2)]
        assert "| probe | local |" in render_markdown(report)

        again = run_probe(subset, agent, arms=("control", "probe", "floor"))
        assert agent.chat.stats.hits == 6
        assert [r.answer for r in again.rows] == [r.answer for r in run.rows]


def subset_ids(corpus) -> list[str]:
    return [item.question_id for item in corpus.items]
