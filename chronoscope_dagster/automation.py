"""Jobs, sensors and schedules."""

import dagster as dg

main_job = dg.define_asset_job(
    "chronoscope_main",
    selection=dg.AssetSelection.all(),
    description="Every asset, with its checks: the README's first command runs this.",
)

ci_checks_job = dg.define_asset_job(
    "ci_checks",
    selection=dg.AssetSelection.all_asset_checks(),
    description="Every asset check against what is materialized; a failing blocking check fails it.",
)
