"""Opening a model for a piece of work closes its backend and its cache, however it ends."""

import sqlite3

import pytest

from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.llm.session import RequestProgress, open_chat

SERVED = parse_entry(
    {
        "name": "served",
        "backend": "openai_compatible",
        "model": "test-model",
        "options": {"base_url": "http://127.0.0.1:9/v1", "max_retries": 0},
    }
)


def assert_closed(chat) -> None:
    assert chat.backend._client.is_closed()
    with pytest.raises(sqlite3.ProgrammingError):
        len(chat.cache)


def test_the_backend_and_the_cache_are_closed_on_leaving(tmp_path):
    with open_chat(SERVED, tmp_path / "responses.sqlite", chunk_size=8) as chat:
        assert len(chat.cache) == 0 and chat.chunk_size == 8
        assert not chat.backend._client.is_closed()
    assert_closed(chat)


def test_they_are_closed_when_the_work_fails(tmp_path):
    with (
        pytest.raises(RuntimeError, match="work failed"),
        open_chat(SERVED, tmp_path / "responses.sqlite") as chat,
    ):
        raise RuntimeError("work failed")
    assert_closed(chat)


def test_no_cache_path_means_no_cache(tmp_path):
    with open_chat(SERVED, None) as chat:
        assert chat.cache is None
    assert chat.backend._client.is_closed()


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message: str) -> None:
        self.lines.append(message)


def test_progress_reports_the_end_and_the_time_left():
    log = Lines()
    progress = RequestProgress(log, "m / gold_context", total=4, every_s=3600)
    progress(3)
    assert log.lines == []
    progress(1)
    assert len(log.lines) == 1 and log.lines[0].startswith("m / gold_context: 4/4 requests (")
    unknown = RequestProgress(log, "paraphrasing", total=None, every_s=0)
    unknown(2)
    assert log.lines[-1].startswith("paraphrasing: 2 requests (")
