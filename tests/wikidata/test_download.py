"""fetch_dump against a real HTTP server on 127.0.0.1: resume, restarts, checksums, errors."""

from __future__ import annotations

import base64
import hashlib
import logging
import random
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chronoscope_dagster.wikidata.download import DownloadError, fetch_dump, redact_url

NAME = "wikidata-20250101-all.json.gz"
PAYLOAD = random.Random(1234).randbytes(3 * 1024 * 1024 + 517)
OTHER = b"another file of the mirror\n"


@dataclass
class ServerState:
    """What the handler serves and what it saw."""

    files: dict[str, bytes]
    cuts: list[int] = field(default_factory=list)
    honour_range: bool = True
    refuse_ranges: bool = False
    validators: bool = True
    range_from_zero: str | None = None
    """On a range request, answer 206 from byte 0 anyway: with the ``whole`` body and its
    total, the ``whole`` body and an unknown total (``whole_unknown_total``), or as many bytes
    as were asked for (``short``)."""
    failures: list[int] = field(default_factory=list)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    conditional: list[str] = field(default_factory=list)
    authorization: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, path: str) -> list[str | None]:
        with self.lock:
            return [header for seen_path, header in self.requests if seen_path == path]


class Handler(BaseHTTPRequestHandler):
    state: ServerState

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        state = self.server.state  # type: ignore[attr-defined]
        range_header = self.headers.get("Range")
        path = urllib.parse.urlsplit(self.path).path
        with state.lock:
            state.requests.append((path, range_header))
            if self.headers.get("Authorization"):
                state.authorization.append(self.headers["Authorization"])
            is_file = path.lstrip("/") in state.files
            failure = state.failures.pop(0) if is_file and state.failures else None
            cut = state.cuts.pop(0) if is_file and state.cuts else None
        if failure is not None:
            self.send_error(failure)
            return
        data = state.files.get(path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        etag = f'"{hashlib.md5(data).hexdigest()}"'
        if self.headers.get("If-None-Match"):
            with state.lock:
                state.conditional.append(self.headers["If-None-Match"])
            if state.validators and self.headers["If-None-Match"] == etag:
                self.send_response(304)
                self.end_headers()
                return
        if_range = self.headers.get("If-Range")
        if if_range and if_range != etag:
            range_header = None
        if range_header and state.refuse_ranges:
            self.send_response(416)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = 0
        if range_header and state.range_from_zero:
            self._answer_from_zero(data, range_header, etag, state.range_from_zero)
            return
        if range_header and state.honour_range:
            start = int(range_header.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        if state.validators:
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(body if cut is None else body[:cut])
        self.wfile.flush()

    def _answer_from_zero(self, data: bytes, range_header: str, etag: str, how: str) -> None:
        asked = len(data) - int(range_header.removeprefix("bytes=").split("-")[0])
        body = data[:asked] if how == "short" else data
        total = "*" if how == "whole_unknown_total" else str(len(data))
        self.send_response(206)
        self.send_header("Content-Range", f"bytes 0-{len(body) - 1}/{total}")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[tuple[str, ServerState]]:
    md5 = hashlib.md5(PAYLOAD).hexdigest()
    sha1 = hashlib.sha1(PAYLOAD).hexdigest()
    state = ServerState(
        files={
            NAME: PAYLOAD,
            "other.json.bz2": OTHER,
            "md5sums.txt": (
                f"{hashlib.md5(OTHER).hexdigest()}  other.json.bz2\n"
                f"{md5}  {NAME}\n"
                f"{'0' * 32}  {NAME}.extra\n"
            ).encode(),
            "sha1sums.txt": (
                f"{'f' * 40}  wikidata-20250101-lexemes.json.gz\n{sha1} *{NAME}\n"
            ).encode(),
        }
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _leftovers(directory: Path) -> list[str]:
    """The files a download left, in any URL's folder (its validators aside)."""
    found = directory.rglob("*") if directory.exists() else ()
    return sorted(p.name for p in found if p.is_file() and p.name != "source.json")


def _cached(directory: Path, url: str) -> Path:
    return directory / hashlib.sha256(url.encode()).hexdigest()[:16]


def test_plain_download(server, tmp_path):
    base, state = server
    calls: list[tuple[int, int | None]] = []
    fetched = fetch_dump(
        f"{base}/{NAME}", tmp_path / "dl", max_attempts=2, progress=lambda *a: calls.append(a)
    )
    assert fetched.path == _cached(tmp_path / "dl", f"{base}/{NAME}") / NAME
    assert fetched.path.read_bytes() == PAYLOAD
    assert fetched.bytes == len(PAYLOAD)
    assert fetched.checksum == hashlib.sha1(PAYLOAD).hexdigest()
    assert fetched.checksum_algorithm == "sha1"
    assert fetched.downloaded and not fetched.verified
    assert fetched.resumed_attempts == 0
    assert _leftovers(tmp_path / "dl") == [NAME]
    assert state.seen(f"/{NAME}") == [None]
    assert calls[-1] == (len(PAYLOAD), len(PAYLOAD))


def test_resumes_after_cut_connection(server, tmp_path):
    base, state = server
    state.cuts = [1_000_003, 700_001]
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=4, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert fetched.resumed_attempts == 2
    assert state.seen(f"/{NAME}") == [None, "bytes=1000003-", "bytes=1700004-"]
    assert _leftovers(tmp_path) == [NAME]


def test_cut_then_server_ignoring_range_restarts(server, tmp_path):
    base, state = server
    state.cuts = [1_234_567]
    state.honour_range = False
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=3, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert fetched.resumed_attempts == 0
    assert state.seen(f"/{NAME}") == [None, "bytes=1234567-"]
    assert _leftovers(tmp_path) == [NAME]


def test_interrupted_download_leaves_part_and_next_fetch_resumes(server, tmp_path):
    base, state = server
    state.cuts = [500_000]
    with pytest.raises(DownloadError, match="gave up after 1 attempts"):
        fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=1, timeout=10)
    assert _leftovers(tmp_path) == [f"{NAME}.part"]
    assert (_cached(tmp_path, f"{base}/{NAME}") / f"{NAME}.part").read_bytes() == PAYLOAD[:500_000]
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=1, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert fetched.resumed_attempts == 1
    assert state.seen(f"/{NAME}")[-1] == "bytes=500000-"
    assert _leftovers(tmp_path) == [NAME]


def test_server_error_is_retried(server, tmp_path):
    base, state = server
    state.failures = [503]
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=2, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert len(state.seen(f"/{NAME}")) == 2


@pytest.mark.parametrize(
    ("listing", "algorithm"), [("md5sums.txt", "md5"), ("sha1sums.txt", "sha1")]
)
def test_checksum_list_over_http(server, tmp_path, listing, algorithm):
    base, _ = server
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, checksums=f"{base}/{listing}")
    assert fetched.verified
    assert fetched.checksum_algorithm == algorithm
    assert fetched.checksum == hashlib.new(algorithm, PAYLOAD).hexdigest()
    assert fetched.path.read_bytes() == PAYLOAD


@pytest.mark.parametrize(
    ("listing", "algorithm"), [("md5sums.txt", "md5"), ("sha1sums.txt", "sha1")]
)
def test_checksum_list_as_local_file(server, tmp_path, listing, algorithm):
    base, state = server
    local = tmp_path / listing
    local.write_bytes(state.files[listing])
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path / "dl", checksums=str(local))
    assert fetched.verified
    assert fetched.checksum == hashlib.new(algorithm, PAYLOAD).hexdigest()
    assert state.seen(f"/{listing}") == []


