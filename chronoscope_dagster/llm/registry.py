"""The model registry: a YAML file of models, each a partition of the evaluation assets.

An entry names its backend and model and may set decoding parameters, backend options, a
prompting strategy (``prompting``: ``plain``, the default, ``restate_scope`` or
``rewrite_then_answer``; ``evaluation.strategies`` says what each does) and a
``knowledge_cutoff`` (a date: where the model's knowledge ends, so drift is also measured
against its own present, ``truth.anchors.model_present``); anything unknown or
invalid is an error that names the entry, the field and the value. Numbers are range-checked
here, so a value no backend or cache key can carry (a seed beyond 64 bits, an infinite timeout)
fails when the registry loads, not at every prediction.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

import pydantic
import yaml

from chronoscope_dagster.data import DATA_DIR, SNAPSHOT_YEARS
from chronoscope_dagster.files import atomic_write, exclusive_lock
from chronoscope_dagster.llm.base import BackendOptions, ChatBackend, Decoding
from chronoscope_dagster.llm.embedded import EMBEDDED_MODEL
from chronoscope_dagster.truth.anchors import default_calendar, model_present

DEFAULT_REGISTRY = DATA_DIR / "models.yaml"

BACKENDS = {
    "local": "chronoscope_dagster.llm.local:LocalBackend",
    "vllm": "chronoscope_dagster.llm.vllm:VLLMBackend",
    "openai_compatible": "chronoscope_dagster.llm.remote:OpenAICompatibleBackend",
    "openai": "chronoscope_dagster.llm.remote:OpenAIBackend",
    "gemini": "chronoscope_dagster.llm.remote:GeminiBackend",
    "oracle": "chronoscope_dagster.llm.reference:OracleSystem",
    "present_day": "chronoscope_dagster.llm.reference:PresentDaySystem",
    "copy_previous": "chronoscope_dagster.llm.reference:CopyPreviousSystem",
    "scope_blind": "chronoscope_dagster.llm.reference:ScopeBlindSystem",
    "blind": "chronoscope_dagster.llm.reference:BlindSystem",
}
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A partition key; matched whole (``fullmatch``: ``$`` would let a final newline in)."""
MESSAGE_LIMIT = 2000
PromptingName = Literal["plain", "restate_scope", "rewrite_then_answer"]
"""The prompting strategies (``evaluation.strategies.Prompting``; the domain's llm package
does not import the evaluation package, a test keeps the two the same)."""
PROMPTINGS: tuple[str, ...] = get_args(PromptingName)
SEED_MAX = 2**31 - 1
"""The largest seed every backend takes: Gemini's is an int32, scikit-learn's (blind) a uint32."""
INT64 = (-(2**63), 2**63 - 1)


class RegistryError(ValueError):
    """The registry file or one of its entries is invalid; the message says where."""

    def __init__(self, message: str) -> None:
        if len(message) > MESSAGE_LIMIT:
            message = message[: MESSAGE_LIMIT - 3] + "..."
        super().__init__(message)


def _shown(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:77] + "..."


