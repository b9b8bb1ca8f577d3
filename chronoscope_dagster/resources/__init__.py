"""Dagster resources: thin configuration around the domain core."""

from chronoscope_dagster.resources.calendar import AnchorCalendar
from chronoscope_dagster.resources.dumps import DumpSources
from chronoscope_dagster.resources.models import ModelRegistry
from chronoscope_dagster.resources.settings import BenchmarkSettings

__all__ = ["AnchorCalendar", "BenchmarkSettings", "DumpSources", "ModelRegistry"]
