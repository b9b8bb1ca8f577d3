from __future__ import annotations

import hashlib
import http.client
import json
import urllib.error
import urllib.request
from pathlib import Path

import dagster as dg
from pydantic import Field

from chronoscope_dagster.data import sample_dump_path
from chronoscope_dagster.resources.settings import DUMP_KEYS, settings_file
from chronoscope_dagster.wikidata.download import is_url, redact_text, redact_url, url_request

EDGE_BYTES = 1 << 20


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

    @classmethod
    def from_environment(cls) -> DumpSources:
        """The dumps of the settings file ``$CHRONOSCOPE_SETTINGS``, or the embedded sample."""
        values = {key: value for key, value in settings_file().items() if key in DUMP_KEYS}
        for key in ("dumps", "checksums"):
            if isinstance(values.get(key), dict):
                values[key] = {str(year): str(v) for year, v in values[key].items()}
        return cls(**values)

    def source(self, snapshot_year: str) -> str:
        return self.dumps.get(snapshot_year) or str(sample_dump_path(snapshot_year))

    def is_sample(self, snapshot_year: str) -> bool:
        return snapshot_year not in self.dumps

    def identity(self, snapshot_year: str, timeout: float = 30.0) -> dict[str, object]:
        """What identifies the bytes a year's snapshot is read from, without reading them all:
        for a local path, each file's size, modification time and a hash of its first and last
        MiB; for a URL, what the server says of it now (ETag, Last-Modified, length: a HEAD
        request, revalidated on every call); and the checksum list's line for the file when
        one is configured. URLs appear without their query string or credentials."""
        source = self.source(snapshot_year)
        found: dict[str, object] = {"source": redact_url(source) if is_url(source) else source}
        if is_url(source):
            found["server"] = _server_validators(source, timeout)
        else:
            path = Path(source).expanduser().resolve()
            if not path.exists():
                raise dg.Failure(f"snapshot {snapshot_year}: dump not found: {path}")
            found["source"] = str(path)
            files = sorted(path.iterdir()) if path.is_dir() else [path]
            found["files"] = [_file_identity(f) for f in files if f.is_file()]
        checksums = self.checksums.get(snapshot_year)
        if checksums:
            found["checksums"] = {
                "source": redact_url(checksums) if is_url(checksums) else checksums,
                "sha256": hashlib.sha256(_read_checksums(checksums, timeout)).hexdigest(),
            }
        return found


def data_version(identity: dict[str, object]) -> dg.DataVersion:
    text = json.dumps(identity, sort_keys=True, default=str)
    return dg.DataVersion(hashlib.sha256(text.encode()).hexdigest()[:24])


def _file_identity(path: Path) -> dict[str, object]:
    stat = path.stat()
    digest = hashlib.sha256()
    with path.open("rb") as file:
        digest.update(file.read(EDGE_BYTES))
        if stat.st_size > EDGE_BYTES:
            file.seek(max(EDGE_BYTES, stat.st_size - EDGE_BYTES))
            digest.update(file.read(EDGE_BYTES))
    return {
        "name": path.name,
        "bytes": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "edges_sha256": digest.hexdigest(),
    }


def _server_validators(url: str, timeout: float) -> dict[str, str | None]:
    try:
        with urllib.request.urlopen(url_request(url, method="HEAD"), timeout=timeout) as response:
            headers = response.headers
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        reason = redact_text(str(error), url)
        raise dg.Failure(f"cannot reach the dump {redact_url(url)}: {reason}") from None
    return {
        "etag": headers.get("ETag"),
        "last_modified": headers.get("Last-Modified"),
        "length": headers.get("Content-Length"),
    }


def _read_checksums(source: str, timeout: float) -> bytes:
    try:
        if is_url(source):
            with urllib.request.urlopen(url_request(source), timeout=timeout) as response:
                return response.read()
        return Path(source).expanduser().read_bytes()
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        shown = redact_url(source) if is_url(source) else source
        reason = redact_text(str(error), source) if is_url(source) else str(error)
        raise dg.Failure(f"cannot read the checksum list {shown}: {reason}") from None
