"""Screenshot the Dagster UI's asset graph on a materialized home with headless Chromium.

    .venv/bin/python scripts/screenshot_ui.py [--home .chronoscope] [--out-dir docs]
        [--page NAME=PATH ...]

Starts dagster-webserver on the home's instance (<home>/dagster, as `make run` and `make ui`
use it) on a free loopback port in its own process session, lets Chromium render the asset
graph, and stops the server by process group. Chromium comes from Debian's package
(installed when missing); no browser is downloaded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "asset-groups": "/asset-groups",
    "evaluation-group": "/locations/chronoscope_dagster.definitions/asset-groups/evaluation",
}
"""Default pages (docs/ui-<name>.png): the lineage of the asset groups, and one group's assets
with their latest materializations, partitions and checks."""
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default=str(ROOT / ".chronoscope"))
    parser.add_argument("--out-dir", default=str(ROOT / "docs"))
    parser.add_argument(
        "--page",
        action="append",
        metavar="NAME=PATH",
        help="a UI page to capture as ui-NAME.png (repeatable; default: "
        + ", ".join(f"{name}={path}" for name, path in PAGES.items())
        + ")",
    )
    parser.add_argument("--size", default="2000,1000", help="window width,height")
    parser.add_argument("--wait", type=int, default=30, help="seconds Chromium lets a page render")
    args = parser.parse_args()
    pages = dict(page.split("=", 1) for page in args.page) if args.page else PAGES
    home = Path(args.home).resolve()
    if not (home / "dagster").is_dir():
        sys.exit(f"no Dagster instance at {home / 'dagster'}; run `make run` first")
    chromium = shutil.which("chromium") or _install_chromium()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DAGSTER_HOME": str(home / "dagster"), "CHRONOSCOPE_HOME": str(home)}
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1",
         "-p", str(port), "-m", "chronoscope_dagster.definitions"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_until_up(f"http://127.0.0.1:{port}/server_info", timeout_s=120)
        _dismiss_welcome(port)
        out_dir = Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, path in pages.items():
            out = out_dir / f"ui-{name}.png"
            with tempfile.TemporaryDirectory() as profile:
                subprocess.run(
                    [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                     f"--window-size={args.size}", f"--virtual-time-budget={args.wait * 1000}",
                     f"--screenshot={out}", f"http://127.0.0.1:{port}{path}"],
                    check=True, capture_output=True, timeout=args.wait + 120,
                )  # fmt: skip
            print(f"{out} ({out.stat().st_size:,} bytes)")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    return 0


def _dismiss_welcome(port: int) -> None:
    """Mark the UI's first-visit community dialog as seen, as its Skip button does."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": "mutation { setNuxSeen }"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def _install_chromium() -> str:
    print("installing Debian's chromium", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "chromium"],
        check=True,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )
    return shutil.which("chromium") or sys.exit("chromium did not install")


def _wait_until_up(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as response:
            if response.status == 200:
                return
        time.sleep(1)
    sys.exit(f"the webserver did not answer {url} within {timeout_s:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
