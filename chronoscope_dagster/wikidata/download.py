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
validators it was downloaded with. A 206 answer must start at the byte asked
for and give the total size the download began with, or the partial file is
removed and the download starts again from byte 0: bytes are never appended at
the wrong place.

A dump URL may carry secrets (a signed URL's query string, ``user:password@``):
the credentials go in a Basic ``Authorization`` header that is not forwarded on
a redirect, and every message, file and result of this module names the URL as
``redact_url`` gives it.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chronoscope_dagster.files import atomic_write

CHUNK = 1 << 20
DIGESTS = {32: "md5", 40: "sha1", 64: "sha256"}
NAME_MAX = 255
PARTIAL_SUFFIX = ".part"
REDACTED = "<redacted>"
CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


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


class _RangeMismatch(Exception):
    """A 206 answer whose bytes are not the ones asked for."""


def is_url(source: str) -> bool:
    return urllib.parse.urlparse(source).scheme in ("http", "https")


def redact_url(url: str) -> str:
    """``url`` fit to log or store: scheme, host, port and path as they are; a query string,
    a fragment and a ``user:password@`` replaced by ``<redacted>``. A string with no scheme
    and host (a local path) is returned as it is."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return f"{REDACTED} (an unparseable URL)"
    if not (parts.scheme and parts.netloc):
        return url
    _, at, host = parts.netloc.rpartition("@")
    netloc = f"{REDACTED}@{host}" if at else host
    query = f"?{REDACTED}" if parts.query else ""
    fragment = f"#{REDACTED}" if parts.fragment else ""
    return f"{parts.scheme}://{netloc}{parts.path}{query}{fragment}"


def redact_text(text: str, url: str) -> str:
    """``text`` (an error's, which may quote the request) with ``url``'s secrets redacted."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return text
    for secret in (parts.query, parts.fragment, parts.netloc.rpartition("@")[0]):
        for form in {secret, urllib.parse.unquote(secret)}:
            if form:
                text = text.replace(form, REDACTED)
    return text


def url_file_name(url: str) -> str:
    """The file name the path of ``url`` ends in; ``ValueError`` where it ends in none."""
    name = urllib.parse.urlsplit(url).path.rpartition("/")[2]
    if urllib.parse.unquote(name) in ("", ".", ".."):
        raise ValueError(
            f"dump URL {redact_url(url)}: its path does not end in a file name (such as "
            ".../wikidata-20250101-all.json.gz), so there is no file to download it to"
        )
    if len(name.encode()) + len(PARTIAL_SUFFIX) > NAME_MAX:
        raise ValueError(
            f"dump URL {redact_url(url)}: the file name its path ends in is "
            f"{len(name.encode())} bytes long, more than a file system allows "
            f"({NAME_MAX - len(PARTIAL_SUFFIX)} with the download's {PARTIAL_SUFFIX} suffix)"
        )
    return name


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
    name = url_file_name(source) if is_url(source) else Path(source).name
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
                destination, redact_url(source), destination.stat().st_size, digest, algorithm,
                bool(expected), False, 0, time.perf_counter() - started,
            )  # fmt: skip
        destination.unlink()
    partial = destination.with_name(destination.name + PARTIAL_SUFFIX)
    resumed = _download(source, partial, validators, max_attempts, timeout, progress)
    digest = _file_digest(partial, algorithm)
    try:
        _verify(digest, expected, partial)
    except DownloadError:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, destination)
    return FetchedDump(
        destination, redact_url(source), destination.stat().st_size, digest, algorithm,
        bool(expected), True, resumed, time.perf_counter() - started,
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
        known = _read_validators(validators, url)
        request = url_request(url)
        if have:
            request.add_header("Range", f"bytes={have}-")
            if known:
                request.add_header("If-Range", known.get("etag") or known["last_modified"])
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                if response.status == 206:
                    total = _checked_range(response, have, known.get("bytes"))
                    resumed += have > 0
                    mode = "ab"
                else:
                    total = _total_size(response)
                    have, mode = 0, "wb"
                    _write_validators(validators, url, response, total)
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
        except _RangeMismatch as error:
            partial.unlink(missing_ok=True)
            last_error = error
        except urllib.error.HTTPError as error:
            if error.code == 416 and have:
                if _unsatisfied_total(error) == have:
                    return resumed
                partial.unlink()  # no proof the bytes on disk are the whole file
                last_error = error
                continue
            if error.code < 500 and error.code != 429:
                reason = redact_text(str(error.reason), url)
                raise DownloadError(f"{redact_url(url)}: HTTP {error.code} {reason}") from None
            last_error = error
        except (http.client.HTTPException, urllib.error.URLError, OSError) as error:
            last_error = error
        time.sleep(min(2**attempt * 0.2, 10))
    cause = redact_text(str(last_error), url)
    raise DownloadError(f"{redact_url(url)}: gave up after {max_attempts} attempts: {cause}")


def url_request(url: str, method: str = "GET") -> urllib.request.Request:
    """A request of ``url``. Credentials in it (``user:password@``) go in a Basic
    ``Authorization`` header that a redirect does not forward to another host."""
    parts = urllib.parse.urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    request = urllib.request.Request(
        parts._replace(netloc=host).geturl(),
        headers={"User-Agent": "chronoscope-dagster"},
        method=method,
    )
    if at:
        user, _, password = userinfo.partition(":")
        credentials = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
        token = base64.b64encode(credentials.encode()).decode()
        request.add_unredirected_header("Authorization", f"Basic {token}")
    return request


def _checked_range(response, have: int, known_total: object) -> int | None:
    """The total size a 206 answer to ``Range: bytes=<have>-`` announces (None where it says
    ``*``: then the size of the first answer, when known), or ``_RangeMismatch`` where its
    ``Content-Range`` is missing, does not start at ``have`` or gives another total."""
    content_range = (response.headers.get("Content-Range") or "").strip()
    match = CONTENT_RANGE.fullmatch(content_range)
    if match is None or int(match[1]) != have or int(match[2]) < have:
        raise _RangeMismatch(
            f"asked for bytes {have}- and the server answered 206 with Content-Range "
            f"{content_range or '(none)'}; restarting from byte 0"
        )
    total = int(match[3]) if match[3].isdigit() else None
    if isinstance(known_total, int) and total is not None and total != known_total:
        raise _RangeMismatch(
            f"Content-Range {content_range} gives a total of {total} bytes, the download "
            f"began as {known_total}; restarting from byte 0"
        )
    if total is None and isinstance(known_total, int):
        return known_total
    return total


def _total_size(response) -> int | None:
    length = response.headers.get("Content-Length") or ""
    return int(length) if length.isdigit() else None


SOURCE_FILE = "source.json"


def _unsatisfied_total(error: urllib.error.HTTPError) -> int | None:
    """The size a 416 gives in ``Content-Range: bytes */<size>``."""
    content_range = (error.headers.get("Content-Range") or "") if error.headers else ""
    total = content_range.rsplit("/", 1)[-1] if content_range.startswith("bytes */") else ""
    return int(total) if total.isdigit() else None


def _write_validators(path: Path, url: str, response, total: int | None) -> None:
    known = {
        "url": redact_url(url),
        "etag": response.headers.get("ETag"),
        "last_modified": response.headers.get("Last-Modified"),
        "bytes": total,
    }
    _save_validators(path, known)


def _save_validators(path: Path, known: dict) -> None:
    with atomic_write(path) as temporary:
        temporary.write_text(json.dumps(known, indent=2) + "\n")


def _read_validators(path: Path, url: str) -> dict:
    """The validators a download of ``url`` was made with, or {} when there are none. A file
    written before URLs were redacted is rewritten without the URL's secrets."""
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(known, dict) or known.get("url") not in (url, redact_url(url)):
        return {}
    if known["url"] != redact_url(url):
        known["url"] = redact_url(url)
        _save_validators(path, known)
    if not (known.get("etag") or known.get("last_modified")):
        return {}
    return known


def _unchanged(url: str, known: dict, timeout: float) -> bool:
    """Whether the server says (304) the resource is still what was downloaded."""
    if not known:
        return False
    request = url_request(url)
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
    listing = redact_url(checksums)
    if is_url(checksums):
        try:
            with urllib.request.urlopen(url_request(checksums), timeout=timeout) as response:
                text = response.read().decode("utf-8", "replace")
        except (http.client.HTTPException, urllib.error.URLError, OSError) as error:
            cause = redact_text(str(error), checksums)
            raise DownloadError(f"cannot read checksum list {listing}: {cause}") from None
    else:
        try:
            text = Path(checksums).expanduser().read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise DownloadError(f"cannot read checksum list {listing}: {error}") from error
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("*") == name:
            digest = parts[0].lower()
            if len(digest) in DIGESTS and all(c in "0123456789abcdef" for c in digest):
                return digest
            raise DownloadError(f"checksum list {listing}: malformed digest for {name}: {digest!r}")
    raise DownloadError(f"checksum list {listing} has no line for {name}")


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
