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

    def specs(self) -> list[ModelSpec]:
        return [self._threaded(spec) for spec in load_registry(registry_path(self.path))]

    def embedded(self) -> ModelSpec:
        """The embedded CPU model with the registry's defaults (``llm.registry.embedded_spec``)."""
        return self._threaded(embedded_spec())

    def _threaded(self, spec: ModelSpec) -> ModelSpec:
        if not self.threads or "threads" not in type(spec.options).model_fields:
            return spec
        return replace(spec, options=spec.options.model_copy(update={"threads": self.threads}))

    def spec(self, name: str) -> ModelSpec:
        specs = {spec.name: spec for spec in self.specs()}
        if name not in specs:
            raise dg.Failure(
                f"model {name!r} is not in the registry {registry_path(self.path)} "
                f"(it has: {', '.join(specs) or 'nothing'})"
            )
        return specs[name]
