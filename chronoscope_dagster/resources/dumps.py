from __future__ import annotations

from pathlib import Path

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

    def fingerprint(self, snapshot_year: str) -> dict[str, object]:
        """What a year's snapshot is read from: the source and checksum list as given, and for a
        local path the size and modification time of each file, so a changed file is read again."""
        source = self.source(snapshot_year)
        checksums = self.checksums.get(snapshot_year)
        found: dict[str, object] = {"source": source, "checksums": checksums}
        if "://" not in source:
            path = Path(source).expanduser().resolve()
            found["source"] = str(path)
            files = sorted(path.iterdir()) if path.is_dir() else [path]
            found["files"] = [
                [f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files if f.is_file()
            ]
        if checksums and "://" not in checksums:
            listing = Path(checksums).expanduser()
            if listing.is_file():
                found["checksums_mtime_ns"] = listing.stat().st_mtime_ns
        return found
