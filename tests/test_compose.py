"""The compose deployment on this machine: `docker compose up` of docker-compose.yml with the
host-network override, every service healthy, the embedded sample and a model evaluated
through the deployed webserver, a daemon restart and a `down`/`up` that lose nothing.

Starts a Docker engine when none runs (and stops it, by its pid, at the end); skips with the
engine's error when none can start. `.ci/run` runs it as its own step (`-m compose`)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chronoscope_dagster.evaluation.prompts import SETTINGS
from tests.conftest import SAMPLE_SETTINGS
from tests.deploy_helpers import (
    EVALUATION_ASSETS,
    REPOSITORY,
    RUN_DONE,
    backfill_done,
    failed_runs,
    graphql,
    http_ok,
    launch_backfill,
    materializations,
    model_runs,
    run_assets,
    staleness,
    wait_for,
)

pytestmark = pytest.mark.compose

ROOT = Path(__file__).resolve().parents[1]
ENGINE_LOG = Path("/var/tmp/chronoscope-dockerd.log")
BUILD_LOG = Path("/var/tmp/chronoscope-compose-build.log")
SERVICES = ("postgres", "code", "webserver", "daemon")
SAMPLE_ASSET_CONFIG = {"eval_sample": {}, "paraphrased_subset": {}}
"""The test session's evaluation sample and paraphrased subset, launched as one run (their
sizes are the settings file's, the deployment's $CHRONOSCOPE_SETTINGS)."""
SETTINGS_IN_CONTAINERS = "/opt/chronoscope/deploy/settings.yaml"
DUMP_IN_VOLUME = "/data/dumps/2025.json.gz"
BENCHMARK_SOURCES = [
    "wikidata_dump", "chain_import", "sample_settings", "paraphrase_settings", "probe_source",
    "probe_run_settings",
]  # fmt: skip
PUBLISH_DUMP = (
    "import os, shutil; from chronoscope_dagster.data import sample_dump_path; "
    f"os.makedirs('/data/dumps', exist_ok=True); "
    f"shutil.copy(sample_dump_path('{{year}}'), '{DUMP_IN_VOLUME}'); "
    f"os.utime('{DUMP_IN_VOLUME}', ({{mtime}}, {{mtime}}))"
)
"""The 2025 dump of the deployment is a file on its data volume (the settings file names it)."""
REPORTS = ["leaderboard", "report", "probe_report"]
TERMINATE = """mutation Stop($id: String!) { terminateRun(runId: $id) { __typename } }"""
REFERENCES = "  - {name: oracle, backend: oracle}\n  - {name: present_day, backend: present_day}\n"
# The embedded model with short answers: cached, and quick enough for CI on 2 cores.
LOCAL = (
    "  - {name: local, backend: local, model: smollm2-135m-instruct, max_new_tokens: 8,\n"
    "     options: {threads: 1, batch_size: 16}}\n"
)


def _run(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)


def _engine_answers() -> bool:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        return _run("docker", "info", timeout=20).returncode == 0
    return False


@pytest.fixture(scope="module")
def docker_engine() -> Iterator[None]:
    """A Docker engine: the running one, or dockerd started here (installed when missing,
    scripts/install_docker.sh) and stopped at the end by its pid."""
    installed = _run(str(ROOT / "scripts/install_docker.sh"), timeout=900)
    if installed.returncode != 0:
        pytest.skip(f"cannot install Docker: {installed.stderr.strip()[-2000:]}")
    if _engine_answers():
        yield
        return
    log = ENGINE_LOG.open("ab")
    engine = subprocess.Popen(
        ["dockerd"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 90
        while not _engine_answers():
            if engine.poll() is not None or time.monotonic() > deadline:
                tail = ENGINE_LOG.read_text(errors="replace")[-2000:]
                pytest.skip(f"the Docker engine did not start (see {ENGINE_LOG}):\n{tail}")
            time.sleep(1)
        yield
    finally:
        engine.terminate()
        try:
            engine.wait(timeout=60)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait()
        log.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Stack:
    """One compose project of the deployment, on the host's network."""

    files: list[str]
    env: dict[str, str]
    project: str
    registry: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.env['CHRONOSCOPE_UI_PORT']}"

    def compose(self, *args: str, timeout: float = 300) -> str:
        command = ["docker", "compose", "-p", self.project]
        for file in self.files:
            command += ["-f", file]
        done = _run(*command, *args, timeout=timeout, cwd=ROOT, env=self.env)
        assert done.returncode == 0, f"{' '.join(args)}: {done.stderr[-3000:]}"
        return done.stdout

    def healthy(self) -> bool:
        """Every service's container up with a healthy healthcheck (one `compose ps`)."""
        listed = self.compose("ps", "--all", "--format", "json").strip()
        if listed.startswith("["):  # Compose before 2.21: one array
            rows = json.loads(listed)
        else:  # one object a line
            rows = [json.loads(line) for line in listed.splitlines() if line.strip()]
        health = {row["Service"]: row.get("Health", "") for row in rows}
        return sorted(health) == sorted(SERVICES) and all(
            health[service] == "healthy" for service in SERVICES
        )

    def logs(self) -> str:
        """Why the newest failed runs failed, then the end of every service's log."""
        failures = failed_runs(self.url)
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            return failures + self.compose("logs", "--no-color", "--tail", "60", timeout=60)
        return failures

    def up(self) -> None:
        self.compose("up", "-d", timeout=600)
        wait_for(self.healthy, 300, "every service healthy", self.logs)
        wait_for(lambda: http_ok(f"{self.url}/server_info"), 60, "the webserver")

    def graphql(self, query: str, **variables) -> dict:
        return graphql(self.url, query, **variables)

    def exec_code(self, script: str) -> str:
        return self.compose("exec", "-T", "code", "python", "-c", script).strip()


