"""Memory systems by name: the two built in, or anyone's, named by an import path.

A probe memory is named by a built-in name (``ingest_time_memory``, ``valid_time_memory``) or
``module:attribute``, a class or function of a module on the Python path. Called with a
registry model, ``factory(chat, decoding)`` (``chat.complete(requests, decoding)`` answers a
batch of ``llm.base.ChatRequest``; it is the model behind the response cache), it returns the
system: an object with the typed channel, ``answer_timestamped(episodes) -> list[AgentAnswer]``
(``probe.grounding.TimestampedHistoryAgent``). Every way this can go wrong is a
:class:`MemoryPluginError` naming the memory and what to fix.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from chronoscope_dagster.llm.base import Decoding
from chronoscope_dagster.llm.registry import ModelSpec, backend_class
from chronoscope_dagster.llm.session import open_chat
from chronoscope_dagster.probe.agents import Completer
from chronoscope_dagster.probe.grounding import TimestampedHistoryAgent

BUILTIN_MEMORIES = {
    "ingest_time_memory": "chronoscope_dagster.memory.systems:ingest_time_memory",
    "valid_time_memory": "chronoscope_dagster.memory.systems:valid_time_memory",
}
DEFAULT_MEMORIES = tuple(BUILTIN_MEMORIES)
_IMPORT_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
CONTRACT = (
    "a probe memory is a class or function called as factory(chat, decoding) that returns an "
    "object with answer_timestamped(episodes) -> list[AgentAnswer] "
    "(chronoscope_dagster.probe.grounding.TimestampedHistoryAgent)"
)

MemoryFactory = Callable[[Completer, Decoding], TimestampedHistoryAgent]


class MemoryPluginError(ValueError):
    """A probe memory cannot be loaded or built; the message names it and says why."""


def check_name(name: str) -> str:
    """``name`` if it is a built-in memory or reads as ``module:attribute``."""
    if name in BUILTIN_MEMORIES or _IMPORT_PATH.fullmatch(name):
        return name
    raise MemoryPluginError(
        f"probe memory {name!r}: neither a built-in memory ({', '.join(BUILTIN_MEMORIES)}) "
        "nor an import path module:Class (e.g. my_package.memory:MyMemory)"
    )


def load_factory(name: str) -> MemoryFactory:
    """The class or function ``name`` designates, checked as far as it can be without
    calling it."""
    path = BUILTIN_MEMORIES.get(check_name(name), name)
    module_name, _, attribute = path.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise MemoryPluginError(
            f"probe memory {name!r}: cannot import module {module_name!r} "
            f"({type(error).__name__}: {error}); is it on the Python path (PYTHONPATH)?"
        ) from error
    except Exception as error:
        raise MemoryPluginError(
            f"probe memory {name!r}: importing module {module_name!r} failed: "
            f"{type(error).__name__}: {error}"
        ) from error
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise MemoryPluginError(
                f"probe memory {name!r}: {getattr(found, '__name__', module_name)!r} has no "
                f"attribute {part!r}"
            )
        found = getattr(found, part)
    if isinstance(found, type):
        if not callable(getattr(found, "answer_timestamped", None)):
            raise MemoryPluginError(
                f"probe memory {name!r}: class {found.__name__} does not implement the typed "
                f"channel (no method answer_timestamped); {CONTRACT}"
            )
    elif not callable(found):
        raise MemoryPluginError(
            f"probe memory {name!r} is a {type(found).__name__}, not a class or function; "
            f"{CONTRACT}"
        )
    return cast(MemoryFactory, found)


def build_memory(name: str, chat: Completer, decoding: Decoding) -> TimestampedHistoryAgent:
    """The memory ``name`` answering through ``chat``."""
    factory = load_factory(name)
    try:
        system = factory(chat, decoding)
    except TypeError as error:
        raise MemoryPluginError(
            f"probe memory {name!r}: calling it as factory(chat, decoding) failed: {error}; "
            f"{CONTRACT}"
        ) from error
    if not isinstance(system, TimestampedHistoryAgent):
        raise MemoryPluginError(
            f"probe memory {name!r} built a {type(system).__name__}, which does not implement "
            f"the typed channel (no method answer_timestamped); {CONTRACT}"
        )
    return system


def reads_its_prompt(spec: ModelSpec) -> bool:
    """Whether the model answers from its prompt. The reference systems (``oracle``,
    ``present_day``, ...) answer from fields of the request a memory never fills, so a memory
    in front of one measures nothing."""
    return bool(getattr(backend_class(spec.backend), "needs_model", True))


@contextmanager
def memory_for_model(
    name: str, spec: ModelSpec, cache_path: str | Path | None, decoding: Decoding | None = None
) -> Iterator[TimestampedHistoryAgent]:
    """The memory ``name`` over a registry model behind the response cache (none when
    ``cache_path`` is None), the model closed on leaving; ``decoding`` defaults to the
    model's own, one candidate. The memory is loaded before the model is opened."""
    load_factory(name)
    with open_chat(spec, cache_path) as chat:
        yield build_memory(name, chat, decoding or replace(spec.decoding, k=1))


def source_file(name: str) -> str:
    """The file of a plug-in's module, so a change to it is seen ("" for a built-in memory,
    whose code the project versions, or a module that cannot be found)."""
    if name in BUILTIN_MEMORIES or not _IMPORT_PATH.fullmatch(name):
        return ""
    try:
        found = importlib.util.find_spec(name.partition(":")[0])
    except (ImportError, ValueError):
        return ""
    return found.origin if found is not None and found.origin else ""
