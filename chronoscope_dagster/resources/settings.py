"""The settings that decide what the benchmark holds beyond the dumps and the code.

They are a resource, not run config, so that Dagster sees them: the ``settings`` source
assets observe them (a file by its content) and every asset built from one depends on it,
so a change marks that asset stale in the UI and in ``chronoscope run`` alike. The command
line sets them from its options; a deployment from the YAML file ``$CHRONOSCOPE_SETTINGS``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import dagster as dg
import yaml
from pydantic import Field, field_validator

from chronoscope_dagster.chains.stats import DEFAULT_PER_FAMILY
from chronoscope_dagster.memory.plugin import DEFAULT_MEMORIES, check_name

SETTINGS_ENV = "CHRONOSCOPE_SETTINGS"
SAMPLE_SUBSET_CHAINS = 24
FULL_SUBSET_CHAINS = 10_000


class BenchmarkSettings(dg.ConfigurableResource):
    import_chains: str = Field(
        default="",
        description="Path of a chains JSON-lines file (the authors' merged_scope_benchmark.jsonl "
        "or this project's export) to use instead of the generated families.",
    )
    per_stratum: int = Field(
        default=DEFAULT_PER_FAMILY,
        ge=1,
        description="Chains per family in the evaluation sample (the stratum is the family; "
        "lengths take turns within it, chains with more scope-dependent scored turns first). A "
        "family whose chains are long gets fewer, so that no family supplies more than 20% of "
        "the scored turns; chains with scope-dependent scored turns are added until the sample "
        "holds 150 of them (the headline's n; at fewer chains a family, its share of 150). The "
        "default is small enough for the embedded CPU model; raise it for real models.",
    )
    self_per_stratum: int = Field(
        default=4,
        ge=0,
        description="Of those, chains per family in the self-conditioned subset (the first of "
        "each family's choice, under the same 20% rule).",
    )
    paraphrase_chains: int | None = Field(
        default=None,
        ge=0,
        description="Chains of the evaluation sample to paraphrase, spread over its (family, "
        f"length) strata; default {FULL_SUBSET_CHAINS:,} (the paper's size), or "
        f"{SAMPLE_SUBSET_CHAINS} when every snapshot is the embedded sample.",
    )
    paraphraser: str = Field(
        default="",
        description="Who rewrites the questions: empty or 'templates' (the default): template "
        "variants, each question in another phrasing of its template slot (no model; "
        "``paraphrase.template_variants.uses_templates`` says why); else the name of the "
        "registry model that paraphrases with the paper's prompt.",
    )
    probe_file: str = Field(
        default="",
        description="Probe a LongMemEval-shaped file (e.g. longmemeval_s.json) instead of the "
        "authored and generated items; its items are judged from their answer text.",
    )
    probe_items_per_type: int = Field(
        default=0,
        ge=0,
        description="Probe only the first N items of each question type (0: every item); the "
        "embedded CPU model takes about 2 s per item and arm.",
    )
    probe_memories: list[str] = Field(
        default=list(DEFAULT_MEMORIES),
        description="Memory systems the probe runs through each model (control and probe arms): "
        "the built-in ingest_time_memory and valid_time_memory, or module:Class, a system of "
        "your own on the Python path (README, The time-grounded probe).",
    )

    @field_validator("probe_memories")
    @classmethod
    def _memory_names(cls, names: list[str]) -> list[str]:
        for name in names:
            check_name(name)
        if len(set(names)) < len(names):
            raise ValueError(f"a memory is named twice: {names}")
        return names

    @classmethod
    def from_environment(cls) -> BenchmarkSettings:
        """The settings of the YAML file ``$CHRONOSCOPE_SETTINGS``, or the defaults."""
        values = settings_file()
        return cls(**{key: value for key, value in values.items() if key not in DUMP_KEYS})


DUMP_KEYS = ("dumps", "checksums", "workers")
"""Keys of the settings file that configure ``DumpSources``."""


def settings_file() -> dict[str, object]:
    """The mapping in the YAML file ``$CHRONOSCOPE_SETTINGS`` ({} when unset): a deployment's
    settings, e.g. ``per_stratum: 3`` and ``dumps: {2025: /data/dumps/latest.json.gz}``."""
    path = os.environ.get(SETTINGS_ENV)
    if not path:
        return {}
    values = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(values, dict):
        raise ValueError(f"{SETTINGS_ENV}={path}: expected a mapping of settings")
    return values


def settings_version(values: dict[str, object], *files: str) -> tuple[str, dict[str, object]]:
    """A data version of ``values`` and of the content of ``files`` (a missing or empty path
    counts as none), with what it was computed from, for the observation's metadata."""
    described: dict[str, object] = dict(values)
    for file in files:
        if file:
            path = Path(file).expanduser()
            described[f"{file} sha256"] = (
                hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
            )
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24], described