class _Entry(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    backend: str
    model: str = ""
    max_new_tokens: int = pydantic.Field(default=24, ge=1, le=4096)
    temperature: float = pydantic.Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = pydantic.Field(default=1.0, gt=0.0, le=1.0)
    k: int = pydantic.Field(default=1, ge=1, le=20)
    seed: int = pydantic.Field(default=0, ge=0, le=SEED_MAX)
    description: str = ""
    options: dict[str, Any] = pydantic.Field(default_factory=dict)
    prompting: PromptingName = "plain"
    knowledge_cutoff: date | None = None

    @pydantic.field_validator("knowledge_cutoff", mode="before")
    @classmethod
    def _a_date(cls, value: Any) -> Any:
        """A date (YAML's 2023-12-31, or that text), never a number: pydantic would read 2023
        as seconds after 1970."""
        if isinstance(value, bool | int | float):
            raise ValueError("must be a date (YYYY-MM-DD), not a number")
        return value


@dataclass(frozen=True)
class ModelSpec:
    name: str
    backend: str
    model: str
    decoding: Decoding
    options: BackendOptions
    description: str = ""
    prompting: str = "plain"
    """How each turn is asked (``evaluation.strategies``); not part of the backend's identity:
    the strategies' prompts differ, so the cache keys them apart by themselves."""
    knowledge_cutoff: date | None = None
    """Where the model's knowledge ends; None: the dump's present is its present."""

    def twin_of(self, other: ModelSpec) -> bool:
        """Whether ``other`` is this entry's plain twin: the same backend, model and options
        (decoding aside), prompting plain; an entry that is plain itself has none."""
        return (
            self.prompting != "plain"
            and other.prompting == "plain"
            and (other.backend, other.model, other.options)
            == (self.backend, self.model, self.options)
        )

    def build(self) -> ChatBackend:
        """The backend object; heavy packages are imported here, not when the registry loads."""
        return backend_class(self.backend)(self)


def plain_twins(specs: Sequence[ModelSpec]) -> dict[str, str]:
    """Each entry whose prompting is not plain, by name, with its plain twin's name: the first
    entry (in registry order) with the same backend, model and options and prompting plain.
    Entries without one are left out."""
    twins = {}
    for spec in specs:
        twin = next((other for other in specs if spec.twin_of(other)), None)
        if twin is not None:
            twins[spec.name] = twin.name
    return twins


def embedded_spec(name: str = "embedded") -> ModelSpec:
    """The embedded CPU model with the registry's defaults, for work that needs a model
    whatever the registry holds (the default paraphraser)."""
    return parse_entry({"name": name, "backend": "local", "model": EMBEDDED_MODEL})


def backend_class(backend: str) -> Any:
    module, _, name = BACKENDS[backend].partition(":")
    return getattr(importlib.import_module(module), name)


def load_registry(path: str | Path | None = None) -> list[ModelSpec]:
    path = Path(path) if path else DEFAULT_REGISTRY
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise RegistryError(f"model registry {path} does not exist") from error
    except IsADirectoryError as error:
        raise RegistryError(f"model registry {path} is a directory, not a YAML file") from error
    except (OSError, UnicodeDecodeError) as error:
        raise RegistryError(f"model registry {path} cannot be read: {error}") from error
    except yaml.YAMLError as error:
        raise RegistryError(f"model registry {path} is not valid YAML: {error}") from error
    if not isinstance(document, dict) or not isinstance(document.get("models"), list):
        raise RegistryError(f"model registry {path} must be a mapping with a list `models`")
    return parse_entries(document["models"], source=str(path))


def parse_entries(entries: Iterable[Any], source: str = "registry") -> list[ModelSpec]:
    specs: list[ModelSpec] = []
    seen: dict[str, str] = {}
    for position, raw in enumerate(entries, start=1):
        where = f"{source}: model #{position}"
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            where += f" ({_shown(raw['name'])})"
        spec = parse_entry(raw, where)
        if (other := seen.get(spec.name.casefold())) is not None:
            used = "is used twice" if other == spec.name else f"differs from {other!r} only in case"
            raise RegistryError(f"{where}: field `name`: {spec.name!r} {used}")
        seen[spec.name.casefold()] = spec.name
        specs.append(spec)
    return specs


def parse_entry(raw: Any, where: str = "model") -> ModelSpec:
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: an entry must be a mapping, got {type(raw).__name__}")
    try:
        entry = _Entry.model_validate(raw)
    except pydantic.ValidationError as error:
        raise RegistryError(f"{where}: {_describe(error)}") from None
    if not MODEL_NAME.fullmatch(entry.name):
        raise RegistryError(
            f"{where}: field `name`: {_shown(entry.name)} must be 1-64 letters, digits, '.', '_' or "
            "'-' (it becomes a partition key)"
        )
    if entry.backend not in BACKENDS:
        raise RegistryError(
            f"{where}: field `backend`: {entry.backend!r} is not one of {', '.join(BACKENDS)}"
        )
    cls = backend_class(entry.backend)
    if getattr(cls, "needs_model", True) and not entry.model:
        raise RegistryError(f"{where}: field `model` is required for backend {entry.backend}")
    try:
        options = cls.Options.model_validate(entry.options)
    except pydantic.ValidationError as error:
        raise RegistryError(f"{where}: {_describe(error, prefix='options.')}") from None
    for field, value in _numbers(options.model_dump(), "options."):
        if isinstance(value, float) and not math.isfinite(value):
            raise RegistryError(f"{where}: field `{field}`: must be a finite number, got {value}")
        if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
            raise RegistryError(
                f"{where}: field `{field}`: must fit in 64 bits, got {_shown(value)}"
            )
    if entry.knowledge_cutoff is not None:
        calendars = {int(year): default_calendar(int(year)) for year in SNAPSHOT_YEARS}
        try:
            model_present(entry.knowledge_cutoff, calendars)
        except ValueError as error:
            raise RegistryError(f"{where}: field `knowledge_cutoff`: {error}") from None
    decoding = Decoding(
        max_new_tokens=entry.max_new_tokens,
        temperature=entry.temperature,
        top_p=entry.top_p,
        k=entry.k,
        seed=entry.seed,
    )
    return ModelSpec(
        name=entry.name,
        backend=entry.backend,
        model=entry.model,
        decoding=decoding,
        options=options,
        description=entry.description,
        prompting=entry.prompting,
        knowledge_cutoff=entry.knowledge_cutoff,
    )


def _numbers(value: Any, field: str) -> Iterator[tuple[str, int | float]]:
    """Every number in a dumped options model, by dotted field name."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield field.rstrip("."), value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{field}{key}.")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{field}{index}.")


def _describe(error: pydantic.ValidationError, prefix: str = "") -> str:
    problems = []
    for item in error.errors():
        field = prefix + ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            problems.append(f"field `{field}`: unknown field")
            continue
        problem = f"field `{field}`: {item['msg']}"
        value = item.get("input")
        if item["type"] != "missing" and (value is None or isinstance(value, str | int | float)):
            problem += f", got {_shown(value)}"
        problems.append(problem)
    return "; ".join(problems)


class Added(NamedTuple):
    spec: ModelSpec
    created: bool
    """Whether the file did not exist and was created from the shipped registry."""


def add_entry(path: str | Path, raw: dict[str, Any]) -> Added:
    """Append a validated entry to the registry file ``path`` (created as a copy of the shipped
    registry if missing), keeping the file's comments; refuses an invalid entry or a name the
    registry already has. Concurrent adds to one file are serialised by a lock file beside it,
    and the file is replaced atomically."""
    path = Path(path)
    if path.is_dir():
        raise RegistryError(f"model registry {path} is a directory, not a YAML file")
    spec = parse_entry(raw, f"new entry ({_shown(raw.get('name'))})")
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(path):
        created = not path.exists()
        _append(path, raw, spec)
    return Added(spec, created)


def _append(path: Path, raw: dict[str, Any], spec: ModelSpec) -> None:
    exists = path.exists()
    text = path.read_text(encoding="utf-8") if exists else DEFAULT_REGISTRY.read_text()
    specs = load_registry(path if exists else DEFAULT_REGISTRY)
    for other in specs:
        if other.name.casefold() == spec.name.casefold():
            same = (
                "" if other.name == spec.name else f" as {other.name!r} (names differ only in case)"
            )
            raise RegistryError(f"{path}: a model named {spec.name!r} is already registered{same}")
    flow = yaml.safe_dump(raw, default_flow_style=True, sort_keys=False, width=10**6).strip()
    appended = text.rstrip("\n") + f"\n  - {flow}\n"
    document = yaml.safe_load(appended)
    old = yaml.safe_load(text)
    if not (isinstance(document, dict) and document.get("models") == [*old["models"], raw]):
        old["models"].append(raw)
        appended = yaml.safe_dump(old, sort_keys=False)
    parse_entries(yaml.safe_load(appended)["models"], source=str(path))
    with atomic_write(path, fsync=True) as temporary:
        temporary.write_text(appended, encoding="utf-8")