def test_checksum_mismatch_removes_everything(server, tmp_path):
    base, state = server
    wrong = tmp_path / "md5sums.txt"
    wrong.write_text(f"{hashlib.md5(b'not the dump').hexdigest()}  {NAME}\n")
    with pytest.raises(DownloadError, match=NAME.replace(".", r"\.")) as error:
        fetch_dump(f"{base}/{NAME}", tmp_path / "dl", checksums=str(wrong))
    assert "checksum mismatch" in str(error.value)
    assert _leftovers(tmp_path / "dl") == []
    assert len(state.seen(f"/{NAME}")) == 1


def test_checksum_list_without_the_file(server, tmp_path):
    base, state = server
    listing = tmp_path / "md5sums.txt"
    listing.write_text(f"{hashlib.md5(OTHER).hexdigest()}  other.json.bz2\n")
    with pytest.raises(DownloadError, match="has no line for"):
        fetch_dump(f"{base}/{NAME}", tmp_path / "dl", checksums=str(listing))
    assert _leftovers(tmp_path / "dl") == []
    assert state.seen(f"/{NAME}") == []


def test_missing_checksum_list_url(server, tmp_path):
    base, _ = server
    with pytest.raises(DownloadError, match="cannot read checksum list"):
        fetch_dump(f"{base}/{NAME}", tmp_path, checksums=f"{base}/nope.txt")


def test_http_404_fails_without_retrying(server, tmp_path):
    base, state = server
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch_dump(f"{base}/missing.json.gz", tmp_path, max_attempts=3)
    assert len(state.seen("/missing.json.gz")) == 1
    assert _leftovers(tmp_path) == []


