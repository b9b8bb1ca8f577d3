"""Assets: thin adapters over the domain core."""

import warnings

import dagster as dg

warnings.filterwarnings("ignore", category=dg.PreviewWarning)
warnings.filterwarnings("ignore", category=dg.BetaWarning)