@pytest.fixture(scope="module")
def stack(docker_engine, tmp_path_factory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("compose")
    registry = workdir / "models.yaml"
    registry.write_text("models: []\n")
    settings = workdir / "settings.yaml"
    settings.write_text(json.dumps({**SAMPLE_SETTINGS, "dumps": {"2025": DUMP_IN_VOLUME}}) + "\n")
    mounts = [
        f"{registry}:/opt/chronoscope/deploy/models.yaml:ro",
        f"{settings}:{SETTINGS_IN_CONTAINERS}:ro",
    ]
    (workdir / "registry.yml").write_text(
        "services:\n"
        + "".join(
            f"  {s}:\n    volumes: {json.dumps(mounts)}\n" for s in ("code", "webserver", "daemon")
        )
    )
    env = {
        **os.environ,
        "DAGSTER_POSTGRES_PASSWORD": secrets.token_urlsafe(16),
        "CHRONOSCOPE_PG_PORT": str(_free_port()),
        "CHRONOSCOPE_CODE_PORT": str(_free_port()),
        "CHRONOSCOPE_UI_PORT": str(_free_port()),
        "CHRONOSCOPE_SETTINGS": SETTINGS_IN_CONTAINERS,
    }
    started = time.monotonic()
    built = _run(str(ROOT / "scripts/compose_build.sh"), timeout=3000, cwd=ROOT, env=env)
    if built.returncode != 0:
        pytest.fail(f"the images did not build: {built.stderr[-4000:]}")
    BUILD_LOG.write_text(built.stderr)
    print(f"images built in {time.monotonic() - started:.0f} s (log: {BUILD_LOG})")
    files = [*built.stdout.split()[1::2], "docker-compose.host.yml", str(workdir / "registry.yml")]
    stack = Stack(files, env, f"chronoscope-test-{secrets.token_hex(4)}", registry)
    try:
        yield stack
    finally:
        with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
            stack.compose("down", "-v", "--remove-orphans", timeout=300)


def _launch(stack: Stack, job: str, assets: list[str] | None = None, tags=None) -> str:
    selector = {**REPOSITORY, "jobName": job}
    if assets is not None:
        selector["assetSelection"] = [{"path": [name]} for name in assets]
    launched = stack.graphql(
        """mutation Launch($params: ExecutionParams!) { launchRun(executionParams: $params) {
            __typename ... on LaunchRunSuccess { run { runId } }
            ... on PythonError { message } ... on InvalidSubsetError { message }
            ... on RunConfigValidationInvalid { errors { message } } } }""",
        params={
            "selector": selector,
            "runConfigData": {
                "ops": {
                    asset: {"config": config}
                    for asset, config in SAMPLE_ASSET_CONFIG.items()
                    if asset in (assets or [])
                }
            },
            "executionMetadata": {"tags": tags or []},
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _run_status(stack: Stack, run_id: str) -> str | None:
    status = stack.graphql(
        """query Run($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }""", id=run_id
    )["runOrError"]["status"]
    return status if status in RUN_DONE else None


def _main_assets(stack: Stack) -> list[str]:
    """The main job's assets but those that read model partitions (none is evaluated yet) and
    those launched with the small sample config."""
    nodes = stack.graphql("{ assetNodes { assetKey { path } jobNames } }")["assetNodes"]
    return [
        node["assetKey"]["path"][-1]
        for node in nodes
        if "chronoscope_main" in node["jobNames"]
        and node["assetKey"]["path"][-1] not in (*REPORTS, *SAMPLE_ASSET_CONFIG)
    ]


def _settled(stack: Stack, model: str, count: int) -> list[dict] | None:
    runs = model_runs(stack.url, model)
    if len(runs) < count or any(r["status"] not in RUN_DONE for r in runs):
        return None
    return runs


def _leaderboard_models(stack: Stack) -> list[str]:
    run = _launch(stack, "chronoscope_main", REPORTS)
    assert wait_for(lambda: _run_status(stack, run), 300, "the leaderboard", stack.logs) == (
        "SUCCESS"
    ), stack.logs()
    latest = max(materializations(stack.url, "leaderboard"), key=lambda e: float(e["timestamp"]))
    return json.loads(latest["metadata"]["models"])


def _terminate_probe_runs(stack: Stack, model: str) -> None:
    """The sensor's probe run of the embedded model probes every item (an hour on 2 cores):
    the test needs only the evaluation runs."""
    for run in model_runs(stack.url, model):
        if run["jobName"] == "probe_model" and run["status"] not in RUN_DONE:
            stack.graphql(TERMINATE, id=run["runId"])


@pytest.mark.timeout(3600)
def test_the_compose_stack_evaluates_models_and_survives_restarts(stack: Stack) -> None:
    unset = {k: v for k, v in stack.env.items() if k != "DAGSTER_POSTGRES_PASSWORD"}
    refused = _run(
        "docker", "compose", *(a for f in stack.files for a in ("-f", f)), "config", "-q",
        cwd=ROOT, env=unset,
    )  # fmt: skip
    assert refused.returncode != 0 and "DAGSTER_POSTGRES_PASSWORD" in refused.stderr, refused

    timings: dict[str, float] = {}
    started = time.monotonic()
    stack.up()
    timings["up"] = time.monotonic() - started

    stack.exec_code(PUBLISH_DUMP.format(year="2025", mtime=1_700_000_000))
    assert run_assets(stack.url, BENCHMARK_SOURCES) == "SUCCESS", stack.logs()
    backfill = launch_backfill(stack.url, _main_assets(stack), None, "the embedded sample")
    status = wait_for(
        lambda: backfill_done(stack.url, backfill), 900, "the sample pipeline", stack.logs
    )
    assert status == "COMPLETED_SUCCESS", stack.logs()
    subset = _launch(stack, "chronoscope_main", list(SAMPLE_ASSET_CONFIG))
    status = wait_for(
        lambda: _run_status(stack, subset),
        600,
        "the evaluation sample and the paraphrased subset",
        stack.logs,
    )
    assert status == "SUCCESS", stack.logs()
    timings["sample pipeline"] = time.monotonic() - started

    # A changed dump: the UI marks what it feeds stale, partition by partition, and a run of
    # the stale partition makes it fresh and what it feeds stale in turn.
    fresh = {"2024": ("FRESH", []), "2025": ("FRESH", [])}
    assert staleness(stack.url, "claims", ["2024", "2025"]) == fresh
    stack.exec_code(PUBLISH_DUMP.format(year="2022", mtime=1_700_000_100))
    assert run_assets(stack.url, ["wikidata_dump"]) == "SUCCESS", stack.logs()
    assert staleness(stack.url, "claims", ["2024", "2025"]) == {
        "2024": ("FRESH", []),
        "2025": ("STALE", ["wikidata_dump has a new data version"]),
    }
    assert run_assets(stack.url, ["claims", "labels", "lifespans"], "2025") == "SUCCESS"
    assert staleness(stack.url, "claims", ["2024", "2025"]) == fresh
    intervals = staleness(stack.url, "fact_intervals", ["2024", "2025"])
    assert intervals["2024"] == ("FRESH", []) and intervals["2025"][0] == "STALE", intervals
    timings["a changed dump"] = time.monotonic() - started

    stack.registry.write_text("models:\n" + REFERENCES)
    for model in ("oracle", "present_day"):
        runs = wait_for(
            lambda m=model: _settled(stack, m, len(SETTINGS) + 1),
            600,
            f"the sensor's runs of {model}",
            stack.logs,
        )
        assert {r["status"] for r in runs} == {"SUCCESS"}, (runs, stack.logs())
        assert len(runs) == len(SETTINGS) + 1, "every setting and the probe"
    assert _leaderboard_models(stack) == ["oracle", "present_day"]
    timings["reference systems"] = time.monotonic() - started

    # The sensor evaluates a model added to the mounted registry; the daemon is stopped while
    # its runs go on, and started again.
    stack.registry.write_text("models:\n" + REFERENCES + LOCAL)

    def local_run_started() -> dict | None:
        _terminate_probe_runs(stack, "local")
        runs = model_runs(stack.url, "local")
        return next(
            (r for r in runs if r["status"] == "STARTED" and r["jobName"] == "evaluate_model"),
            None,
        )

    interrupted = wait_for(local_run_started, 300, "a run of the added model", stack.logs, 2)
    # One setting is enough to show it (the embedded model takes minutes a setting here).
    for run in model_runs(stack.url, "local"):
        if run["runId"] != interrupted["runId"] and run["status"] not in RUN_DONE:
            stack.graphql(TERMINATE, id=run["runId"])
    stack.compose("stop", "daemon", timeout=120)
    time.sleep(10)
    stack.compose("start", "daemon", timeout=120)
    wait_for(stack.healthy, 120, "the daemon back", stack.logs)
    status = wait_for(
        lambda: _run_status(stack, interrupted["runId"]), 900, "the interrupted run", stack.logs
    )
    assert status in ("SUCCESS", "FAILURE"), status
    interrupted_status = status
    timings["added model"] = time.monotonic() - started

    # A re-launch completes from the response cache: no model call is repeated.
    [key] = [t["value"] for t in interrupted["tags"] if t["key"] == "dagster/partition"]
    keys = [key]
    backfill = launch_backfill(stack.url, EVALUATION_ASSETS, keys, "re-launch local")
    status = wait_for(lambda: backfill_done(stack.url, backfill), 900, "the re-launch", stack.logs)
    assert status == "COMPLETED_SUCCESS", stack.logs()
    for asset in ("predictions", "paraphrase_predictions"):
        latest: dict[str, dict] = {}
        for event in materializations(stack.url, asset, keys):
            if event["partition"] not in latest or float(event["timestamp"]) > float(
                latest[event["partition"]]["timestamp"]
            ):
                latest[event["partition"]] = event
        assert sorted(latest) == sorted(keys), latest
        for partition, event in latest.items():
            metadata = event["metadata"]
            if interrupted_status == "SUCCESS":
                assert metadata["backend_calls"] == 0, (asset, partition, metadata)
                assert metadata["cache_misses"] == 0, (asset, partition, metadata)
        # (the sample's paraphrased subset may keep no chain: then it asks nothing at all)
        assert sum(e["metadata"]["cache_hits"] for e in latest.values()) > 0 or (
            asset == "paraphrase_predictions"
        ), latest
    assert _leaderboard_models(stack) == ["local", "oracle", "present_day"]
    timings["re-launch from the cache"] = time.monotonic() - started

    # `down` without -v keeps the instance, the data and the response cache.
    count_cache = (
        "import sqlite3; print(sqlite3.connect('/data/cache/responses.sqlite')"
        ".execute('select count(*) from responses').fetchone()[0])"
    )
    cached = int(stack.exec_code(count_cache))
    assert cached > 0
    run_count = len(
        stack.graphql("{ runsOrError { ... on Runs { results { runId } } } }")["runsOrError"][
            "results"
        ]
    )
    stack.compose("down", timeout=300)
    stack.up()
    assert int(stack.exec_code(count_cache)) == cached
    assert stack.exec_code("import os; print(os.path.exists('/data/warehouse.duckdb'))")
    runs_after = stack.graphql("{ runsOrError { ... on Runs { results { runId } } } }")[
        "runsOrError"
    ]["results"]
    assert len(runs_after) == run_count
    assert len(materializations(stack.url, "metrics", keys)) >= 2 * len(keys)
    timings["down and up again"] = time.monotonic() - started
    print("compose test timings (s since up): " + ", ".join(
        f"{name} {seconds:.0f}" for name, seconds in timings.items()
    ))  # fmt: skip
