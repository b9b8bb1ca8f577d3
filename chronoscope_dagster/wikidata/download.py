"""Getting a dump onto local disk: a local path as it is, or an HTTP(S) download.

Downloads are kept per URL: ``<download dir>/<hash of the URL>/<name>``, with
the server's ``ETag``/``Last-Modified`` in ``source.json`` beside it. A download
streams into ``<name>.part``. An interrupted transfer (connection cut, timeout)
resumes from the bytes already on disk with a ``Range`` request (``If-Range``
the validator, so a changed file restarts), up to ``max_attempts`` times; a
server that ignores the range and answers 200 restarts the file, and a 416 is
taken as "already complete" only when its ``Content-Range`` total is the size
on disk (else the file restarts). When a checksum list is given (the
``md5sums``/``sha1sums`` files the official mirrors publish: lines of
``<hex digest>  <file name>``), the file's digest must match the line naming
it, or the partial file is removed and the download fails. Only a complete,
verified file is renamed to its final name, atomically, so a destination that
exists is always whole. It is reused when its checksum matches, or, with no
checksum list, when the server answers 304 to a request conditional on the
validators it was downloaded with.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20
DIGESTS = {32: "md5", 40: "sha1", 64: "sha256"}


class DownloadError(RuntimeError):
    """The dump could not be fetched or failed verification."""


@dataclass(frozen=True)
class FetchedDump:
    path: Path
    source: str
    bytes: int
    checksum: str
    checksum_algorithm: str
    verified: bool
    downloaded: bool
    resumed_attempts: int
    seconds: float


def is_url(source: str) -> bool:
    return urllib.parse.urlparse(source).scheme in ("http", "https")


def fetch_dump(
    source: str,
    download_dir: Path,
    *,
    checksums: str | None = None,
    max_attempts: int = 5,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> FetchedDump:
    """Make ``source`` (a path or an HTTP(S) URL) available as a local file and describe it."""
    started = time.perf_counter()
    name = Path(urllib.parse.urlparse(source).path).name if is_url(source) else Path(source).name
    expected = _expected_digest(checksums, name, timeout) if checksums else None
    algorithm = DIGESTS[len(expected)] if expected else "sha1"
    if not is_url(source):
        path = Path(source).expanduser()
        if not path.exists():
            raise DownloadError(f"dump not found: {path}")
        digest = _file_digest(path, algorithm) if path.is_file() else ""
        _verify(digest, expected, path)
        return FetchedDump(
            path, str(path), _size(path), digest, algorithm, bool(expected), False, 0,
            time.perf_counter() - started,
        )  # fmt: skip
    download_dir = download_dir / hashlib.sha256(source.encode()).hexdigest()[:16]
    download_dir.mkdir(parents=True, exist_ok=True)
    destination = download_dir / name
    validators = download_dir / SOURCE_FILE
    if destination.exists():
        digest = _file_digest(destination, algorithm)
        if digest == expected or (
            expected is None and _unchanged(source, _read_validators(validators, source), timeout)
        ):
            return FetchedDump(
                destination, source, destination.stat().st_size, digest, algorithm,
                bool(expected), False, 0, time.perf_counter() - started,
            )  # fmt: skip
        destination.unlink()
    partial = destination.with_name(destination.name + ".part")
    resumed = _download(source, partial, validators, max_attempts, timeout, progress)
    digest = _file_digest(partial, algorithm)
    try:
        _verify(digest, expected, partial)
    except DownloadError:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, destination)
    return FetchedDump(
        destination, source, destination.stat().st_size, digest, algorithm, bool(expected),
        True, resumed, time.perf_counter() - started,
    )  # fmt: skip


def _download(
    url: str,
    partial: Path,
    validators: Path,
    max_attempts: int,
    timeout: float,
    progress: Callable[[int, int | None], None] | None,
) -> int:
    """Fill ``partial`` with the whole resource; return how many range requests were honoured."""
    resumed = 0
    last_error: Exception | None = None
    for attempt in range(max_attempts):
        have = partial.stat().st_size if partial.exists() else 0
        request = urllib.request.Request(url, headers={"User-Agent": "chronoscope-dagster"})
        if have:
            request.add_header("Range", f"bytes={have}-")
            if known := _read_validators(validators, url):
                request.add_header("If-Range", known.get("etag") or known["last_modified"])
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                total = _total_size(response, have)
                if response.status == 206:
                    resumed += 1
                    mode = "ab"
                else:
                    have, mode = 0, "wb"
                    _write_validators(validators, url, response)
                with partial.open(mode) as out:
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        have += len(chunk)
                        if progress:
                            progress(have, total)
                if total is not None and have < total:
                    raise ConnectionError(f"connection closed at byte {have} of {total}")
                if total is not None and have > total:
                    partial.unlink()
                    raise ConnectionError(f"got {have} bytes, {total} announced; restarting")
                return resumed
        except urllib.error.HTTPError as error:
            if error.code == 416 and have:
                if _unsatisfied_total(error) == have:
                    return resumed
                partial.unlink()  # no proof the bytes on disk are the whole file
                last_error = error
                continue
            if error.code < 500 and error.code != 429:
                raise DownloadError(f"{url}: HTTP {error.code} {error.reason}") from error
            last_error = error
        except (http.client.HTTPException, urllib.error.URLError, OSError) as error:
            last_error = error
        time.sleep(min(2**attempt * 0.2, 10))
    raise DownloadError(f"{url}: gave up after {max_attempts} attempts: {last_error}")


def _total_size(response, offset: int) -> int | None:
    content_range = response.headers.get("Content-Range")
    if response.status == 206 and content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1]
        return int(total) if total.isdigit() else None
    length = response.headers.get("Content-Length")
    if length is None:
        return None
    return int(length) + (offset if response.status == 206 else 0)


SOURCE_FILE = "source.json"


def _unsatisfied_total(error: urllib.error.HTTPError) -> int | None:
    """The size a 416 gives in ``Content-Range: bytes */<size>``."""
    content_range = (error.headers.get("Content-Range") or "") if error.headers else ""
    total = content_range.rsplit("/", 1)[-1] if content_range.startswith("bytes */") else ""
    return int(total) if total.isdigit() else None


def _write_validators(path: Path, url: str, response) -> None:
    known = {
        "url": url,
        "etag": response.headers.get("ETag"),
        "last_modified": response.headers.get("Last-Modified"),
    }
    path.write_text(json.dumps(known, indent=2) + "\n")


def _read_validators(path: Path, url: str) -> dict[str, str]:
    """The validators a download of ``url`` was made with, or {} when there are none."""
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if known.get("url") != url or not (known.get("etag") or known.get("last_modified")):
        return {}
    return known


def _unchanged(url: str, known: dict[str, str], timeout: float) -> bool:
    """Whether the server says (304) the resource is still what was downloaded."""
    if not known:
        return False
    request = urllib.request.Request(url, headers={"User-Agent": "chronoscope-dagster"})
    if known.get("etag"):
        request.add_header("If-None-Match", known["etag"])
    if known.get("last_modified"):
        request.add_header("If-Modified-Since", known["last_modified"])
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return False
    except urllib.error.HTTPError as error:
        return error.code == 304
    except (http.client.HTTPException, urllib.error.URLError, OSError):
        return False


def _expected_digest(checksums: str, name: str, timeout: float) -> str:
    if is_url(checksums):
        try:
            with urllib.request.urlopen(checksums, timeout=timeout) as response:
                text = response.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as error:
            raise DownloadError(f"cannot read checksum list {checksums}: {error}") from error
    else:
        try:
            text = Path(checksums).expanduser().read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise DownloadError(f"cannot read checksum list {checksums}: {error}") from error
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == name:
            digest = parts[0].lower()
            if len(digest) in DIGESTS and all(c in "0123456789abcdef" for c in digest):
                return digest
            raise DownloadError(
                f"checksum list {checksums}: malformed digest for {name}: {digest!r}"
            )
    raise DownloadError(f"checksum list {checksums} has no line for {name}")


def _verify(digest: str, expected: str | None, path: Path) -> None:
    if expected is not None and digest != expected:
        raise DownloadError(
            f"checksum mismatch for {path.name}: {DIGESTS[len(expected)]} is {digest}, "
            f"the checksum list says {expected}"
        )


def _file_digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size