def test_existing_verified_destination_is_reused(server, tmp_path):
    base, state = server
    _cached(tmp_path, f"{base}/{NAME}").mkdir()
    (_cached(tmp_path, f"{base}/{NAME}") / NAME).write_bytes(PAYLOAD)
    listing = tmp_path / "sha1sums.txt"
    listing.write_bytes(state.files["sha1sums.txt"])
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, checksums=str(listing))
    assert not fetched.downloaded
    assert fetched.verified
    assert fetched.bytes == len(PAYLOAD)
    assert state.requests == []


def test_existing_destination_without_checksums_is_revalidated(server, tmp_path):
    base, state = server
    first = fetch_dump(f"{base}/{NAME}", tmp_path)
    again = fetch_dump(f"{base}/{NAME}", tmp_path)
    assert first.downloaded and not again.downloaded
    assert again.path == first.path and again.checksum == first.checksum
    assert state.conditional == [f'"{hashlib.md5(PAYLOAD).hexdigest()}"']
    assert len(state.seen(f"/{NAME}")) == 2


def test_cached_file_changed_on_the_server_is_downloaded_again(server, tmp_path):
    base, state = server
    fetch_dump(f"{base}/{NAME}", tmp_path)
    state.files[NAME] = PAYLOAD[::-1]
    again = fetch_dump(f"{base}/{NAME}", tmp_path)
    assert again.downloaded
    assert again.path.read_bytes() == PAYLOAD[::-1]


def test_different_url_with_the_same_file_name_is_downloaded(server, tmp_path):
    base, state = server
    state.files[f"mirror/{NAME}"] = PAYLOAD[: len(PAYLOAD) // 2]
    first = fetch_dump(f"{base}/{NAME}", tmp_path)
    other = fetch_dump(f"{base}/mirror/{NAME}", tmp_path)
    assert other.downloaded and other.path != first.path
    assert other.path.read_bytes() == PAYLOAD[: len(PAYLOAD) // 2]
    assert first.path.read_bytes() == PAYLOAD
    assert state.seen(f"/mirror/{NAME}") == [None]


def test_416_on_resume_without_proof_of_completeness_restarts(server, tmp_path):
    base, state = server
    state.cuts = [1_000_000]
    with pytest.raises(DownloadError):
        fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=1, timeout=10)
    state.refuse_ranges = True
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=3, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert state.seen(f"/{NAME}") == [None, "bytes=1000000-", None]


def test_416_naming_the_size_on_disk_completes_the_download(server, tmp_path):
    base, state = server
    directory = _cached(tmp_path, f"{base}/{NAME}")
    directory.mkdir()
    (directory / f"{NAME}.part").write_bytes(PAYLOAD)
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=2, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert state.seen(f"/{NAME}") == [f"bytes={len(PAYLOAD)}-"]


def test_missing_local_checksum_list_is_a_clear_error(server, tmp_path):
    base, _ = server
    with pytest.raises(DownloadError, match="cannot read checksum list"):
        fetch_dump(f"{base}/{NAME}", tmp_path, checksums=str(tmp_path / "md5sums.txt"))


def test_existing_destination_with_wrong_checksum_is_replaced(server, tmp_path):
    base, state = server
    _cached(tmp_path, f"{base}/{NAME}").mkdir()
    (_cached(tmp_path, f"{base}/{NAME}") / NAME).write_bytes(PAYLOAD[:1000])
    listing = tmp_path / "md5sums.txt"
    listing.write_bytes(state.files["md5sums.txt"])
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, checksums=str(listing))
    assert fetched.downloaded and fetched.verified
    assert fetched.path.read_bytes() == PAYLOAD
    assert state.seen(f"/{NAME}") == [None]


def test_local_path_is_returned_as_is(tmp_path):
    dump = tmp_path / "local.json.gz"
    dump.write_bytes(PAYLOAD[:4096])
    fetched = fetch_dump(str(dump), tmp_path / "unused")
    assert fetched.path == dump
    assert fetched.checksum == hashlib.sha1(PAYLOAD[:4096]).hexdigest()
    assert fetched.bytes == 4096
    assert not fetched.downloaded and not fetched.verified
    assert not (tmp_path / "unused").exists()
    listing = tmp_path / "md5sums.txt"
    listing.write_text(f"{hashlib.md5(PAYLOAD[:4096]).hexdigest()}  local.json.gz\n")
    verified = fetch_dump(str(dump), tmp_path, checksums=str(listing))
    assert verified.verified and verified.checksum_algorithm == "md5"
    listing.write_text(f"{'a' * 32}  local.json.gz\n")
    with pytest.raises(DownloadError, match=r"local\.json\.gz"):
        fetch_dump(str(dump), tmp_path, checksums=str(listing))
    assert dump.exists()


