"""Partitions, named by what they partition."""

import dagster as dg

from chronoscope_dagster.data import SNAPSHOT_YEARS

snapshot_year_partitions = dg.StaticPartitionsDefinition(list(SNAPSHOT_YEARS))
