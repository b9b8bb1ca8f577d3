"""Partitions, named by what they partition."""

import dagster as dg

from chronoscope_dagster.data import SNAPSHOT_YEARS
from chronoscope_dagster.evaluation.prompts import SETTINGS

snapshot_year_partitions = dg.StaticPartitionsDefinition(list(SNAPSHOT_YEARS))

model_partitions = dg.DynamicPartitionsDefinition(name="model")
setting_partitions = dg.StaticPartitionsDefinition(list(SETTINGS))
model_setting_partitions = dg.MultiPartitionsDefinition(
    {"model": model_partitions, "setting": setting_partitions}
)
