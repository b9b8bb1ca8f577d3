from __future__ import annotations

import dagster as dg
from pydantic import Field

from chronoscope_dagster.data import sample_dump_path


class DumpSources(dg.ConfigurableResource):
    """Where each snapshot year's dump comes from: the embedded sample unless told otherwise."""

    dumps: dict[str, str] = Field(
        default_factory=dict,
        description="Snapshot year -> dump path (.json.gz, .json.bz2, .jsonl.zst, .jsonl, or a "
        "directory of shards) or HTTP(S) URL. Years not listed read the embedded sample.",
    )
    checksums: dict[str, str] = Field(
        default_factory=dict,
        description="Snapshot year -> path or URL of an md5sums/sha1sums list to verify the dump.",
    )
    workers: int = Field(
        default=0,
        description="Processes that parse the dump; 0 means one per core.",
    )

    def source(self, snapshot_year: str) -> str:
        return self.dumps.get(snapshot_year) or str(sample_dump_path(snapshot_year))

    def is_sample(self, snapshot_year: str) -> bool:
        return snapshot_year not in self.dumps
