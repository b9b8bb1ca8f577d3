"""A memory system of one's own, named by an import path, through the probe's arms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chronoscope_dagster.cli import main
from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.cache import CachedChat
from chronoscope_dagster.llm.registry import parse_entry
from chronoscope_dagster.memory.plugin import (
    BUILTIN_MEMORIES,
    MemoryPluginError,
    build_memory,
    load_factory,
    memory_for_model,
    reads_its_prompt,
    source_file,
)
from chronoscope_dagster.memory.runs import run_memory
from chronoscope_dagster.memory.systems import SQLiteMemory
from chronoscope_dagster.probe.corpus import load_authored
from chronoscope_dagster.resources import BenchmarkSettings
from tests.probe_helpers import recording

README = Path(__file__).resolve().parents[2] / "README.md"
BAD_PLUGINS = """

class NoChannel:
    def __init__(self, chat, decoding):
        pass


class NoArguments:
    def answer_timestamped(self, episodes):
        return []


def not_an_agent(chat, decoding):
    return "a string"


NOT_CALLABLE = 3
"""


def readme_plugin() -> str:
    """The README's example plug-in, as written there."""
    text = README.read_text()
    start = text.index("```python\n# my_memory.py\n") + len("```python\n")
    return text[start : text.index("```", start)]


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    (tmp_path / "my_memory.py").write_text(readme_plugin() + BAD_PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "my_memory.py"


def test_a_plugin_runs_through_the_probe_arms_with_a_registry_model(plugin_module):
    spec = parse_entry({"name": "present_day", "backend": "present_day"})
    corpus = load_authored().select(["tg-asof-01", "tg-current-01"])
    settings = BenchmarkSettings(
        probe_memories=["valid_time_memory", "my_memory:LastMessageMemory"]
    )
    assert settings.probe_memories[1] == "my_memory:LastMessageMemory"
    with memory_for_model("my_memory:LastMessageMemory", spec, None) as memory:
        assert type(memory).__name__ == "LastMessageMemory"
        run = run_memory(corpus, memory, name="my_memory:LastMessageMemory", reader=spec.name)
    assert run.stored == {}, "a plug-in's store is its own"
    assert [(row.system, row.model, row.arm, row.item_id) for row in run.run.rows] == [
        ("my_memory:LastMessageMemory", "present_day", arm, item)
        for arm in ("control", "probe")
        for item in ("tg-asof-01", "tg-current-01")
    ]
    assert {row.answer for row in run.run.rows} == {"I don't know"}
    assert source_file("my_memory:LastMessageMemory") == str(plugin_module)
    assert source_file("valid_time_memory") == ""


def test_the_plugin_gets_the_model_behind_the_typed_channel(plugin_module):
    backend = recording("oracle")
    memory = build_memory("my_memory:LastMessageMemory", CachedChat(backend, None), Decoding())
    corpus = load_authored().select(["tg-asof-01"])
    run_memory(corpus, memory, name="mine", reader="oracle")
    last = "Nice. Ease into the board; it is far harder on the fingers than the wall."
    question = "Which climbing gym was I a member of five weeks ago?"
    assert [request.messages for request in backend.requests] == [
        (("user", f"{last}\nCurrent Date: 2026/03/03 (Tue) 18:00\n\n{question}"),),
        (("user", f"{last}\n{question}"),),
    ]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("my memory", "neither a built-in memory (ingest_time_memory, valid_time_memory) nor"),
        ("no_such_module_39:Memory", "cannot import module 'no_such_module_39' (ModuleNotFound"),
        ("my_memory:Missing", "'my_memory' has no attribute 'Missing'"),
        ("my_memory:NoChannel", "class NoChannel does not implement the typed channel"),
        ("my_memory:NOT_CALLABLE", "is a int, not a class or function"),
    ],
)
def test_a_bad_name_is_refused_clearly_before_any_model_opens(plugin_module, name, message):
    with pytest.raises(MemoryPluginError, match=re.escape(message)):
        load_factory(name)
    spec = parse_entry({"name": "local", "backend": "local", "model": "missing-model"})
    with pytest.raises(MemoryPluginError), memory_for_model(name, spec, None):
        pass


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("my_memory:NoArguments", r"calling it as factory\(chat, decoding\) failed"),
        ("my_memory:not_an_agent", "built a str, which does not implement the typed channel"),
    ],
)
def test_a_plugin_that_builds_no_system_is_refused(plugin_module, name, message):
    with pytest.raises(MemoryPluginError, match=message):
        build_memory(name, recording("oracle"), None)  # type: ignore[arg-type]


def test_the_settings_and_the_command_line_refuse_a_bad_memory(plugin_module, capsys):
    with pytest.raises(ValueError, match="named twice"):
        BenchmarkSettings(probe_memories=["valid_time_memory", "valid_time_memory"])
    with pytest.raises(ValueError, match="neither a built-in memory"):
        BenchmarkSettings(probe_memories=["valid time"])
    assert main(["run", "--probe-memories", "my_memory:NoChannel", "--select", "x"]) == 2
    assert "--probe-memories: probe memory 'my_memory:NoChannel': class NoChannel does" in (
        capsys.readouterr().err
    )


def test_the_builtins_and_which_models_get_memories():
    for name in BUILTIN_MEMORIES:
        memory = build_memory(name, recording("oracle"), None)  # type: ignore[arg-type]
        assert isinstance(memory, SQLiteMemory) and memory.name == name
    assert reads_its_prompt(parse_entry({"name": "m", "backend": "local", "model": "x"}))
    assert not reads_its_prompt(parse_entry({"name": "o", "backend": "oracle"}))
