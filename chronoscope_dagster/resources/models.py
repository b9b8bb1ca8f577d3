from __future__ import annotations

import os
from dataclasses import replace

import dagster as dg
from pydantic import Field

from chronoscope_dagster.llm.registry import (
    DEFAULT_REGISTRY,
    ModelSpec,
    embedded_spec,
    load_registry,
)
from chronoscope_dagster.warehouse import default_home

REGISTRY_ENV = "CHRONOSCOPE_MODELS"


def registry_path(path: str = "") -> str:
    return path or os.environ.get(REGISTRY_ENV) or str(DEFAULT_REGISTRY)


class ModelRegistry(dg.ConfigurableResource):
    """The model registry: one partition of the evaluation assets per entry."""

    path: str = Field(
        default="",
        description=f"Registry YAML; default ${REGISTRY_ENV} or the shipped data/models.yaml.",
    )

    threads: int = Field(
        default=0,
        ge=0,
        description="Threads of every model run in process (the local backend) instead of the "
        "registry's; 0 keeps the registry's. One per core is fastest when the run is the only "
        "busy process; with anything else busy, 1 (the shipped registry's) is several times "
        "faster than 2 on 2 cores. Answers do not depend on it.",
    )

    models_dir: str = Field(
        default="",
        description="Where in-process engines convert GGUF models (the embedded one) into "
        "safetensors folders, unless an entry sets convert_dir; default <home>/models.",
    )

    def specs(self) -> list[ModelSpec]:
        return [self._placed(spec) for spec in load_registry(registry_path(self.path))]

    def embedded(self) -> ModelSpec:
        """The embedded CPU model with the registry's defaults (``llm.registry.embedded_spec``)."""
        return self._placed(embedded_spec())

    def _placed(self, spec: ModelSpec) -> ModelSpec:
        """``spec`` with this resource's threads and conversion folder where it takes them."""
        fields = type(spec.options).model_fields
        update: dict[str, object] = {}
        if self.threads and "threads" in fields:
            update["threads"] = self.threads
        if "convert_dir" in fields and spec.options.convert_dir is None:
            update["convert_dir"] = self.models_dir or str(default_home() / "models")
        if not update:
            return spec
        return replace(spec, options=spec.options.model_copy(update=update))

    def spec(self, name: str) -> ModelSpec:
        specs = {spec.name: spec for spec in self.specs()}
        if name not in specs:
            raise dg.Failure(
                f"model {name!r} is not in the registry {registry_path(self.path)} "
                f"(it has: {', '.join(specs) or 'nothing'})"
            )
        return specs[name]
