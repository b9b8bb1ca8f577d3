"""Dagster resources: thin configuration around the domain core."""

from chronoscope_dagster.resources.calendar import AnchorCalendar
from chronoscope_dagster.resources.dumps import DumpSources
from chronoscope_dagster.resources.models import ModelRegistry

__all__ = ["AnchorCalendar", "DumpSources", "ModelRegistry"]