def test_missing_local_path(tmp_path):
    with pytest.raises(DownloadError, match="dump not found"):
        fetch_dump(str(tmp_path / "absent.json.gz"), tmp_path)


@pytest.mark.parametrize("how", ["whole", "whole_unknown_total", "short"])
def test_206_whose_content_range_starts_at_0_on_resume_is_never_appended(server, tmp_path, how):
    base, state = server
    state.cuts = [1_000_000]
    state.range_from_zero = how
    fetched = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=4, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD
    assert fetched.resumed_attempts == 0
    assert state.seen(f"/{NAME}") == [None, "bytes=1000000-", None]
    assert _leftovers(tmp_path) == [NAME]
    again = fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=1, timeout=10)
    assert not again.downloaded and again.path.read_bytes() == PAYLOAD


def test_206_whose_content_range_starts_at_0_never_completes_a_partial_file(server, tmp_path):
    base, state = server
    directory = _cached(tmp_path, f"{base}/{NAME}")
    directory.mkdir()
    (directory / f"{NAME}.part").write_bytes(PAYLOAD[:1_000_000])
    state.range_from_zero = "short"
    with pytest.raises(DownloadError, match="Content-Range"):
        fetch_dump(f"{base}/{NAME}", tmp_path, max_attempts=1, timeout=10)
    assert _leftovers(tmp_path) == []


SECRETS = ("secret123", "hunter2pw")


def _files_under(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


def test_signed_url_query_and_userinfo_never_reach_files_errors_or_logs(server, tmp_path, caplog):
    base, state = server
    caplog.set_level(logging.DEBUG)
    host = base.removeprefix("http://")
    signed = f"http://reader:hunter2pw@{host}/{NAME}?X-Amz-Signature=secret123&X-Amz-Expires=60"
    listing = f"{base}/md5sums.txt?X-Amz-Signature=secret123"
    target = tmp_path / "dl"
    fetched = fetch_dump(signed, target, checksums=listing, max_attempts=2, timeout=10)
    assert fetched.path.read_bytes() == PAYLOAD and fetched.verified
    assert fetched.source == f"http://<redacted>@{host}/{NAME}?<redacted>"
    assert state.authorization == ["Basic " + base64.b64encode(b"reader:hunter2pw").decode()]
    state.failures = [503]
    errors = []
    for url, attempts, listing_url in (
        (signed.replace(NAME, "missing.json.gz"), 3, None),
        (signed.replace(NAME, "other.json.bz2"), 1, None),
        (f"{signed} with a space", 1, None),
        (signed, 1, f"{base}/nope.txt?sig=secret123"),
        (signed.replace(NAME, "other.json.bz2"), 1, f"{base}/sha1sums.txt?sig=secret123"),
    ):
        with pytest.raises(DownloadError) as error:
            fetch_dump(url, target, checksums=listing_url, max_attempts=attempts, timeout=10)
        errors.append(error.value)
    texts = [repr(fetched), *(f"{e!r} {e.__cause__!r}" for e in errors)]
    texts += [path.read_bytes().decode("latin-1") for path in _files_under(target)]
    texts += [str(path) for path in target.rglob("*")]
    texts += [record.getMessage() for record in caplog.records]
    assert "<redacted>" in str(errors[0])
    leaks = [text[:200] for text in texts for secret in SECRETS if secret in text]
    assert leaks == []


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("https://u:p@h.example:8443/a/b.json.gz?sig=s#frag", "https://<redacted>@h.example:8443/a/b.json.gz?<redacted>#<redacted>"),
        ("https://h.example/a/b.json.gz?", "https://h.example/a/b.json.gz"),
        ("http://[::1]:80/x.json.gz?X-Amz-Signature=1", "http://[::1]:80/x.json.gz?<redacted>"),
        ("https://h.example/plain.json.gz", "https://h.example/plain.json.gz"),
        ("/data/dump.json.gz", "/data/dump.json.gz"),
    ],
)  # fmt: skip
def test_redact_url(url, redacted):
    assert redact_url(url) == redacted


@pytest.mark.parametrize(
    "path", ["/dumps/..", "/dumps/.", "/", "", "/dumps/", "/dumps/%2E%2E", f"/{'x' * 300}"]
)
def test_url_without_a_usable_file_name_is_a_clear_error_before_any_request(server, tmp_path, path):
    base, state = server
    url = f"{base}{path}?X-Amz-Signature=secret123"
    with pytest.raises(ValueError, match="file name") as error:
        fetch_dump(url, tmp_path / "dl", checksums=f"{base}/md5sums.txt")
    assert redact_url(url) in str(error.value) and "secret123" not in str(error.value)
    assert state.requests == []
    assert not (tmp_path / "dl").exists()
