from __future__ import annotations

import os

import dagster as dg
from pydantic import Field

from chronoscope_dagster.llm.registry import DEFAULT_REGISTRY, ModelSpec, load_registry

REGISTRY_ENV = "CHRONOSCOPE_MODELS"


def registry_path(path: str = "") -> str:
    return path or os.environ.get(REGISTRY_ENV) or str(DEFAULT_REGISTRY)


class ModelRegistry(dg.ConfigurableResource):
    """The model registry: one partition of the evaluation assets per entry."""

    path: str = Field(
        default="",
        description=f"Registry YAML; default ${REGISTRY_ENV} or the shipped data/models.yaml.",
    )

    def specs(self) -> list[ModelSpec]:
        return load_registry(registry_path(self.path))

    def spec(self, name: str) -> ModelSpec:
        specs = {spec.name: spec for spec in self.specs()}
        if name not in specs:
            raise dg.Failure(
                f"model {name!r} is not in the registry {registry_path(self.path)} "
                f"(it has: {', '.join(specs) or 'nothing'})"
            )
        return specs[name]
